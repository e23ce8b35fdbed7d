"""Notes desk: a meeting note's text agrees with its own checklist (NotesDesk.rule_violations)."""

from __future__ import annotations

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
    owner = sorted(generated.state.members)[0]
    with Session.memory(
        package, state=generated.state.model_dump(mode="json"), files=generated.files
    ) as session:
        due = session.env.now().date().isoformat()
        item = session.call(
            "add_action_item",
            {"title": "Check the rollout", "owner": owner, "due": due, "meeting": "./" + path},
        )
    assert item["meeting"] == path
