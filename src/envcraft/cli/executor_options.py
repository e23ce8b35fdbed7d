"""The ``--executor`` / ``--ray-address`` options of every command with parallel jobs (wiring only).

A command adopts them with two parameters, and runs its jobs through
:func:`envcraft.executor.open_executor` (catching :class:`~envcraft.executor.ExecutorError`
for a one-line exit)::

    def eval_command(..., executor: ExecutorOption = "local", ray_address: RayAddressOption = None):
        check_executor(executor)
        with open_executor(executor, workers=workers, address=ray_address) as pool:
            for index, result in pool.run(rollout_job, jobs): ...
"""

from __future__ import annotations

from typing import Annotated

import typer

from envcraft.cli.output import die
from envcraft.executor import EXECUTORS

ExecutorOption = Annotated[
    str, typer.Option("--executor", help=f"Where jobs run: {' or '.join(EXECUTORS)} (Ray: envcraft[ray]).")
]
RayAddressOption = Annotated[
    str | None,
    typer.Option("--ray-address", help="Ray cluster to join (default: $RAY_ADDRESS, else a local Ray)."),
]


def check_executor(kind: str) -> None:
    """Exit 2 with a one-line reason on an unknown executor, before any work starts."""
    if kind not in EXECUTORS:
        die(f"unknown executor {kind!r}; choose one of {', '.join(EXECUTORS)}")
