"""Read-only access to an environment's immutable reference data (``data/``).

Values come back frozen (``MappingProxyType`` and tuples), so tool code cannot mutate
reference data by accident (paper Table 15, rule 3).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any


def freeze(value: Any) -> Any:
    """Recursively turn dicts into read-only mappings and lists into tuples."""
    if isinstance(value, dict):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Inverse of :func:`freeze`: plain dicts and lists, safe to copy into state."""
    if isinstance(value, MappingProxyType | dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value


class Repository:
    """The only reader of ``data/``; parsed files are cached per process."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._cache: dict[str, Any] = {}

    def _path(self, name: str) -> Path:
        rel = PurePosixPath(name)
        if self.root is None or rel.is_absolute() or ".." in rel.parts:
            raise FileNotFoundError(f"no reference data file {name!r}")
        path = self.root / rel
        if not path.is_file():
            raise FileNotFoundError(f"no reference data file {name!r}")
        return path

    def files(self) -> list[str]:
        if self.root is None or not self.root.is_dir():
            return []
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())

    def text(self, name: str) -> str:
        key = f"text:{name}"
        if key not in self._cache:
            self._cache[key] = self._path(name).read_text(encoding="utf-8")
        return str(self._cache[key])

    def json(self, name: str) -> Any:
        key = f"json:{name}"
        if key not in self._cache:
            self._cache[key] = freeze(json.loads(self.text(name)))
        return self._cache[key]

    def csv(self, name: str) -> tuple[MappingProxyType[str, str], ...]:
        key = f"csv:{name}"
        if key not in self._cache:
            rows = csv.DictReader(io.StringIO(self.text(name)))
            self._cache[key] = freeze(list(rows))
        return self._cache[key]
