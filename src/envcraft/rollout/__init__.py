"""Agents on tasks: the rollout loop, built-in policies, many rollouts, evaluation and calibration.

``rollout(task, provider, config)`` plays one task in a fresh Episode and returns a
:class:`Trajectory`; ``run_rollouts(Job(tasks, k, concurrency), provider, out)`` plays many on
one event loop with a resumable trajectories file; ``evaluate`` adds the summary and report
that ``envcraft eval`` writes. ``open_model`` turns ``--model`` names (``oracle``, ``random``,
``smollm2`` or a server's model) into a provider.
"""

from envcraft.rollout.evaluate import evaluate
from envcraft.rollout.loop import RolloutConfig, Trajectory, rollout
from envcraft.rollout.models import open_model
from envcraft.rollout.policies import OracleProvider, RandomProvider, serve_policy
from envcraft.rollout.runner import Job, read_trajectories, run_rollouts

__all__ = [
    "Job",
    "OracleProvider",
    "RandomProvider",
    "RolloutConfig",
    "Trajectory",
    "evaluate",
    "open_model",
    "read_trajectories",
    "rollout",
    "run_rollouts",
    "serve_policy",
]
