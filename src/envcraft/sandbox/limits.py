"""Resource limits for sandboxed processes.

Limits are set hard (soft = hard), so nothing the agent runs can raise them again. Under
bubblewrap they are applied with ``prlimit`` to the sandbox's first process while it
waits before starting the command (see :mod:`envcraft.sandbox.launch`); in the unsafe
mode a bash ``ulimit`` prelude applies them. Either way no ``preexec_fn`` is needed,
which would be unsafe in a threaded host.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """What one sandboxed command may use; every field is a hard cap.

    ``max_timeout`` is the longest wall-clock timeout a ``shell`` call may ask for.
    ``memory_bytes`` bounds each process's address space (RLIMIT_AS), so the total is at
    most ``processes * memory_bytes``; ``tmp_bytes`` bounds the private ``/tmp`` (tmpfs,
    held in memory). ``output_bytes`` is per stream (stdout and stderr each).
    """

    max_timeout: float = 120.0
    cpu_seconds: int = 30
    memory_bytes: int = 1024 * MIB
    file_size_bytes: int = 64 * MIB
    processes: int = 64
    open_files: int = 256
    output_bytes: int = 64 * 1024
    tmp_bytes: int = 64 * MIB

    def rlimits(self) -> dict[str, int]:
        """``resource`` limit names (``RLIMIT_*``) and their values, soft = hard."""
        return {
            "RLIMIT_CPU": self.cpu_seconds,
            "RLIMIT_AS": self.memory_bytes,
            "RLIMIT_FSIZE": self.file_size_bytes,
            "RLIMIT_NOFILE": self.open_files,
            "RLIMIT_CORE": 0,
            "RLIMIT_NPROC": self.processes,
        }

    def ulimit_prelude(self, *, processes: bool = True) -> str:
        """A bash ``ulimit`` line setting these limits (soft = hard); exits 125 if refused.

        ``processes=False`` leaves RLIMIT_NPROC alone: outside a user namespace it counts
        every process of the host user, not just the sandbox's.
        """
        flags = [
            f"-t {self.cpu_seconds}",
            f"-v {self.memory_bytes // 1024}",
            f"-f {self.file_size_bytes // 1024}",
            f"-n {self.open_files}",
            "-c 0",
        ]
        if processes:
            flags.append(f"-u {self.processes}")
        return "ulimit " + " ".join(flags) + " || exit 125"
