"""Claw-Eval (github.com/claw-eval/claw-eval): ``envcraft import claw-eval`` (inventory, skip reasons)."""
