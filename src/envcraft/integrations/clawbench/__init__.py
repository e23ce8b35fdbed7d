"""What the Claw benchmark importers share: the bare workspace environment their tasks run in.

PinchBench and Claw-Eval tasks have no domain state of their own: the agent works on files
in a workspace with the harness's system tools. Each imported task set gets a copy of one
tiny Claw package (no domain tools, an empty state) under ``OUT/envs/``.
"""
