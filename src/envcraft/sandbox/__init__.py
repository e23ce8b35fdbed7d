"""Isolation for Claw environments: confined file tools, the bubblewrap shell, untrusted code.

* :class:`ClawEnvironment` – the built-in system tools (``shell`` and the file tools).
* :class:`IsolatedWorker` / :func:`run_isolated` – run stdlib-only Python (verifiers,
  synthesized code) in a warm sandboxed worker.
* :class:`Limits` – what one sandboxed process may use.

``docs/architecture.md`` ("Sandbox") lists what a sandbox sees and the unsafe opt-in.
"""

from envcraft.sandbox.bwrap import SandboxUnavailable
from envcraft.sandbox.claw import ClawEnvironment
from envcraft.sandbox.isolated import IsolatedWorker, run_isolated
from envcraft.sandbox.limits import Limits

__all__ = ["ClawEnvironment", "IsolatedWorker", "Limits", "SandboxUnavailable", "run_isolated"]
