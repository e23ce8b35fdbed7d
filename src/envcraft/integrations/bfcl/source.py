"""The one place that knows the installed BFCL: its classes, function docs, entries and ground truth.

BFCL ships as the ``bfcl-eval`` wheel, whose declared dependencies pull in every model
provider SDK. The modules used here import nothing beyond the standard library and
``mpmath`` (``MathAPI``), so the optional extra is installed without them::

    pip install --no-deps bfcl-eval==2026.3.23 mpmath

Only these BFCL modules are imported: ``constants.eval_config`` (data paths),
``constants.category_mapping``, ``constants.executable_backend_config`` (class registry),
``constants.default_prompts``, the class modules under ``func_source_code`` and, for the
parity check, ``eval_checker.multi_turn_eval.multi_turn_checker`` / ``multi_turn_utils``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

BFCL_VERSION = "2026.3.23"
INSTALL_HINT = f"pip install --no-deps bfcl-eval=={BFCL_VERSION} mpmath"
CATEGORIES = ("base", "long_context", "miss_func", "miss_param")
# The eight multi-turn backends (BFCL's CLASS_FILE_PATH_MAPPING also holds web search and
# memory backends, which belong to other categories and need network or model weights).
CLASSES = (
    "GorillaFileSystem",
    "MathAPI",
    "MessageAPI",
    "TwitterAPI",
    "TicketAPI",
    "TradingBot",
    "TravelAPI",
    "VehicleControlAPI",
)
ENV_PREFIX = "bfcl_"


class BfclUnavailable(RuntimeError):
    """bfcl-eval is not installed (or not the version this importer was checked against)."""


@dataclass
class Entry:
    """One BFCL multi-turn test entry joined with its ground truth."""

    id: str
    category: str
    turns: list[list[dict[str, Any]]]
    initial_config: dict[str, Any]
    involved_classes: list[str]
    ground_truth: list[list[str]]
    missed_function: dict[str, list[str]] = field(default_factory=dict)
    excluded_function: list[str] = field(default_factory=list)
    path: list[str] = field(default_factory=list)

    @property
    def long_context(self) -> bool:
        """BFCL's own rule (multi_turn_checker): the category name says it."""
        return "long_context" in self.category or "composite" in self.category

    def to_bfcl(self) -> dict[str, Any]:
        """The test entry as BFCL's checker takes it."""
        return {
            "id": self.id,
            "question": self.turns,
            "initial_config": self.initial_config,
            "involved_classes": self.involved_classes,
        }


def _module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise BfclUnavailable(
            f"bfcl-eval is not importable ({exc}); install it with: {INSTALL_HINT}"
        ) from None


def version() -> str:
    try:
        return importlib.metadata.version("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:
        raise BfclUnavailable(f"bfcl-eval is not installed; install it with: {INSTALL_HINT}") from None


def require() -> str:
    """The installed version, or ``BfclUnavailable`` when it is missing or not the checked one."""
    found = version()
    if found != BFCL_VERSION:
        raise BfclUnavailable(
            f"bfcl-eval {found} is installed; this importer needs {BFCL_VERSION}: {INSTALL_HINT}"
        )
    return found


def backend() -> ModuleType:
    """``bfcl_eval.constants.executable_backend_config``: class modules, stateless classes, doc files."""
    return _module("bfcl_eval.constants.executable_backend_config")


def _paths() -> ModuleType:
    return _module("bfcl_eval.constants.eval_config")


def bfcl_class(name: str) -> type:
    module = _module(backend().CLASS_FILE_PATH_MAPPING[name])
    cls: type = getattr(module, name)
    return cls


def class_module(name: str) -> ModuleType:
    return _module(backend().CLASS_FILE_PATH_MAPPING[name])


def is_stateless(name: str) -> bool:
    """BFCL never loads a scenario into these (``STATELESS_CLASSES``)."""
    return name in backend().STATELESS_CLASSES


def env_id(name: str) -> str:
    """``bfcl_<BFCL's module name>``, e.g. ``bfcl_gorilla_file_system``, ``bfcl_posting_api``."""
    return ENV_PREFIX + backend().CLASS_FILE_PATH_MAPPING[name].rsplit(".", 1)[-1]


def class_of_env(env: str) -> str:
    for name in CLASSES:
        if env_id(name) == env:
            return name
    raise KeyError(env)


@cache
def func_docs(name: str) -> tuple[dict[str, Any], ...]:
    """BFCL's function docs of one class, in file order (what BFCL shows a model)."""
    path = Path(_paths().MULTI_TURN_FUNC_DOC_PATH) / backend().MULTI_TURN_FUNC_DOC_FILE_MAPPING[name]
    return tuple(_jsonl(path))


def additional_function_prompt() -> str:
    """The user message BFCL sends on the turn that reveals a held-out function."""
    prompt: str = _module(
        "bfcl_eval.constants.default_prompts"
    ).DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
    return prompt


def load_entries(category: str) -> list[Entry]:
    """The entries of ``multi_turn_<category>`` with their ground truth, in file order."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown BFCL category {category!r}; known: {', '.join(CATEGORIES)}")
    prefix = _module("bfcl_eval.constants.category_mapping").VERSION_PREFIX
    paths = _paths()
    name = f"{prefix}_multi_turn_{category}.json"
    questions = _jsonl(Path(paths.PROMPT_PATH) / name)
    answers = {a["id"]: a["ground_truth"] for a in _jsonl(Path(paths.POSSIBLE_ANSWER_PATH) / name)}
    return [
        Entry(
            id=q["id"],
            category=q["id"].rsplit("_", 1)[0],
            turns=q["question"],
            initial_config=q["initial_config"],
            involved_classes=q["involved_classes"],
            ground_truth=answers[q["id"]],
            missed_function=q.get("missed_function", {}),
            excluded_function=q.get("excluded_function", []),
            path=q.get("path", []),
        )
        for q in questions
    ]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
