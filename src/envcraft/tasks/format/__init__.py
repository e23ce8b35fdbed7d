"""The task format: the Task model and task-set directories on disk."""
