"""PinchBench (github.com/pinchbench/skill) tasks as envcraft Claw tasks: ``envcraft import pinchbench``."""
