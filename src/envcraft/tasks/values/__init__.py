"""Argument values and JSON paths: what a user can say for a parameter, what output feeds it."""
