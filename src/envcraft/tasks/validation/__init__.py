"""Validating a task's verifier: mutations of the golden outcome, scripted adversarial agents."""
