"""Start the audit runner confined: the candidate's code never runs in the host process.

The sandbox is the runtime's own (``envcraft.sandbox``: bubblewrap namespaces with no
network, read-only system directories, a private size-capped ``/tmp``, resource limits set
before the program starts, ``--clearenv``). Into it go, read-only and under neutral paths:
the Python installation (``/opt/python``), the site-packages envcraft runs from
(``/opt/site/N``), envcraft's own source (``/opt/envcraft``), the candidate package
(``/candidate``) and, when it declares requirements, the wheels the host downloaded for it
(``/wheels``). Nothing else of the host: not its environment variables (the sandbox gets
an environment of its own), not the output directory, not other candidates.

Without bubblewrap the audit is refused, unless ``ENVCRAFT_SANDBOX=unsafe-subprocess``
opts into running the same program as a bare subprocess (still with a clean environment).
"""

from __future__ import annotations

import json
import os
import secrets
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import envcraft
from envcraft.sandbox.bwrap import (
    SEAL,
    SandboxUnavailable,
    environment_args,
    namespace_args,
    scratch_args,
    select_mode,
    system_mount_args,
)
from envcraft.sandbox.isolated import WORKER_LIMITS
from envcraft.sandbox.launch import Sandbox, start
from envcraft.sandbox.limits import MIB, Limits
from envcraft.sandbox.process import kill_group
from envcraft.synth.audit.findings import Finding, Stage, StageResult, stage_result

CANDIDATE = "/candidate"
WHEELS = "/wheels"
PYTHON_ROOT = "/opt/python"
SOURCE_ROOT = "/opt/envcraft"
# CPU time is bounded by the run's wall-clock timeout: the verifier worker the data engine
# starts inside sets its own (day-long) CPU cap, which a lower hard limit here would refuse.
AUDIT_LIMITS = Limits(
    cpu_seconds=WORKER_LIMITS.cpu_seconds,
    memory_bytes=4096 * MIB,
    file_size_bytes=256 * MIB,
    processes=64,
    open_files=1024,
    tmp_bytes=512 * MIB,
)
BOOT = (
    "import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
    "from envcraft.synth.audit.runner import main; main()"
)


@dataclass
class ConfinedRun:
    """What came back from one confined audit run."""

    stages: list[StageResult] = field(default_factory=list)
    error: str = ""  # the run itself failed (timeout, no sandbox, a crash before any report)
    sandbox: str = ""
    seconds: float = 0.0


def run_confined(
    package: Path,
    stages: Sequence[str],
    *,
    options: dict[str, Any] | None = None,
    requirements: list[str] | None = None,
    third_party: list[str] | None = None,
    wheels: Path | None = None,
    timeout: float = 600.0,
) -> ConfinedRun:
    """Run the sandbox stages of the audit over ``package``; never raises."""
    begun = time.monotonic()
    try:
        mode = select_mode()
    except SandboxUnavailable as exc:
        return ConfinedRun(error=str(exc), seconds=time.monotonic() - begun)
    nonce = secrets.token_hex(16)
    confined = mode.binary is not None
    paths = _python_paths(confined)
    job = {
        "nonce": nonce,
        "package": CANDIDATE if confined else str(package.resolve()),
        "stages": list(stages),
        "options": options or {},
        "requirements": requirements or [],
        "third_party": third_party or [],
        "wheels": (WHEELS if confined else str(wheels)) if wheels is not None else "",
        "boot": BOOT,
    }
    env = {
        "LANG": "C.UTF-8",
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "ENVCRAFT_SANDBOX": "unsafe-subprocess",  # inner sandboxes cannot nest: this one confines them
    }
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed below)
    try:
        if confined:
            env["LD_LIBRARY_PATH"] = f"{PYTHON_ROOT}/lib"
            argv = [*_binds(package, wheels), *SEAL, *environment_args(env), "--", *_python_argv(True, paths)]
            sandbox = start(
                mode.binary or "",
                argv,
                AUDIT_LIMITS,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        else:
            proc = subprocess.Popen(
                _python_argv(False, paths),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
                cwd=tempfile.gettempdir(),
                start_new_session=True,
            )
            sandbox = Sandbox(proc, None)
        run = _collect(sandbox, job, timeout, stderr)
    finally:
        stderr.close()
    run.sandbox = mode.label
    run.seconds = round(time.monotonic() - begun, 3)
    return run


def _python_paths(confined: bool) -> list[str]:
    """The import path the runner needs: envcraft's source and its site-packages."""
    source = str(Path(envcraft.__file__).resolve().parent.parent)
    sites = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    if not confined:
        return [source, *sites]
    return [SOURCE_ROOT, *(f"/opt/site/{i}" for i in range(len(sites)))]


def _binds(package: Path, wheels: Path | None) -> list[str]:
    source = Path(envcraft.__file__).resolve().parent.parent
    sites = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    args = [*namespace_args(), *system_mount_args(), *scratch_args(AUDIT_LIMITS.tmp_bytes)]
    args += ["--ro-bind", sys.base_prefix, PYTHON_ROOT, "--ro-bind", str(source), SOURCE_ROOT]
    for i, site in enumerate(sites):
        args += ["--ro-bind", site, f"/opt/site/{i}"]
    args += ["--ro-bind", str(package.resolve()), CANDIDATE, "--chdir", "/tmp"]
    if wheels is not None:
        args += ["--ro-bind", str(wheels.resolve()), WHEELS]
    return args


def _python_argv(confined: bool, paths: list[str]) -> list[str]:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    python = f"{PYTHON_ROOT}/bin/{version}" if confined else str(Path(sys.base_prefix) / "bin" / version)
    if not confined and not Path(python).exists():
        python = sys.executable
    return [python, "-P", "-s", "-B", "-c", BOOT, json.dumps(paths)]


def _collect(sandbox: Sandbox, job: dict[str, Any], timeout: float, stderr: IO[bytes]) -> ConfinedRun:
    proc = sandbox.proc
    assert proc.stdin is not None and proc.stdout is not None
    run = ConfinedRun()
    try:
        proc.stdin.write((json.dumps(job) + "\n").encode("utf-8"))
        proc.stdin.close()
    except OSError:
        pass
    deadline = time.monotonic() + timeout
    buffer = b""
    done = False
    fd = proc.stdout.fileno()
    while not done:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            run.error = f"the audit ran past its {timeout:g}s limit and was stopped"
            break
        if not select.select([fd], [], [], min(remaining, 1.0))[0]:
            if proc.poll() is not None:
                break
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            done = _accept(line, job["nonce"], run) or done
    kill_group(proc)
    proc.wait()
    proc.stdout.close()
    sandbox.release()
    if not done and not run.error:
        stderr.seek(0)
        tail = stderr.read().decode("utf-8", errors="replace").strip().splitlines()[-1:] or ["no output"]
        run.error = f"the audit process ended without a report (exit {proc.returncode}): {tail[0][:300]}"
    return run


def _accept(line: bytes, nonce: str, run: ConfinedRun) -> bool:
    """Take one protocol line; True once the runner says it is done."""
    try:
        message = json.loads(line)
    except ValueError:
        return False
    if not isinstance(message, dict) or message.get("nonce") != nonce:
        return False
    if "stage" in message:
        run.stages.append(StageResult.model_validate(message["stage"]))
    return bool(message.get("done"))


def failed_run(stage: Stage, run: ConfinedRun) -> StageResult:
    """The stage a confined run died in, as a failed stage with the reason."""
    return stage_result(stage, [Finding(stage=stage, code="sandbox", message=run.error)], run.seconds)
