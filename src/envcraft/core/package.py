"""Environment packages on disk: ``envcraft.toml`` + ``README.md`` + ``env.py`` + ``data/``.

See ``docs/architecture.md`` for the layout. A package may span several modules at its
root (``env.py`` tools and State, ``rules.py`` domain logic, ``generate.py`` S0, ...):
loading makes the directory a private Python package, imports ``env.py`` as its ``env``
module (siblings are reached with relative imports, ``from .rules import ...``) and finds
its single :class:`Environment` subclass (or the one the manifest names).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import tomllib
import traceback
import types
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from envcraft.core.clock import DEFAULT_BASE_TIME, Clock, parse_time
from envcraft.core.environment import Environment
from envcraft.core.repository import Repository

ENV_ID = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
BUILTIN_ROOT = Path(__file__).resolve().parent.parent / "envs"
ARCHETYPES = (
    "transactional_workspace",
    "cross_tool_pipeline",
    "human_agent_interaction",
    "async_event_trigger",
    "constraint_state_machine",
    "temporal_scheduling",
    "bilateral_matching",
    "workflow_orchestration",
    "stream_processing",
)


class PackageError(ValueError):
    """An environment package that cannot be loaded; the message says what to fix."""


class Manifest(BaseModel):
    """The ``envcraft.toml`` of an environment package."""

    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    kind: Literal["tool", "claw"]
    archetypes: list[str] = Field(default_factory=list)
    scenario: str = ""
    version: str = "0.1.0"
    base_time: datetime = DEFAULT_BASE_TIME
    tick_seconds: int = Field(default=60, ge=1)
    entry: str = ""  # class name in env.py; empty = the single Environment subclass
    # third-party distributions the code imports (PEP 508 lines); installed from wheels only
    requirements: list[str] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        if not ENV_ID.match(value):
            raise ValueError("id must match [a-z][a-z0-9_]{1,63}")
        return value

    @field_validator("archetypes")
    @classmethod
    def _known_archetypes(cls, value: list[str]) -> list[str]:
        unknown = [a for a in value if a not in ARCHETYPES]
        if unknown:
            raise ValueError(f"unknown archetypes {unknown}; known: {', '.join(ARCHETYPES)}")
        return value

    @field_validator("base_time", mode="before")
    @classmethod
    def _utc(cls, value: object) -> object:
        return parse_time(value) if isinstance(value, str | datetime) else value


@dataclass(frozen=True)
class EnvPackage:
    """A loaded environment package."""

    root: Path
    manifest: Manifest
    env_class: type[Environment]

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def kind(self) -> str:
        return self.manifest.kind

    @property
    def readme(self) -> str:
        path = self.root / "README.md"
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    @property
    def data(self) -> Repository:
        return _repository(self.root / "data")

    @property
    def workspace_template(self) -> dict[str, str]:
        base = self.root / "workspace"
        if not base.is_dir():
            return {}
        return {
            p.relative_to(base).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(base.rglob("*"))
            if p.is_file()
        }

    @property
    def skills(self) -> dict[str, Path]:
        base = self.root / "skills"
        if not base.is_dir():
            return {}
        return {p.parent.name: p for p in sorted(base.glob("*/SKILL.md"))}

    @property
    def clock(self) -> Clock:
        return Clock(self.manifest.base_time, timedelta(seconds=self.manifest.tick_seconds))


@cache
def _repository(root: Path) -> Repository:
    return Repository(root if root.is_dir() else None)


def read_manifest(root: Path) -> Manifest:
    path = root / "envcraft.toml"
    if not path.is_file():
        raise PackageError(f"{root}: no envcraft.toml")
    try:
        return Manifest.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise PackageError(f"{path}: {exc}") from None


_LOADED: dict[Path, EnvPackage] = {}
MODULE_PREFIX = "envcraft_env_"


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles a package module from source on every load, never through ``__pycache__``.

    A cached ``.pyc`` is keyed on (mtime in whole seconds, size), so an edit of the same
    size within the same second would reload stale code; packages are small to compile.
    """

    def get_code(self, fullname: str) -> types.CodeType:
        return self.source_to_code(self.get_data(self.path), self.path)


class _PackageFinder(importlib.abc.MetaPathFinder):
    """Finds the modules of loaded environment packages (``<package>.rules``) from source.

    Only the root's own ``*.py`` files are modules: ``data/`` and ``workspace/`` may hold
    Python files that are data, never code to import.
    """

    def __init__(self) -> None:
        self.roots: dict[str, Path] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        root = self.roots.get(package)
        if root is None or not name.isidentifier():
            return None
        source = root / f"{name}.py"
        if not source.is_file():
            return None
        return importlib.util.spec_from_file_location(
            fullname, source, loader=_SourceOnlyLoader(fullname, str(source))
        )


_FINDER = _PackageFinder()
sys.meta_path.insert(0, _FINDER)


def load_package(ref: str | Path, *, fresh: bool = False) -> EnvPackage:
    """Load a package by built-in id or by directory path (cached per directory).

    ``fresh=True`` re-imports every module of the package and replaces the cached package,
    for code that changed on disk (the linter, a synthesis repair loop).
    """
    root = resolve_ref(ref).resolve()
    if fresh or root not in _LOADED:
        _LOADED[root] = _load(root)
    return _LOADED[root]


def resolve_ref(ref: str | Path) -> Path:
    path = Path(ref)
    if (path / "envcraft.toml").is_file():
        return path
    if isinstance(ref, str) and ENV_ID.match(ref) and (BUILTIN_ROOT / ref / "envcraft.toml").is_file():
        return BUILTIN_ROOT / ref
    raise PackageError(f"no environment '{ref}' (not a built-in id nor a package directory)")


def package_modules(root: Path) -> list[str]:
    """The module names of a package: its root's ``*.py`` files, ``env`` first."""
    names = sorted(p.stem for p in root.glob("*.py") if p.stem.isidentifier())
    return sorted(names, key=lambda name: name != "env")


def _load(root: Path) -> EnvPackage:
    manifest = read_manifest(root)
    module_path = root / "env.py"
    if not module_path.is_file():
        raise PackageError(f"{root}: no env.py")
    package_name = f"{MODULE_PREFIX}{manifest.id}_{abs(hash(str(root))):x}"
    _forget(package_name)
    holder = types.ModuleType(package_name, f"environment package {manifest.id}")
    holder.__path__ = []  # a package whose modules only _PackageFinder finds
    holder.__package__ = package_name
    holder.__spec__ = importlib.machinery.ModuleSpec(package_name, None, is_package=True)
    sys.modules[package_name] = holder
    _FINDER.roots[package_name] = root
    module_name = f"{package_name}.env"
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        _forget(package_name)
        raise PackageError(f"{module_path}: import failed{_where(exc, root)}: {exc!r}") from exc
    env_class = _find_class(module, manifest, module_path)
    package = EnvPackage(root=root, manifest=manifest, env_class=env_class)
    env_class.package = package
    return package


def _where(exc: BaseException, root: Path) -> str:
    """`` at rules.py:12`` for the innermost frame of the package's own code, if any."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).parent == root]
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).parent == root:
        return f" at {Path(exc.filename).name}:{exc.lineno or 0}"
    return f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""


def _forget(package_name: str) -> None:
    """Drop a package's modules so the next import reads them from disk again."""
    for name in [n for n in sys.modules if n == package_name or n.startswith(package_name + ".")]:
        del sys.modules[name]
    _FINDER.roots.pop(package_name, None)


def _find_class(module: object, manifest: Manifest, path: Path) -> type[Environment]:
    candidates = {
        name: obj
        for name, obj in vars(module).items()
        if isinstance(obj, type)
        and issubclass(obj, Environment)
        and obj is not Environment
        and obj.__module__ == getattr(module, "__name__", None)
    }
    if manifest.entry:
        if manifest.entry not in candidates:
            raise PackageError(f"{path}: no Environment subclass named {manifest.entry}")
        return candidates[manifest.entry]
    if len(candidates) != 1:
        raise PackageError(
            f"{path}: expected one Environment subclass, found {sorted(candidates) or 'none'}; "
            "set 'entry' in envcraft.toml"
        )
    return next(iter(candidates.values()))


def builtin_ids() -> list[str]:
    """Ids of the environments shipped with envcraft."""
    return sorted(p.parent.name for p in BUILTIN_ROOT.glob("*/envcraft.toml"))
