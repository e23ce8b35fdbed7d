"""What a name in env.py refers to, and which modules and calls the contract forbids.

Names are resolved through the module's imports (``from datetime import datetime as dt``
makes ``dt.now`` mean ``datetime.datetime.now``), so aliasing does not hide a call.
"""

from __future__ import annotations

import ast

_BUILTINS = frozenset({"open", "eval", "exec", "compile", "__import__", "hash"})

FORBIDDEN_MODULES: dict[str, str] = {
    **dict.fromkeys(("subprocess", "multiprocessing", "pty", "pexpect"), "subprocess"),
    **dict.fromkeys(
        (
            "socket", "ssl", "urllib", "urllib.request", "urllib3", "http.client", "http.server",
            "requests", "httpx", "aiohttp", "ftplib", "smtplib", "poplib", "imaplib", "telnetlib",
            "xmlrpc", "websocket", "websockets", "paramiko", "grpc",
        ),
        "network",
    ),
}  # fmt: skip
ALLOWED_SUBMODULES = frozenset({"urllib.parse"})

_WALL_CLOCK = frozenset(
    {
        "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today",
        "datetime.date.today", "time.time", "time.time_ns", "time.monotonic", "time.monotonic_ns",
        "time.perf_counter", "time.perf_counter_ns", "time.process_time", "time.sleep",
    }
)  # fmt: skip
_WALL_CLOCK_WITHOUT_ARGS = frozenset({"time.localtime", "time.gmtime", "time.ctime", "time.asctime"})
_SEEDABLE = frozenset(
    {"random.Random", "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator"}
)
_RANDOM = frozenset({"uuid.uuid1", "uuid.uuid4", "os.urandom", "os.getrandom", "random.SystemRandom"})
_FILE_IO = frozenset(
    {
        "builtins.open", "io.open", "os.open", "os.fdopen", "os.remove", "os.unlink", "os.rename",
        "os.renames", "os.replace", "os.makedirs", "os.mkdir", "os.rmdir", "os.removedirs",
        "os.listdir", "os.scandir", "os.walk", "os.chmod", "os.chown", "os.truncate", "os.link",
        "os.symlink", "glob.glob", "glob.iglob",
    }
)  # fmt: skip
_FILE_IO_MODULES = ("shutil.", "tempfile.")
_PROCESS_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn", "asyncio.create_subprocess_")
_PROCESS = frozenset({"os.system", "os.popen", "os.fork", "os.forkpty", "os.kill", "os.killpg"})
_DYNAMIC = frozenset(
    {"builtins.eval", "builtins.exec", "builtins.compile", "builtins.__import__", "importlib.import_module"}
)
# Path-like methods that touch the file system when called on anything but the allowed doors.
PATH_IO_METHODS = frozenset(
    {
        "write_text", "write_bytes", "read_text", "read_bytes", "unlink", "mkdir", "rmdir", "touch",
        "iterdir", "symlink_to", "hardlink_to", "open",
    }
)  # fmt: skip


def import_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> qualified name for every import anywhere in the module."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def qualified_name(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """``a.b.c`` with its root resolved through imports; None for anything not a module path."""
    if isinstance(node, ast.Name):
        if node.id in aliases:
            return aliases[node.id]
        return f"builtins.{node.id}" if node.id in _BUILTINS else None
    if isinstance(node, ast.Attribute):
        base = qualified_name(node.value, aliases)
        return f"{base}.{node.attr}" if base else None
    return None


def forbidden_module(module: str) -> str | None:
    """The rule an imported module breaks (``subprocess`` / ``network``), if any."""
    parts = module.split(".")
    for depth in range(len(parts), 0, -1):
        prefix = ".".join(parts[:depth])
        if prefix in ALLOWED_SUBMODULES:
            return None
        if prefix in FORBIDDEN_MODULES:
            return FORBIDDEN_MODULES[prefix]
    return None


def classify_call(name: str, has_args: bool) -> tuple[str, str] | None:
    """``(rule, advice)`` for a forbidden call by qualified name, or None when it is allowed."""
    if name in _WALL_CLOCK or (name in _WALL_CLOCK_WITHOUT_ARGS and not has_args):
        return "wall-clock", "use self.now() (base_time + tick * action_index)"
    if name in _SEEDABLE:
        return None if has_args else ("unseeded-random", "pass a seed, or use self.rng")
    if name in _RANDOM or name.startswith(("random.", "secrets.", "numpy.random.")):
        return "unseeded-random", "use self.rng (seeded by the session seed and action index)"
    if name in _FILE_IO or name.startswith(_FILE_IO_MODULES):
        return "file-io", "use self.workspace for files and self.data for reference data"
    if name in _PROCESS or name.startswith(_PROCESS_PREFIXES):
        return "subprocess", "tool code must not start processes"
    if name in _DYNAMIC:
        return "dynamic-code", "tool code must not evaluate code at run time"
    if name == "builtins.hash":
        return "builtin-hash", "use hashlib for values that must be stable across processes"
    return None
