"""Notes desk: a meeting note's text agrees with its own checklist (NotesDesk.rule_violations)."""

from __future__ import annotations

import re
from datetime import date, timedelta

from envcraft.core.package import load_package
from envcraft.core.session import Session

NOTE = """# Launch review — 2026-02-24

Attendees: @emil, @goran, @hana

## Notes
- Walked through the launch checklist; two items are still unowned.

## Action items
{items}
"""


def violations(files: dict[str, str]) -> list[str]:
    package = load_package("notes_desk")
    state = package.env_class.generate(seed=0, size=1, data=package.data).state
    return package.env_class.rule_violations(state, files)


def test_generated_notes_count_what_they_list() -> None:
    """Every generated S0 keeps the rule (the launch-review note said "two items are still
    unowned" above items that all had owners: a count no agent could reconcile)."""
    package = load_package("notes_desk")
    for seed in range(40):
        generated = package.env_class.generate(seed=seed, size=1, data=package.data)
        assert package.env_class.rule_violations(generated.state, generated.files) == [], seed


def test_a_count_of_unowned_items_is_checked() -> None:
    owned = "- [ ] @hana: Confirm the rollback plan (due 03-08)\n- [ ] @emil: Book the go/no-go (due 03-09)"
    unowned = "- [ ] Confirm the rollback plan (due 03-08)\n- [ ] Book the go/no-go (due 03-09)"
    path = "notes/2026-02-24-launch-review.md"
    found = violations({path: NOTE.format(items=owned)})
    assert found == [f"{path} says 'two items are still unowned', its action items have 0 unowned"]
    assert violations({path: NOTE.format(items=unowned)}) == []
    assert violations({"handover/launch.md": NOTE.format(items=owned)}) == []  # not a meeting note


def test_an_item_links_its_meeting_note_by_the_workspace_path() -> None:
    """``meeting="./notes/x.md"`` is the note at notes/x.md, stored as such (an audit's right run
    wrote the path that way and every goal on the item failed)."""
    package = load_package("notes_desk")
    generated = package.env_class.generate(seed=0, size=1, data=package.data)
    path = sorted(p for p in generated.files if p.startswith("notes/"))[0]
    listed = re.search(r"^- \[[ x]\] @(\S+): (.*?) \(due", generated.files[path], re.M)
    assert listed is not None
    owner = next(m for m in sorted(generated.state.members) if m != listed.group(1))
    with Session.memory(
        package, state=generated.state.model_dump(mode="json"), files=generated.files
    ) as session:
        due = session.env.now().date().isoformat()
        item = session.call(
            "add_action_item",
            {"title": listed.group(2), "owner": owner, "due": due, "meeting": "./" + path},
        )
    assert item["meeting"] == path


def test_an_item_links_only_to_a_note_that_lists_it() -> None:
    """Round 26 (DB, DC): "Budget draft" linked to a launch review whose checklist never names it
    scored 1.0, the link being the agent's to make. A note is the record of its meeting: the
    desk refuses the false link and tracks the item unlinked."""
    package = load_package("notes_desk")
    generated = package.env_class.generate(seed=0, size=1, data=package.data)
    path = sorted(p for p in generated.files if p.startswith("notes/"))[0]
    owner = sorted(generated.state.members)[0]
    with Session.memory(
        package, state=generated.state.model_dump(mode="json"), files=generated.files
    ) as session:
        due = session.env.now().date().isoformat()
        args = {"title": "Budget draft", "owner": owner, "due": due}
        refused = session.call("add_action_item", {**args, "meeting": path})
        assert refused["error"]["category"] == "invalid_argument"
        assert refused["error"]["field"] == "meeting"
        assert not any(i.title == "Budget draft" for i in session.env.state.items.values())
        assert session.call("add_action_item", args)["meeting"] == ""


def test_the_list_tells_today() -> None:
    """The README says items cannot be due in the past, and no tool told the date (round 64, R3:
    a player learned it only from the item it had just made): the list reports it, and an item
    due that day is accepted while one due the day before is refused."""
    package = load_package("notes_desk")
    generated = package.env_class.generate(seed=0, size=1, data=package.data)
    with Session.memory(
        package, state=generated.state.model_dump(mode="json"), files=generated.files
    ) as session:
        today = session.call("list_action_items", {})["today"]
        owner = sorted(generated.state.members)[0]
        made = session.call("add_action_item", {"title": "Send the recap", "owner": owner, "due": today})
        assert made["due"] == today
        before = (date.fromisoformat(today) - timedelta(days=1)).isoformat()
        late = session.call("add_action_item", {"title": "Send the agenda", "owner": owner, "due": before})
        assert "error" in late
