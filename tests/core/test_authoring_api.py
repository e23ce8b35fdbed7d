"""What the base class gives every environment author: lookups, the package's data and clock."""

from __future__ import annotations

from datetime import datetime

import envcraft
from envcraft import Environment, Repository, StateModel, load_package
from envcraft.core.clock import DEFAULT_BASE_TIME


class Box(StateModel):
    name: str


class ShelfState(StateModel):
    boxes: dict[str, Box] = {}


class Shelf(Environment):
    """A shelf of boxes, defined outside any package."""

    State = ShelfState


def test_lookup_returns_the_record_or_the_structured_not_found() -> None:
    shelf = Shelf(ShelfState(boxes={"B-1": Box(name="tools")}))
    assert shelf.lookup(shelf.state.boxes, "B-1", "box", box_id="B-1").name == "tools"
    try:
        shelf.lookup(shelf.state.boxes, "B-9", "box", box_id="B-9")
    except envcraft.ToolFailure as failure:
        error = failure.to_result()["error"]
    else:
        raise AssertionError("lookup of a missing key did not fail")
    assert error == {"category": "not_found", "message": "no box 'B-9'", "box_id": "B-9"}


def test_a_class_outside_a_package_gets_an_empty_repository_and_the_default_clock() -> None:
    assert Shelf.base_time() == DEFAULT_BASE_TIME
    assert Shelf.repository().root is None
    given = Repository(None)
    assert Shelf.repository(given) is given


def test_a_packaged_environment_reads_its_own_data_and_base_time() -> None:
    env = load_package("returns_desk").env_class
    assert isinstance(env.base_time(), datetime)
    assert env.base_time() == load_package("returns_desk").clock.base_time
    assert env.repository().root == load_package("returns_desk").root / "data"


def test_every_public_name_of_the_package_resolves() -> None:
    for name in envcraft.__all__:
        assert getattr(envcraft, name) is not None, name
