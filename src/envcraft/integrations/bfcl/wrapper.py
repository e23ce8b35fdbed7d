"""What a generated BFCL environment runs: each tool call runs BFCL's own method on the BFCL
instance the session keeps live between calls (:class:`BfclCodec`); the session turns it into
``self.state`` only when the state is asked for.

Results follow what BFCL's executor (``multi_turn_utils.execute_multi_turn_func_call``)
shows a model, so a verifier can compare them with the ground truth's results the way BFCL's
``response_checker`` does:

* a dict that JSON can hold is returned as is (BFCL shows ``json.dumps`` of it);
* anything else (``None`` from ``mkdir``, the list from ``get_user_tweets``, a dict JSON cannot
  hold) is ``{"bfcl_output": text}`` with BFCL's text for it (``str(value)``);
* BFCL's own failure answer ``{"error": "<message>"}``, when the method changed nothing, fails
  the call with that message (detail ``bfcl_error``; the category is guessed from the words of
  the message), so the runtime, the graph probes and the agent see a failure as a failure;
  BFCL shows ``json.dumps`` of the dict. When the method did change state before answering so,
  the dict is returned as is (a failure would roll the change back);
* a method that raises fails the call (``invalid_argument``, message ``str(exc)``, detail
  ``bfcl_exception``; BFCL shows ``"Error during execution: " + str(exc)``). Unlike BFCL, which
  keeps whatever the method changed before raising, the runtime rolls the state back.
"""

from __future__ import annotations

import json
import pickle
from collections import OrderedDict
from typing import Any

import orjson
from pydantic import BaseModel, Field

from envcraft.core.environment import Environment, Initial, StateModel
from envcraft.core.errors import ErrorCategory, is_error
from envcraft.core.repository import Repository, thaw
from envcraft.core.state import strict_copy
from envcraft.integrations.bfcl import shapes, state

OUTPUT_KEY = "bfcl_output"
SCENARIOS_FILE = "scenarios.json"


class BfclState(StateModel):
    """A BFCL instance's attributes: ``attributes`` (public, what BFCL's state checker compares)
    and ``private`` (what the methods also read), encoded by ``envcraft.integrations.bfcl.objgraph``."""

    attributes: dict[str, Any] = Field(default_factory=dict)
    private: dict[str, Any] = Field(default_factory=dict)


class BfclCodec:
    """Keeps the BFCL instance itself live between calls (see :mod:`envcraft.core.live`): the
    session decodes it from the state once, undoes a failed call by replaying the calls since
    its last pickle checkpoint, and encodes it into ``BfclState`` only when the state is asked for.

    The instances decoded from the same S0 (every rollout of a task starts from it) come from a
    small cache of their pickles.
    """

    def __init__(self, class_name: str) -> None:
        self.class_name = class_name
        self._opened: OrderedDict[bytes, bytes] = OrderedDict()

    def open(self, model: BaseModel) -> tuple[Any, bytes]:
        assert isinstance(model, BfclState)
        try:
            key = orjson.dumps([model.attributes, model.private], option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            key = None
        known = self._opened.get(key) if key is not None else None
        if known is not None:
            self._opened.move_to_end(key)  # type: ignore[arg-type]
            return pickle.loads(known), known
        instance = state.restore(self.class_name, {"attributes": model.attributes, "private": model.private})
        snapshot = self.snapshot(instance)
        if key is not None:
            self._opened[key] = snapshot
            if len(self._opened) > _OPENED_CACHE:
                self._opened.popitem(last=False)
        return instance, snapshot

    def dump(self, live: Any) -> dict[str, Any]:
        return state.instance_state(live)

    def snapshot(self, live: Any) -> bytes:
        return pickle.dumps(live, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, snapshot: bytes) -> Any:
        return pickle.loads(snapshot)


_OPENED_CACHE = 256


def call_bfcl(env: Environment, class_name: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run BFCL's ``class_name.tool`` on the live instance (or, for a package generated before
    live instances, on one resumed from ``env.state``)."""
    shape = shapes.shapes(class_name)[tool]
    if env.live is None:
        return _call_resumed(env, class_name, tool, args)
    try:
        value = getattr(env.live, tool)(**shapes.to_bfcl(shape, args))
    except Exception as exc:
        env.fail(ErrorCategory.INVALID_ARGUMENT, str(exc), bfcl_exception=type(exc).__name__)
    result = as_result(value)  # now, as BFCL does: a returned attribute may change later
    if is_bfcl_error(value) and _unchanged(env):
        env.fail(error_category(value["error"]), value["error"], bfcl_error=True)
    return result


def _unchanged(env: Environment) -> bool:
    """Did the running call leave the instance as it found it? (Rebuilt for this question only:
    BFCL answered with an error, and only an unchanged instance makes that a failed call.)"""
    if env.live_before is None:
        return False
    return bool(state.instance_state(env.live) == state.instance_state(env.live_before()))


def _call_resumed(env: Environment, class_name: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    shape = shapes.shapes(class_name)[tool]
    instance = state.restore(class_name, {"attributes": env.state.attributes, "private": env.state.private})
    try:
        value = getattr(instance, tool)(**shapes.to_bfcl(shape, args))
    except Exception as exc:
        env.fail(ErrorCategory.INVALID_ARGUMENT, str(exc), bfcl_exception=type(exc).__name__)
    result = as_result(value)
    encoded = state.instance_state(instance)
    if is_bfcl_error(value) and encoded == {"attributes": env.state.attributes, "private": env.state.private}:
        env.fail(error_category(value["error"]), value["error"], bfcl_error=True)
    env.state = BfclState.model_construct(attributes=encoded["attributes"], private=encoded["private"])
    return result


def is_bfcl_error(value: Any) -> bool:
    """BFCL's own failure answer: exactly ``{"error": "<message>"}``."""
    return type(value) is dict and set(value) == {"error"} and isinstance(value["error"], str)


def error_category(message: str) -> ErrorCategory:
    """A category for one of BFCL's error messages (metadata only: the message stays BFCL's)."""
    text = message.lower()
    for category, words in _CATEGORY_WORDS:
        if any(word in text for word in words):
            return category
    return ErrorCategory.INVALID_ARGUMENT


_CATEGORY_WORDS = (
    (ErrorCategory.PERMISSION_DENIED, ("not authenticated", "logged in", "access token", "token")),
    (ErrorCategory.NOT_FOUND, ("not found", "no such", "not registered")),
    (ErrorCategory.CONFLICT, ("already", "exists")),
    (ErrorCategory.INVALID_TRANSITION, ("before", "insufficient", "exceeded", "is closed", "not empty")),
)


def as_result(value: Any) -> dict[str, Any]:
    """A BFCL return value as a tool result (see the module docstring)."""
    if type(value) is dict and set(value) != {OUTPUT_KEY}:
        try:
            copied: dict[str, Any] = strict_copy(value)
        except (TypeError, ValueError):
            pass
        else:
            if not is_error(copied):  # {"error": {...}} would read as a failed call
                return copied
    return {OUTPUT_KEY: bfcl_text(value)}


def bfcl_text(value: Any) -> str:
    """The text BFCL's executor makes of a return value."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def default_initial(class_name: str, data: Repository | None, seed: int) -> Initial:
    """S0 for synthesis: one of BFCL's own scenarios for this class (``data/scenarios.json``,
    chosen by the seed), loaded by the class's ``_load_scenario``."""
    scenarios: list[dict[str, Any]] = [{}]
    if data is not None and SCENARIOS_FILE in data.files():
        scenarios = thaw(data.json(SCENARIOS_FILE)) or [{}]
    config = scenarios[seed % len(scenarios)]
    return Initial(state=BfclState(**state.initial_state(class_name, config, long_context=False)))
