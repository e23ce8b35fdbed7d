"""Isolation for Claw environments: confined file tools and the bubblewrap shell."""

from envcraft.sandbox.claw import ClawEnvironment

__all__ = ["ClawEnvironment"]
