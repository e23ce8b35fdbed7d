"""The world around the golden run: S0 distractors, facts in workspace files, files asked for."""
