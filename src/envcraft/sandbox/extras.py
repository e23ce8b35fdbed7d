"""What an isolated job may see beyond the stdlib: read-only libraries and a scratch ``/workspace``.

envcraft's own verifiers are stdlib-only. An imported benchmark's grader may need more (a
Claw-Eval grader is built on pydantic models and reads the task's workspace at
``/workspace``), so a verifier source may declare, on its first line::

    # envcraft-sandbox: {"libraries": ["pydantic", "yaml"], "workspace": true}

``libraries`` are top-level packages of the Python envcraft runs from; the worker binds the
directories that hold them read-only (and puts them on the job's ``sys.path``), nothing else
of the host. ``workspace`` gives the job an empty, size-capped, writable ``/workspace`` and a
``python`` on its ``PATH``, as the benchmark's own sandbox has. Confinement is otherwise the
isolated worker's: no network, no host environment, no other host files.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

MARKER = "# envcraft-sandbox: "


@dataclass(frozen=True)
class Extras:
    libraries: tuple[str, ...] = ()
    workspace: bool = False

    def library_dirs(self) -> tuple[str, ...]:
        """The host directories that hold :attr:`libraries` (each once, in order)."""
        dirs: list[str] = []
        for name in self.libraries:
            spec = importlib.util.find_spec(name)
            if spec is None or spec.origin is None:
                raise ValueError(f"the verifier needs the library {name!r}, which is not installed")
            origin = Path(spec.origin)
            root = origin.parent.parent if origin.name == "__init__.py" else origin.parent
            if str(root) not in dirs:
                dirs.append(str(root))
        return tuple(dirs)


def declared_extras(source: str) -> Extras | None:
    """The :class:`Extras` a source declares on its first line, or None (a stdlib-only source)."""
    first = source.split("\n", 1)[0]
    if not first.startswith(MARKER):
        return None
    try:
        data = json.loads(first[len(MARKER) :])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    libraries = data.get("libraries") or []
    if not isinstance(libraries, list) or not all(isinstance(n, str) and n.isidentifier() for n in libraries):
        return None
    return Extras(tuple(libraries), bool(data.get("workspace")))


def marker(extras: Extras) -> str:
    """The first line that declares ``extras``."""
    return MARKER + json.dumps({"libraries": list(extras.libraries), "workspace": extras.workspace})
