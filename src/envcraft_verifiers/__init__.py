"""The envcraft taskset under the plain module name verifiers' loader imports (``envcraft-verifiers``).

verifiers resolves ``--env.taskset.id envcraft-verifiers`` to this module and takes the one
``Taskset`` and the one ``Env`` it exports; both live in :mod:`envcraft.integrations.verifiers`.
"""

from envcraft.integrations.verifiers import EnvcraftEnv, EnvcraftTaskset

__all__ = ["EnvcraftEnv", "EnvcraftTaskset"]
