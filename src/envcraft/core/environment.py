"""The ``Environment`` base class: documentation + tools + explicit state + transitions."""

from __future__ import annotations

import inspect
import logging
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator

from envcraft.core.clock import DEFAULT_BASE_TIME, Clock
from envcraft.core.errors import (
    INTERNAL_ERROR_MESSAGE,
    ErrorCategory,
    ToolFailure,
    error_result,
    is_error,
)
from envcraft.core.invariants import SKIP_INVARIANTS, check_all, invariants_of
from envcraft.core.phrasing import Entity, Job
from envcraft.core.repository import Repository
from envcraft.core.tool import TOOL_ATTR, ToolSpec, build_spec
from envcraft.core.tracking import track_fields
from envcraft.core.workspace import Workspace

if TYPE_CHECKING:
    from envcraft.core.package import EnvPackage

log = logging.getLogger("envcraft.tools")
# Not a tool (tool names are identifiers): the call that applies what the clock decided
# (:meth:`Environment.settle`), made only by the data engine's idle runs.
SETTLE_TOOL = "__envcraft_settle__"

Record = TypeVar("Record")


class StateModel(BaseModel):
    """Base for environment state models: unknown fields are refused, assignments checked.

    Non-finite floats are refused too: JSON has no NaN or infinity, so the persisted
    canonical form could not hold them. Once a session has loaded a state, assignments to
    its models are journaled (:mod:`envcraft.core.tracking`), so a failed call is undone and
    a successful one re-validated in O(what it touched). ``@invariant`` methods
    (:mod:`envcraft.core.invariants`) are item-by-item checks the session re-runs only where
    a call changed something.
    """

    __slots__ = ("_ec_frag", "_ec_parents", "_ec_tree")
    if TYPE_CHECKING:  # not pydantic private attributes: slots the session's tree fills in
        _ec_tree: Any
        _ec_parents: list[tuple[Any, Any]]
        _ec_frag: bytes | None
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            tree = self._ec_tree
        except AttributeError:
            tree = None
        if tree is not None and name in type(self).__pydantic_fields__:
            if tree.journal is None:
                tree.outside = True
            else:
                tree.journal.attr(self, name)
        super().__setattr__(name, value)
        if tree is not None:
            track_fields(self)  # validate_assignment may have swapped __dict__ for a plain dict

    def __delattr__(self, name: str) -> None:
        try:
            tree = self._ec_tree
        except AttributeError:
            tree = None
        if tree is not None and name in type(self).__pydantic_fields__:
            if tree.journal is None:
                tree.outside = True
            else:
                tree.journal.attr(self, name)
        super().__delattr__(name)

    @model_validator(mode="after")
    def _envcraft_invariants(self, info: ValidationInfo) -> StateModel:
        """Whole-model validation runs every ``@invariant`` over every item (a session that
        validates incrementally runs them itself and says so in the context)."""
        skip = isinstance(info.context, dict) and info.context.get(SKIP_INVARIANTS)
        if info.field_name is None and not skip and invariants_of(type(self)):
            check_all(self)
        return self


def misfiled(collection: Mapping[str, Any], id_field: str) -> list[str]:
    """Records filed under a key that is not their own id, as messages.

    State collections are ``dict[str, Entity]`` keyed by the entity's id, and tools look
    records up by either; a state model's validator calls this to refuse a state where the
    two disagree (a hand-edited or distractor-made S0, say) before any tool trips on it.
    """
    return [
        f"{key} holds {getattr(record, id_field)!r}"
        for key, record in collection.items()
        if getattr(record, id_field) != key
    ]


def dangling(owner: str, kind: str, ids: Iterable[str], known: Mapping[str, Any]) -> list[str]:
    """The links ``owner`` makes to records of ``kind`` that ``known`` does not hold, as messages.

    The companion of :func:`misfiled` in a state model's validator: a booking names its
    member, a trip its driver, and tools follow such links without looking, so a state where
    one dangles is refused when it loads (``dangling(b.booking_id, "member", [b.member_id],
    self.members)``).
    """
    return [f"{owner} refers to unknown {kind} {i!r}" for i in ids if i not in known]


@dataclass
class Initial:
    """An initial state ``S0``: the explicit state plus the workspace files (Claw)."""

    state: BaseModel
    files: dict[str, str] = field(default_factory=dict)


class Environment:
    """Subclass this, set ``State`` to a pydantic model and declare tools with ``@tool``.

    The runtime binds ``state``, ``data``, ``workspace`` and the action index before each
    call; tool code reads and mutates ``self.state`` and calls ``self.fail(...)`` for any
    failure. Never store mutable data anywhere else: only ``self.state`` is persisted.
    ``call_tool`` is the session's own door (locked, logged); system tools use it to serve
    domain-tool calls made from inside the sandboxed shell.
    """

    State: ClassVar[type[BaseModel]] = StateModel
    # A foreign object held live between calls instead of ``state`` (BFCL's classes): see
    # envcraft.core.statetree.LiveCodec. ``None``: the state is the ``State`` model itself.
    live_codec: ClassVar[Any] = None
    tools: ClassVar[dict[str, ToolSpec]] = {}
    package: ClassVar[EnvPackage | None] = None
    # How users name this environment's records (envcraft.core.phrasing): read by the data engine.
    entities: ClassVar[tuple[Entity, ...]] = ()
    # The work this desk exists for, each asked as one outcome (envcraft.core.phrasing.Job).
    jobs: ClassVar[tuple[Job, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        specs: dict[str, ToolSpec] = {}
        for klass in reversed(cls.__mro__):
            for name, member in vars(klass).items():
                if callable(member) and hasattr(member, TOOL_ATTR):
                    specs[name] = build_spec(name, member)
        cls.tools = specs

    def __init__(
        self,
        state: BaseModel | None,
        *,
        data: Repository | None = None,
        workspace: Workspace | None = None,
        clock: Clock | None = None,
        seed: int = 0,
    ) -> None:
        self._ec_tree: Any = None  # the session's change tracking, once a session binds this
        self._state_root: Any = state
        self.live: Any = None  # the live object of an environment with a ``live_codec``
        # During a call of such an environment: rebuilds the live object as it was before the call.
        self.live_before: Callable[[], Any] | None = None
        self.data = data or Repository(None)
        self._workspace = workspace
        self.clock = clock or Clock()
        self.seed = seed
        self.action_index = 0
        self.call_tool: Callable[[str, dict[str, Any] | None], dict[str, Any]] = self.invoke

    # -- what tool code uses ------------------------------------------------------------
    @property
    def state(self) -> Any:
        """The explicit state (a ``State`` model): read and mutate it in place."""
        return self._state_root

    @state.setter
    def state(self, value: Any) -> None:
        tree = self._ec_tree
        if tree is not None:
            if tree.journal is None:
                tree.outside = True
            else:
                tree.journal.replace_root(self, self._state_root)
        self._state_root = value

    @property
    def workspace(self) -> Workspace:
        if self._workspace is None:
            self.fail(ErrorCategory.INTERNAL_ERROR, "this environment has no workspace")
        return self._workspace

    def now(self) -> datetime:
        """Deterministic current time: ``base_time + tick * action_index``."""
        return self.clock.at(self.action_index)

    @property
    def rng(self) -> random.Random:
        """A random generator seeded by the session seed and the action index."""
        return random.Random(f"{self.seed}:{self.action_index}")

    def fail(self, category: ErrorCategory | str, message: str, **details: Any) -> NoReturn:
        """Abort the call with a structured error; the state is left as it was."""
        raise ToolFailure(category, message, **details)

    def lookup(self, records: Mapping[str, Record], key: str, noun: str, **details: Any) -> Record:
        """The record filed under ``key``, or the structured ``not_found`` error naming it.

        Every tool that takes an id needs this, and the error must say which kind of record is
        missing (``"no order 'ORD-9'"``) and carry the argument to fix (``order_id=...`` in
        ``details``), so the agent can correct its call instead of guessing.
        """
        record = records.get(key)
        if record is None:
            self.fail(ErrorCategory.NOT_FOUND, f"no {noun} '{key}'", **details)
        return record

    # -- class-level description ----------------------------------------------------------
    @classmethod
    def describe(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def openai_tools(cls) -> list[dict[str, Any]]:
        return [spec.openai_schema() for spec in cls.tools.values()]

    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """A seeded initial state; override to generate realistic entities and files.

        ``data`` is the repository to draw reference data from when the caller has one (an
        audit's copy); an override passes it to :meth:`repository` and takes its clock from
        :meth:`base_time`, so a generated world agrees with the package it ships in.
        """
        del seed, size, data
        return Initial(state=cls.State())

    @classmethod
    def repository(cls, data: Repository | None = None) -> Repository:
        """The reference data a generator reads: ``data`` if given, else the package's ``data/``
        (an empty repository for a class defined outside a package)."""
        if data is not None:
            return data
        return cls.package.data if cls.package is not None else Repository(None)

    @classmethod
    def base_time(cls) -> datetime:
        """The clock's start (``base_time`` in ``envcraft.toml``): the moment S0 describes, so
        generated timestamps lie before the first call's ``now()``."""
        return cls.package.clock.base_time if cls.package is not None else DEFAULT_BASE_TIME

    @classmethod
    def rule_violations(cls, state: Any, files: Mapping[str, str]) -> list[str]:
        """Semantic rules of this world that the State model does not enforce, as messages.

        ``state`` is an instance of the environment's ``State`` model. Checked on every initial
        state the data engine makes (with its look-alike records), never on each call: a rule
        here may be as costly as it needs to be ("a succeeded run holds no running job", "two
        classes never share a room at the same time"). Override to declare them; the default
        knows none.
        """
        del state, files
        return []

    @classmethod
    def leave_note(cls, initial: Initial, subject: str, text: str, seed: int) -> tuple[str, str] | None:
        """Add to ``initial`` (in place) a note a colleague left the user before the session
        starts, with this subject and text (a mail in the inbox, a memo on the desk), as a record
        the environment's own tools read; return its (collection, key), or None where this world
        holds no such notes (the default).

        The data engine uses it for cross-environment work: a colleague's note here names the
        record of another environment that the user's job acts on, so the agent must read it
        here to act there. The note must keep every rule of the world (its time before
        :meth:`base_time`, its author one of the world's own people)."""
        del initial, subject, text, seed
        return None

    @classmethod
    def recovery(
        cls, tool: str, args: dict[str, Any], result: dict[str, Any]
    ) -> list[tuple[str, dict[str, Any]]]:
        """The calls this environment's documentation asks for right after ``tool`` came back
        with ``result``, before anything else (a sink write that failed with a 503: seek back
        and replay the batch), as ``(tool, args)``; none by default. The data engine holds a run
        that makes them as correct as one that does not: the state they reach is no broken
        guard. Override to declare the documented recoveries of a world with faults."""
        del tool, args, result
        return []

    def settle(self) -> None:
        """Apply what the clock has decided by now (a request expired, a hold lapsed), for a world
        that applies such changes lazily, at its next write. The data engine calls it (as the
        call :data:`SETTLE_TOOL`) at the end of its idle runs, so that what the world does by
        itself while an agent only looks shows there, never as the agent's doing. Nothing by
        default: most worlds apply the clock at every call."""

    # -- dispatch ---------------------------------------------------------------------------
    def invoke(self, name: str, args: Any) -> dict[str, Any]:
        """Run one tool against the bound state. Never raises.

        On any failure the caller must discard ``self.state`` (it may be half-mutated);
        :class:`envcraft.core.session.Session` does this by restoring its last snapshot.
        """
        if name == SETTLE_TOOL:
            self.settle()
            return {"settled": True}
        spec = self.tools.get(name) if isinstance(name, str) else None
        if spec is None:
            return error_result(
                ErrorCategory.NOT_FOUND,
                f"unknown tool '{name}'; available: {', '.join(sorted(self.tools))}",
                tool=str(name),
                available=sorted(self.tools),
            )
        kwargs = spec.validate(args)
        if is_error(kwargs):
            return kwargs
        try:
            result = spec.function(self, **kwargs)
        except ToolFailure as failure:
            return failure.to_result()
        except Exception:
            log.exception("tool %s.%s raised", type(self).__name__, name)
            return error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=name)
        if not isinstance(result, dict):
            log.error("tool %s.%s returned %s, not a dict", type(self).__name__, name, type(result))
            return error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=name)
        return result
