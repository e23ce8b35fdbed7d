"""Hand-made S0s with broken links: what the per-record ``@invariant`` checks must refuse.

Shared by the env tests that prove the link checks kept the messages of the whole-state
validators they replaced (issue 19).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from envcraft.core.package import load_package


def refusal(env_id: str, mutate: Callable[[dict[str, Any]], None]) -> str:
    """The error loading a generated S0 of ``env_id`` after ``mutate`` broke it (fails if it loads)."""
    env_class = load_package(env_id).env_class
    data = env_class.generate(seed=0).state.model_dump()
    mutate(data)
    with pytest.raises(ValueError) as caught:
        env_class.State.model_validate(data)
    return str(caught.value)


def first(records: dict[str, Any], **where: Any) -> dict[str, Any]:
    """The first record whose fields equal ``where``."""
    return next(r for r in records.values() if all(r[k] == v for k, v in where.items()))


def refile(records: dict[str, Any], key: str, new_key: str) -> None:
    """File the record under ``key`` under ``new_key`` instead (a misfiled record)."""
    records[new_key] = records.pop(key)
