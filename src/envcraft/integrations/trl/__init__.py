"""TRL (1.16) integration: envcraft tasks as ``GRPOTrainer(environment_factory=...)`` environments.

:func:`environments` and :func:`dataset_rows` (in :mod:`.environment`) are all a trainer
needs; :mod:`.smoke` is a complete GRPO run on a CPU with an offline policy. This package
imports neither TRL nor torch itself.
"""

from envcraft.integrations.trl.environment import END_TURN, EnvcraftEnvironment, dataset_rows, environments

__all__ = ["END_TURN", "EnvcraftEnvironment", "dataset_rows", "environments"]
