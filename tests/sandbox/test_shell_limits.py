"""Resource limits of the sandboxed shell: wall clock, processes, memory, files, output, /tmp.

Every limit is exercised for real with a tight :class:`Limits` so the tests stay fast.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from envcraft.core import Session
from envcraft.sandbox import Limits

from .conftest import make_claw, marker, processes_named, requires_bwrap

pytestmark = requires_bwrap

MIB = 1024 * 1024


def _gone(name: str, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while processes_named(name):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_timeout_kills_a_runaway_command(desk: Session) -> None:
    name = marker()
    started = time.monotonic()
    result = desk.call("shell", {"command": f"exec -a {name} sleep 100", "timeout": 1})
    assert time.monotonic() - started < 5
    assert result["timed_out"] is True
    assert result["exit_code"] == 137
    assert _gone(name)
    assert desk.actions()[-1]["tool"] == "shell"  # a timeout is an ordinary, logged result


def test_background_processes_die_with_the_command(desk: Session) -> None:
    name = marker()
    started = time.monotonic()
    result = desk.call("shell", {"command": f"(exec -a {name} sleep 100) & echo started", "timeout": 20})
    assert time.monotonic() - started < 5
    assert (result["stdout"], result["timed_out"]) == ("started\n", False)
    assert _gone(name)


def test_fork_bomb_is_bounded_and_ends_at_the_timeout(tmp_path: Path) -> None:
    shell = make_claw(Limits(processes=32), tmp_path / "ws")
    name = marker()
    results: list[dict[str, Any]] = []
    bomb = threading.Thread(
        target=lambda: results.append(shell(f": {name}; b() {{ b | b & }}; b; sleep 100", 3))
    )
    started = time.monotonic()
    bomb.start()
    peak = 0
    while bomb.is_alive():
        peak = max(peak, len(processes_named(name)))
        time.sleep(0.02)
    assert time.monotonic() - started < 10
    assert results[0]["timed_out"] is True
    assert 8 < peak <= 32 + 1  # the cap, plus bubblewrap's own monitor process outside it
    assert _gone(name)
    assert shell("echo alive")["stdout"] == "alive\n"


def test_process_count_is_capped(tmp_path: Path) -> None:
    shell = make_claw(Limits(processes=16), tmp_path / "ws")
    script = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    for _ in range(64):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(5)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError as exc:\n"
        "    print(n, exc.errno)\n"
    )
    result = shell(f"python3 -c '{script}'", timeout=20)
    forked, errno = result["stdout"].split()
    assert int(forked) < 16 and errno == "11", result  # EAGAIN


def test_memory_limit(tmp_path: Path) -> None:
    shell = make_claw(Limits(memory_bytes=256 * MIB), tmp_path / "ws")
    result = shell("python3 -c 'bytearray(1024 ** 3)'")
    assert result["exit_code"] != 0
    assert "MemoryError" in result["stderr"]


def test_file_size_limit(tmp_path: Path) -> None:
    shell = make_claw(Limits(file_size_bytes=1 * MIB), tmp_path / "ws")
    result = shell("head -c 5000000 /dev/zero > big.bin; echo status=$?")
    assert "status=0" not in result["stdout"]
    assert (tmp_path / "ws" / "big.bin").stat().st_size <= MIB


def test_cpu_limit(tmp_path: Path) -> None:
    shell = make_claw(Limits(cpu_seconds=1), tmp_path / "ws")
    result = shell("python3 -c 'while True: pass'; echo status=$?", timeout=20)
    assert result["timed_out"] is False
    assert "status=137" in result["stdout"] or "status=152" in result["stdout"], result  # SIGKILL / SIGXCPU


def test_tmp_is_size_capped(tmp_path: Path) -> None:
    shell = make_claw(Limits(tmp_bytes=1 * MIB), tmp_path / "ws")
    result = shell("head -c 3000000 /dev/zero > /tmp/fill; echo status=$?; du -k /tmp/fill | cut -f1")
    status, size_kib = result["stdout"].split()
    assert status != "status=0" and int(size_kib) <= 1024


def test_output_is_capped_and_marked(tmp_path: Path) -> None:
    shell = make_claw(Limits(output_bytes=1000), tmp_path / "ws")
    result = shell("yes envcraft | head -c 300000; yes err | head -c 5000 >&2; echo done > done.txt")
    assert result["truncated"] is True
    assert len(result["stdout"]) == 1000 and len(result["stderr"]) == 1000
    assert result["stdout"].startswith("envcraft\nenvcraft\n")
    assert (tmp_path / "ws" / "done.txt").read_text() == "done\n"  # the command still finished


def test_bad_arguments_are_refused(desk: Session) -> None:
    for args in (
        {"command": "  "},
        {"command": "true", "timeout": 0},
        {"command": "true", "timeout": 10_000},
        {"command": "echo " + "x" * 200_000},
    ):
        result = desk.call("shell", args)
        assert result["error"]["category"] == "invalid_argument", args
