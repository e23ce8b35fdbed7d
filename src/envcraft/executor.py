"""Where independent jobs run: this process, a local process pool, or a Ray cluster.

A job is a call ``fn(*args)`` of a module-level function with picklable arguments and a
picklable result (a data-engine shard, an eval rollout, a synthesis candidate). Every
executor runs the same jobs and returns the same results; only where they run differs, so a
command gets Ray by taking ``--executor ray`` and nothing else changes:

    with open_executor(kind, workers=workers, address=ray_address) as executor:
        for index, result in executor.run(fn, jobs):   # as each job finishes
            ...

* ``local`` (default): in this process for one worker (or one job), else a process pool of
  ``workers`` processes (forked where the platform allows).
* ``ray``: ``workers`` jobs in flight at a time, one CPU each. Without ``address`` a local Ray
  is started for the length of the ``with`` block; ``address`` (``auto``, ``ray://host:10001``,
  or ``$RAY_ADDRESS``) joins an existing cluster, whose nodes must have envcraft installed.
  Ray is an optional extra: ``pip install 'envcraft[ray]'``.

A job that raises stops the run: the exception reaches the caller and the pending jobs are
cancelled.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from envcraft.sandbox.process import die_with_parent

T = TypeVar("T")
EXECUTORS = ("local", "ray")


class ExecutorError(RuntimeError):
    """An executor that cannot start (unknown kind, Ray not installed or unreachable)."""


class Executor(Protocol):
    workers: int

    def run(self, fn: Callable[..., T], jobs: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, T]]:
        """Call ``fn(*job)`` for every job; yield ``(job index, result)`` as each one finishes."""
        ...


class LocalExecutor:
    """This process (one worker) or a local process pool."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)

    def run(self, fn: Callable[..., T], jobs: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, T]]:
        if self.workers == 1 or len(jobs) <= 1:
            for index, job in enumerate(jobs):
                yield index, fn(*job)
            return
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else None)
        # Workers get SIGKILL when this process dies (even by SIGKILL): no orphans holding our output.
        with ProcessPoolExecutor(
            max_workers=min(self.workers, len(jobs)),
            mp_context=context,
            initializer=die_with_parent,
            initargs=(os.getpid(),),
        ) as pool:
            index_of: dict[Future[T], int] = {pool.submit(fn, *job): i for i, job in enumerate(jobs)}
            pending = set(index_of)
            try:
                while pending:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        yield index_of[future], future.result()
            finally:
                for future in pending:
                    future.cancel()


class RayExecutor:
    """Jobs as Ray tasks of one CPU each, at most ``workers`` in flight."""

    def __init__(self, ray: Any, workers: int) -> None:
        self.ray = ray
        self.workers = max(1, workers)

    def run(self, fn: Callable[..., T], jobs: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, T]]:
        remote = self.ray.remote(num_cpus=1, max_retries=0)(_call)
        queue = list(enumerate(jobs))
        queue.reverse()
        in_flight: dict[Any, int] = {}
        try:
            while queue or in_flight:
                while queue and len(in_flight) < self.workers:
                    index, job = queue.pop()
                    in_flight[remote.remote(fn, *job)] = index
                done, _ = self.ray.wait(list(in_flight), num_returns=1)
                for ref in done:
                    yield in_flight.pop(ref), self.ray.get(ref)
        finally:
            for ref in in_flight:
                self.ray.cancel(ref, force=True)


def _call(fn: Callable[..., T], *args: Any) -> T:
    """The Ray task: ``fn`` travels as an argument (pickled by reference), so any importable
    callable works, builtins included."""
    return fn(*args)


@contextmanager
def open_executor(
    kind: str = "local", *, workers: int | None = None, address: str | None = None
) -> Iterator[Executor]:
    """The executor ``kind`` (one of :data:`EXECUTORS`) with ``workers`` workers (default: cores)."""
    if kind == "local":
        yield LocalExecutor(workers)
        return
    if kind != "ray":
        raise ExecutorError(f"unknown executor {kind!r}; choose one of {', '.join(EXECUTORS)}")
    try:
        import ray
    except ImportError:
        raise ExecutorError("--executor ray needs Ray: pip install 'envcraft[ray]'") from None
    address = address or os.environ.get("RAY_ADDRESS") or None
    started = not ray.is_initialized()
    if started:
        try:
            if address is None:
                cpus = max(1, workers or os.cpu_count() or 1)
                ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ExecutorError(f"cannot start Ray ({address or 'local'}): {reason}") from None
    total = int(ray.cluster_resources().get("CPU", 1))
    try:
        yield RayExecutor(ray, workers or total)
    finally:
        if started:
            ray.shutdown()
