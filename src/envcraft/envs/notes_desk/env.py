"""Notes desk: Markdown meeting notes in a workspace, and the action items decided in them."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import date
from typing import Any, Literal

from envcraft import ClawEnvironment, Entity, Initial, Job, Repository, iso, tool

from .generate import generate_initial
from .rules import lists_item, note_violations, render_csv
from .state import ActionItem, NotesDeskState


class NotesDesk(ClawEnvironment):
    """A team's notes desk.

    Meeting notes are Markdown files under notes/ in the workspace; each ends with an
    "Action items" checklist. The tracked action items live in the desk itself: record new
    ones, reassign or complete them, and export the list to a CSV file for the weekly review.
    Team members are named by handle (e.g. amara); dates are YYYY-MM-DD.
    """

    State = NotesDeskState
    state: NotesDeskState
    entities = (
        Entity(
            "items",
            "action item",
            ("the action item “{title}”", "{owner}'s action item “{title}” (due {due:date})"),
            vary=("due", "owner"),
            free=("note", "meeting"),  # which meeting note an item links to: the agent's bookkeeping
        ),
    )

    jobs = (
        Job(
            "record an item that is already done",
            ("add_action_item", "complete_action_item"),
            "record that {owner} has already done {title}[ from the meeting notes in {meeting}] (due "
            "{due:date})[, noting {note}]",
        ),
        Job(
            "close an item for the weekly review",
            ("complete_action_item", "export_action_items"),
            "close {item_id}[, noting {note}], and refresh the action item export[ in {path}] for the "
            "weekly review",
        ),
        Job(
            "track a meeting's item for the weekly review",
            ("add_action_item", "export_action_items"),
            "track {title} for {owner}, due {due:date}[, from the meeting notes in {meeting}], and refresh "
            "the action item export[ in {path}] for the weekly review",
        ),
        Job(
            "close an item someone else did for the weekly review",
            ("reassign_action_item", "complete_action_item", "export_action_items"),
            "close {item_id} as done by {owner}, who did it in the end[, noting {note}], and refresh the "
            "action item export[ in {path}] for the weekly review",
        ),
        Job(
            "record an item someone else did in the end",
            ("add_action_item", "reassign_action_item", "complete_action_item"),
            # one outcome, not three steps: "Track X: chen took it on, but hand it over to bruno,
            # and mark it as done" (round 50, R3); no meeting the notes may not hold (round 65, R1:
            # "took it on in the meeting" of an item no note lists)
            "record that {reassign_action_item.owner} has already done {title}[ from the meeting notes in "
            "{meeting}] (due {due:date}), though {add_action_item.owner} had taken it on[, noting {note}]",
        ),
        Job(
            "track an item and hand it over",
            ("add_action_item", "reassign_action_item"),
            "track {title}, due {due:date}[, from the meeting notes in {meeting}]: {add_action_item.owner} "
            "took it on at first, but hand it over to {reassign_action_item.owner}",
        ),
    )

    @classmethod
    def rule_violations(cls, state: NotesDeskState, files: Mapping[str, str]) -> list[str]:
        """A meeting note's counts agree with its own checklist (no "two items are still
        unowned" above items that all have owners)."""
        del state
        return note_violations(files)

    @tool(
        produces=["item_id"],
        goal="track a new action item {title} for {owner}, due {due:date}[, from the meeting notes in "
        "{meeting}]",
    )
    def add_action_item(self, title: str, owner: str, due: str, meeting: str = "") -> dict[str, Any]:
        """Start tracking an action item.

        Args:
            title: What will be done, as one short sentence.
            owner: Handle of the team member who owns it (e.g. amara).
            due: Due date as YYYY-MM-DD; not in the past.
            meeting: Workspace path of the meeting note it comes from (e.g. notes/2026-02-23-design-sync.md);
                the note's action items must list this title.

        Returns:
            The new item with its item_id (AI-001, AI-002, ...).
        """
        title = " ".join(title.split())
        if not title:
            self.fail("invalid_argument", "title must not be empty", field="title")
        self._member(owner)
        due_date = self._date(due, "due")
        if due_date < self.now().date():
            self.fail("invalid_argument", f"due date {due} is in the past", field="due")
        if meeting and not self.workspace.exists(meeting):
            self.fail("not_found", f"no meeting note '{meeting}' in the workspace", field="meeting")
        if meeting and not lists_item(self.workspace.read_text(meeting), title):
            self.fail(
                "invalid_argument",
                f"{meeting} lists no action item “{title}”; link an item to the note it comes from",
                field="meeting",
            )
        meeting = self.workspace.normalize(meeting) if meeting else ""  # "./notes/x.md" is notes/x.md
        for item in self.state.items.values():
            if item.status == "open" and item.owner == owner and item.title.lower() == title.lower():
                self.fail(
                    "conflict",
                    f"{owner} already has this open item as {item.item_id}",
                    item_id=item.item_id,
                )
        item_id = f"AI-{self.state.next_item_number:03d}"
        self.state.next_item_number += 1
        item = ActionItem(
            item_id=item_id,
            title=title,
            owner=owner,
            due=due_date.isoformat(),
            status="open",
            meeting=meeting,
            created_at=iso(self.now()),
        )
        self.state.items[item_id] = item
        return item.model_dump()

    @tool(read_only=True, produces=["item_id"])
    def list_action_items(
        self, status: Literal["open", "done", "all"] = "open", owner: str = ""
    ) -> dict[str, Any]:
        """List tracked action items, earliest due date first.

        Args:
            status: Only items in this status, or all of them.
            owner: Only items owned by this handle; everyone's when empty.

        Returns:
            The matching items, how many there are, and today's date (no item may be due before it).
        """
        if owner:
            self._member(owner)
        items = [
            item.model_dump()
            for item in sorted(self.state.items.values(), key=lambda i: (i.due, i.item_id))
            if (status == "all" or item.status == status) and (not owner or item.owner == owner)
        ]
        return {"items": items, "count": len(items), "today": self.now().date().isoformat()}

    @tool(
        consumes=["item_id"],
        goal="mark {item_id} as done[, with the note {note}]",
        examples={
            "note": (
                "Shared in the team channel.",
                "Agreed with finance on Tuesday.",
                "Published on the wiki.",
            )
        },
    )
    def complete_action_item(self, item_id: str, note: str = "") -> dict[str, Any]:
        """Mark an open action item as done.

        Args:
            item_id: The item to complete (e.g. AI-004).
            note: Optional remark on how it was done.

        Returns:
            The item, now done, with the time it was closed.
        """
        item = self.lookup(self.state.items, item_id, "action item", item_id=item_id)
        if item.status != "open":
            self.fail("invalid_transition", f"{item_id} is already {item.status}", status=item.status)
        item.status = "done"
        item.closed_at = iso(self.now())
        item.note = note.strip()
        return item.model_dump()

    @tool(consumes=["item_id"], goal="hand {item_id} over to {owner}")
    def reassign_action_item(self, item_id: str, owner: str) -> dict[str, Any]:
        """Give an open action item to another team member.

        Args:
            item_id: The item to reassign (e.g. AI-004).
            owner: Handle of the new owner.

        Returns:
            The item with its new owner and the previous one.
        """
        item = self.lookup(self.state.items, item_id, "action item", item_id=item_id)
        self._member(owner)
        if item.status != "open":
            self.fail(
                "invalid_transition", f"{item_id} is {item.status}; only open items move", status=item.status
            )
        if item.owner == owner:
            self.fail("invalid_argument", f"{item_id} is already owned by {owner}", field="owner")
        previous, item.owner = item.owner, owner
        return {**item.model_dump(), "previous_owner": previous}

    @tool(goal="export every tracked action item[ to {path}]")
    def export_action_items(self, path: str = "action_items.csv") -> dict[str, Any]:
        """Write every tracked action item to a CSV file in the workspace (replacing it).

        Args:
            path: Workspace path of the CSV file to write; must end in .csv.

        Returns:
            The path written and the number of rows.
        """
        if not path.endswith(".csv"):
            self.fail("invalid_argument", "path must end in .csv", field="path")
        items = sorted(self.state.items.values(), key=lambda i: i.item_id)
        self.workspace.write_text(path, render_csv(items))
        return {"path": path, "rows": len(items)}

    # -- helpers -------------------------------------------------------------------------
    def _member(self, handle: str) -> None:
        if handle not in self.state.members:
            self.fail(
                "not_found",
                f"no team member '{handle}'; handles: {', '.join(sorted(self.state.members))}",
                field="owner",
            )

    def _date(self, value: str, field: str) -> date:
        try:
            return date.fromisoformat(value)
        except ValueError:
            self.fail(
                "invalid_argument", f"{field} must be a date like 2026-03-16, got '{value}'", field=field
            )

    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """``size + 2`` weekly meetings; items of all but the latest are already tracked."""
        return generate_initial(random.Random(seed), max(1, size) + 2, cls.repository(data), cls.base_time())
