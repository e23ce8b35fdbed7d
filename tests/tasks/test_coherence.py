"""One coherent job per task: ``tidy`` on real golden runs of a small environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envcraft.core import load_package
from envcraft.tasks.format.model import GoldenCall
from envcraft.tasks.golden.coherence import tidy
from envcraft.tasks.golden.run import GoldenRun, replay
from envcraft.tasks.graphs.graph import build_tool_graph

from .verify_support import COUNTER, write_package

LIGHTS_ENV = '''
from envcraft import Environment, StateModel, tool


class Room(StateModel):
    room_id: str
    light: str = "off"
    note: str = ""
    comments: list[str] = []


class LightsState(StateModel):
    rooms: dict[str, Room] = {}


class Lights(Environment):
    """Rooms whose lights are on or off, each with a note."""

    State = LightsState

    @tool(read_only=True)
    def get_room(self, room_id: str) -> dict:
        """Look at a room.

        Args:
            room_id: The room.

        Returns:
            The room.
        """
        return self.state.rooms[room_id].model_dump()

    @tool(goal="switch the light on in {room_id}")
    def turn_on(self, room_id: str) -> dict:
        """Switch a room's light on.

        Args:
            room_id: The room.

        Returns:
            The room.
        """
        self.state.rooms[room_id].light = "on"
        return {"room_id": room_id, "light": "on"}

    @tool(goal="switch the light off in {room_id}", undoes=["turn_on"])
    def turn_off(self, room_id: str) -> dict:
        """Switch a room's light off.

        Args:
            room_id: The room.

        Returns:
            The room.
        """
        self.state.rooms[room_id].light = "off"
        return {"room_id": room_id, "light": "off"}

    @tool(goal="note {note} on {room_id}")
    def set_note(self, room_id: str, note: str) -> dict:
        """Write a room's note.

        Args:
            room_id: The room.
            note: The note.

        Returns:
            The room.
        """
        self.state.rooms[room_id].note = note
        return {"room_id": room_id, "note": note}

    @tool(goal="add the comment {text} to {room_id}")
    def add_comment(self, room_id: str, text: str) -> dict:
        """Add a comment to a room.

        Args:
            room_id: The room.
            text: The comment.

        Returns:
            The room's comment count.
        """
        self.state.rooms[room_id].comments.append(text)
        return {"room_id": room_id, "comments": len(self.state.rooms[room_id].comments)}
'''

ROOMS = {
    "rooms": {
        "kitchen": {"room_id": "kitchen", "light": "off", "note": "", "comments": []},
        "hallway": {"room_id": "hallway", "light": "on", "note": "", "comments": []},
        "cellar": {"room_id": "cellar", "light": "off", "note": "", "comments": []},
    }
}


def played(
    package_dir: Path, initial: dict[str, Any], *calls: tuple[str, dict[str, Any]]
) -> tuple[GoldenRun, Any]:
    package = load_package(package_dir)
    packages = {package.id: package}
    golden = [GoldenCall(package.id, tool, args, {}, {}) for tool, args in calls]
    run = replay(golden, packages, {package.id: initial}, {})
    assert run is not None
    return run, (packages, {package.id: build_tool_graph(package)})


def lights(tmp_path: Path) -> Path:
    return write_package(tmp_path / "lights", "lights", "tool", LIGHTS_ENV)


def steps(run: GoldenRun | None) -> list[tuple[str, dict[str, Any]]]:
    assert run is not None
    return [(c.tool, c.args) for c in run.calls]


def test_a_request_whose_effect_already_held_is_left_out(tmp_path: Path) -> None:
    run, (packages, graphs) = played(
        lights(tmp_path),
        ROOMS,
        ("turn_on", {"room_id": "hallway"}),  # already on in S0: nothing to ask for
        ("set_note", {"room_id": "hallway", "note": "bulb replaced on Monday"}),
    )
    tidied, reason = tidy(run, packages, graphs)
    assert reason == "ok"
    assert steps(tidied) == [("set_note", {"room_id": "hallway", "note": "bulb replaced on Monday"})]


def test_a_chain_of_requests_that_all_held_already_is_rejected(tmp_path: Path) -> None:
    run, (packages, graphs) = played(lights(tmp_path), ROOMS, ("turn_on", {"room_id": "hallway"}))
    assert tidy(run, packages, graphs) == (None, "no_effect")


def test_lookups_nothing_uses_are_pruned_and_an_unrelated_step_is_cut(tmp_path: Path) -> None:
    run, (packages, graphs) = played(
        lights(tmp_path),
        ROOMS,
        ("get_room", {"room_id": "cellar"}),  # its answer feeds nothing
        ("turn_on", {"room_id": "kitchen"}),
        ("set_note", {"room_id": "kitchen", "note": "light left on for the cleaners"}),
        ("set_note", {"room_id": "cellar", "note": "damp in the corner again"}),  # another job
    )
    tidied, reason = tidy(run, packages, graphs)
    assert reason == "ok"
    assert steps(tidied) == [
        ("turn_on", {"room_id": "kitchen"}),
        ("set_note", {"room_id": "kitchen", "note": "light left on for the cleaners"}),
    ]


def test_a_deeper_job_leaves_an_unrelated_step_out_and_keeps_what_follows(tmp_path: Path) -> None:
    """With ``skip_gaps`` (a deeper corpus) a step on another record is left out, not the rest of
    the run cut: the later note on the kitchen still belongs to the kitchen's job."""
    run, (packages, graphs) = played(
        lights(tmp_path),
        ROOMS,
        ("turn_on", {"room_id": "kitchen"}),
        ("set_note", {"room_id": "cellar", "note": "damp in the corner again"}),  # another job
        ("set_note", {"room_id": "kitchen", "note": "light left on for the cleaners"}),
    )
    assert steps(tidy(run, packages, graphs)[0]) == [("turn_on", {"room_id": "kitchen"})]
    tidied, reason = tidy(run, packages, graphs, skip_gaps=True)
    assert reason == "ok"
    assert steps(tidied) == [
        ("turn_on", {"room_id": "kitchen"}),
        ("set_note", {"room_id": "kitchen", "note": "light left on for the cleaners"}),
    ]


def test_a_step_that_undoes_an_earlier_one_rejects_the_chain(tmp_path: Path) -> None:
    run, (packages, graphs) = played(
        lights(tmp_path), ROOMS, ("turn_on", {"room_id": "kitchen"}), ("turn_off", {"room_id": "kitchen"})
    )
    assert tidy(run, packages, graphs) == (None, "undo")


def test_a_voiding_step_on_a_record_an_earlier_step_changed_rejects_the_chain() -> None:
    """A series booked for a member, then one of its classes cancelled (two default-run tasks
    asked exactly that): the cancel voids what the booking made, by way of its result."""
    package = load_package("class_booking")
    state = package.env_class.generate(seed=0, data=package.data).state.model_dump(mode="json")
    packages, graphs = {"class_booking": package}, {"class_booking": build_tool_graph(package)}
    for series, member in ((s, m) for s in state["series"] for m in state["members"]):
        book = GoldenCall("class_booking", "book_series", {"member_id": member, "series_id": series}, {}, {})
        booked = replay([book], packages, {"class_booking": state}, {})
        made = booked.calls[0].result.get("booked") if booked is not None else None
        if made:
            break
    else:
        raise AssertionError("no series books anyone in S0")
    session = made[0]["session_id"]
    calls = [
        GoldenCall("class_booking", "book_series", {"member_id": member, "series_id": series}, {}, {}),
        GoldenCall(
            "class_booking", "cancel_class", {"session_id": session, "reason": "plans changed"}, {}, {}
        ),
    ]
    run = replay(calls, packages, {"class_booking": state}, {})
    assert run is not None and all(c.ok for c in run.calls)
    assert tidy(run, packages, graphs) == (None, "undo")


def test_a_step_undone_then_made_again_as_it_was_rejects_the_chain_and_a_move_does_not() -> None:
    """A deep-run task (round 7) asked to cancel a member's booking for a class, then to book
    the member into that same class: nobody wants that. Booking them into another class after
    the cancel is a move, a job people do."""
    package = load_package("class_booking")
    state = package.env_class.generate(seed=0, data=package.data).state.model_dump(mode="json")
    packages, graphs = {"class_booking": package}, {"class_booking": build_tool_graph(package)}

    def played(booking_id: str, session_id: str) -> GoldenRun | None:
        member = state["bookings"][booking_id]["member_id"]
        run = replay(
            [
                GoldenCall("class_booking", "cancel_booking", {"booking_id": booking_id}, {}, {}),
                GoldenCall(
                    "class_booking", "book_class", {"member_id": member, "session_id": session_id}, {}, {}
                ),
            ],
            packages,
            {"class_booking": state},
            {},
        )
        return run if run is not None and all(c.ok for c in run.calls) else None

    booked = [k for k, b in state["bookings"].items() if b["status"] == "booked"]
    again = next(run for k in booked if (run := played(k, state["bookings"][k]["session_id"])))
    assert again.calls[0].args["booking_id"] != again.calls[1].result.get("booking_id")
    assert tidy(again, packages, graphs) == (None, "undo")
    moves = [
        run
        for k in booked[:6]
        for other in list(state["sessions"])[:10]
        if other != state["bookings"][k]["session_id"] and (run := played(k, other))
    ]
    assert moves and all(tidy(run, packages, graphs)[1] != "undo" for run in moves)


def test_rewriting_text_an_earlier_step_wrote_is_an_undo(tmp_path: Path) -> None:
    run, (packages, graphs) = played(
        lights(tmp_path),
        ROOMS,
        ("set_note", {"room_id": "cellar", "note": "damp in the corner again"}),
        ("set_note", {"room_id": "cellar", "note": "dry now after the repair"}),
    )
    assert tidy(run, packages, graphs) == (None, "undo")


def test_the_same_request_twice_rejects_the_chain() -> None:
    run, (packages, graphs) = played(
        COUNTER,
        {"counters": {"visits": 3}},
        ("increment", {"name": "visits"}),
        ("increment", {"name": "visits"}),
    )
    assert tidy(run, packages, graphs) == (None, "repeat")
    # salvage (a deeper corpus) keeps the first request as the job
    assert steps(tidy(run, packages, graphs, salvage=True)[0]) == [("increment", {"name": "visits"})]


def test_the_same_request_on_the_same_record_in_other_words_rejects_the_chain(tmp_path: Path) -> None:
    run, (packages, graphs) = played(
        lights(tmp_path),
        ROOMS,
        ("add_comment", {"room_id": "kitchen", "text": "Tap drips; plumber booked for Tuesday."}),
        ("add_comment", {"room_id": "kitchen", "text": "Tap drips."}),  # the same comment again, shorter
    )
    assert tidy(run, packages, graphs) == (None, "repeat")


def test_the_same_act_on_what_it_just_made_rejects_the_chain() -> None:
    """Round 51: "Pass that message on to Operations ..." then "draft a forward of the message you
    created to the same address as before". Forwarding the new forward to another address is a
    job people do."""
    package = load_package("mail_triage")
    world = package.env_class.generate(seed=1, data=package.data)
    state = world.state.model_dump(mode="json")
    packages, graphs = {"mail_triage": package}, {"mail_triage": build_tool_graph(package)}
    message = next(iter(state["messages"]))

    def forwarded(first: str, second: str) -> GoldenRun:
        forward = GoldenCall("mail_triage", "draft_forward", {"message_id": message, "to": [first]}, {}, {})
        made = replay([forward], packages, {"mail_triage": state}, world.files)
        assert made is not None and made.calls[0].ok
        draft = made.calls[0].result["draft_id"]
        send = GoldenCall("mail_triage", "send_draft", {"draft_id": draft}, {}, {})
        again = GoldenCall("mail_triage", "draft_forward", {"message_id": draft, "to": [second]}, {}, {})
        run = replay([forward, send, again], packages, {"mail_triage": state}, world.files)
        assert run is not None and all(c.ok for c in run.calls), run and [c.result for c in run.calls]
        return run

    ops, finance = "Operations <ops@northwind.example>", "Finance <finance@northwind.example>"
    assert tidy(forwarded(ops, ops), packages, graphs) == (None, "repeat")
    assert tidy(forwarded(ops, finance), packages, graphs)[1] == "ok"


def test_salvage_keeps_the_job_up_to_the_step_that_takes_it_back_or_repeats_it(tmp_path: Path) -> None:
    """The walk went on past a job: with ``salvage`` (a deeper corpus, which grows the job from
    there) what came before the undoing step is the job (the repeated one:
    ``test_the_same_request_twice_rejects_the_chain``); without it the run is rejected as before."""
    run, (packages, graphs) = played(
        lights(tmp_path),
        ROOMS,
        ("turn_on", {"room_id": "kitchen"}),
        ("set_note", {"room_id": "kitchen", "note": "light left on for the cleaners"}),
        ("turn_off", {"room_id": "kitchen"}),
        ("set_note", {"room_id": "kitchen", "note": "lights out, cleaners gone"}),
    )
    assert tidy(run, packages, graphs) == (None, "undo")
    tidied, reason = tidy(run, packages, graphs, salvage=True)
    assert reason == "ok"
    assert steps(tidied) == [
        ("turn_on", {"room_id": "kitchen"}),
        ("set_note", {"room_id": "kitchen", "note": "light left on for the cleaners"}),
    ]
    back, (packages, graphs) = played(
        lights(tmp_path), ROOMS, ("turn_off", {"room_id": "hallway"}), ("turn_on", {"room_id": "hallway"})
    )
    assert steps(tidy(back, packages, graphs, salvage=True)[0]) == [("turn_off", {"room_id": "hallway"})]


def test_a_step_the_tool_reports_changed_nothing_is_left_out() -> None:
    """A stage re-run on inputs that did not change only logs the run (``"changed": false``):
    34 of 36 re-runs in the golden runs of nine audit rounds were such, a handoff note flagging
    a dataset as "needing action" that nothing could change (rounds 67-68). The tool says it
    changed nothing, so no user asks for it; a re-run after its input changed stays."""
    package = load_package("sheet_analytics")
    start = package.env_class.generate(seed=0)
    initial, files = {package.id: start.state.model_dump(mode="json")}, dict(start.files)
    graphs = {package.id: build_tool_graph(package)}
    fresh = [d for d in initial[package.id]["datasets"].values() if d["kind"] != "raw" and d["inputs"]]
    call = GoldenCall(package.id, "rerun_stage", {"dataset_id": fresh[0]["dataset_id"]}, {}, {})
    named = GoldenCall(package.id, "create_recipe", {"name": "Cedar team"}, {}, {})
    run = replay([call, named], {package.id: package}, initial, files)
    assert run is not None and run.calls[0].result["changed"] is False
    tidied, reason = tidy(run, {package.id: package}, graphs)
    assert reason == "ok"
    assert steps(tidied) == [("create_recipe", {"name": "Cedar team"})]
    alone = replay([call], {package.id: package}, initial, files)
    assert alone is not None
    assert tidy(alone, {package.id: package}, graphs) == (None, "no_effect")
