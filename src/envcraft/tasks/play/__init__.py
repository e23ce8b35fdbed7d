"""Playing a task: an Episode's sessions, runs of calls, their outcome, the agent's system prompt."""
