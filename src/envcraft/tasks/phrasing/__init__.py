"""What the user says: an environment's names and goal phrases, and a task's user turns."""
