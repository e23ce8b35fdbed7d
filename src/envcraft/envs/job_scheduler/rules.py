"""Domain rules of :class:`~.env.JobScheduler`: what its tools check, compute and render.

Job scheduler (workflow DAGs, worker pools, retries with backoff). The tool surface and the
State live in ``env.py``; this module holds the logic tool bodies call (the S0 generator shares
it, so S0 is built by the same rules the tools enforce).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .env import Workflow


# Job statuses that never change again (a failed job is final only once its attempts are used up).
FINAL = frozenset({"succeeded", "skipped", "cancelled", "upstream_failed"})


# -- pure helpers -----------------------------------------------------------------------------
def _stable(*parts: object) -> int:
    """A process-independent hash (Python's hash() of str is salted per process)."""
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def _topo(wf: Workflow) -> list[str]:
    """Job names in dependency order (ties in declaration order; a cycle keeps declaration order)."""
    order: list[str] = []
    remaining = list(wf.jobs)
    while remaining:
        ready = next((n for n in remaining if all(dep in order for dep in wf.jobs[n].deps)), remaining[0])
        order.append(ready)
        remaining.remove(ready)
    return order


def _descendants(wf: Workflow, name: str) -> set[str]:
    found: set[str] = set()
    frontier = [name]
    while frontier:
        current = frontier.pop()
        for other, jd in wf.jobs.items():
            if current in jd.deps and other not in found:
                found.add(other)
                frontier.append(other)
    return found
