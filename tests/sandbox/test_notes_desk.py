"""The notes_desk Claw example: seeded generation, tool preconditions, the CSV export, the linter."""

from __future__ import annotations

import csv
import io
import re

from envcraft.core import Session, load_package
from envcraft.core.lint import lint_package


def _tracked(session: Session) -> dict[str, dict]:
    return session.state()["items"]


def _latest_note(session: Session) -> str:
    return max(path for path in session.files() if path.startswith("notes/"))


def test_generation_is_seeded() -> None:
    desk = load_package("notes_desk").env_class
    first, again, other = desk.generate(seed=5), desk.generate(seed=5), desk.generate(seed=6)
    assert first.state == again.state and first.files == again.files
    assert (first.state, first.files) != (other.state, other.files)
    assert len([p for p in desk.generate(seed=5, size=3).files if p.startswith("notes/")]) == 5


def test_initial_workspace_matches_the_state() -> None:
    with Session.memory("notes_desk", seed=11) as session:
        items = _tracked(session)
        rows = list(csv.DictReader(io.StringIO(session.files()["action_items.csv"])))
        assert {row["item_id"]: row["status"] for row in rows} == {i: it["status"] for i, it in items.items()}
        latest = _latest_note(session)
        pending = re.findall(r"^- \[ \] @(\w+): (.+) \(due (\S+)\)$", session.files()[latest], re.M)
        assert pending, "the newest meeting has open action items"
        assert not [item for item in items.values() if item["meeting"] == latest]
        assert "templates/meeting-note.md" in session.files()


def test_tracking_a_meeting_end_to_end() -> None:
    with Session.memory("notes_desk", seed=11) as session:
        latest = _latest_note(session)
        pending = re.findall(r"^- \[ \] @(\w+): (.+) \(due (\S+)\)$", session.files()[latest], re.M)
        added = [
            session.call("add_action_item", {"title": title, "owner": owner, "due": due, "meeting": latest})
            for owner, title, due in pending
        ]
        assert all("item_id" in result for result in added), added
        first = added[0]["item_id"]
        other = next(h for h in session.state()["members"] if h != added[0]["owner"])
        moved = session.call("reassign_action_item", {"item_id": first, "owner": other})
        assert (moved["owner"], moved["previous_owner"]) == (other, added[0]["owner"])
        done = session.call("complete_action_item", {"item_id": first, "note": "shipped"})
        assert done["status"] == "done" and done["closed_at"]
        exported = session.call("export_action_items", {})
        rows = list(csv.DictReader(io.StringIO(session.files()["action_items.csv"])))
        assert exported["rows"] == len(rows) == len(_tracked(session))
        assert next(r for r in rows if r["item_id"] == first)["status"] == "done"


def test_preconditions_are_enforced_and_change_nothing() -> None:
    with Session.memory("notes_desk", seed=2) as session:
        before = session.state_hash()
        item = next(i for i, it in _tracked(session).items() if it["status"] == "open")
        done = next(i for i, it in _tracked(session).items() if it["status"] == "done")
        owner = _tracked(session)[item]["owner"]
        title = _tracked(session)[item]["title"]
        cases = {
            "not_found": [
                ("add_action_item", {"title": "x", "owner": "zed", "due": "2026-04-01"}),
                (
                    "add_action_item",
                    {"title": "x", "owner": owner, "due": "2026-04-01", "meeting": "notes/no.md"},
                ),
                ("complete_action_item", {"item_id": "AI-999"}),
            ],
            "invalid_argument": [
                ("add_action_item", {"title": " ", "owner": owner, "due": "2026-04-01"}),
                ("add_action_item", {"title": "x", "owner": owner, "due": "next week"}),
                ("add_action_item", {"title": "x", "owner": owner, "due": "2020-01-01"}),
                ("reassign_action_item", {"item_id": item, "owner": owner}),
                ("export_action_items", {"path": "items.txt"}),
            ],
            "conflict": [("add_action_item", {"title": title.upper(), "owner": owner, "due": "2026-04-01"})],
            "invalid_transition": [
                ("complete_action_item", {"item_id": done}),
                ("reassign_action_item", {"item_id": done, "owner": owner}),
            ],
        }
        for category, calls in cases.items():
            for tool, args in calls:
                assert session.call(tool, args)["error"]["category"] == category, (tool, args)
        assert session.state_hash() == before


def test_package_passes_the_contract_linter() -> None:
    report = lint_package("notes_desk")
    assert report.findings == []
