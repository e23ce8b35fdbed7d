"""The seeded S0 generator behind :meth:`~.env.NotesDesk.generate`.

Runs once per initial state (seed, size), never during a tool call: weekly meeting notes in the
workspace, whose action items (all but the latest meeting's) are already tracked in the State of
``state.py``, plus the CSV export that ``rules.py`` renders.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from envcraft import Initial, Repository, iso, thaw

from .rules import render_csv
from .state import ActionItem, NotesDeskState


def generate_initial(rng: random.Random, meetings: int, data: Repository, base: datetime) -> Initial:
    team = thaw(data.json("team.json"))
    topics = thaw(data.json("topics.json"))
    members = {person["handle"]: person["name"] for person in team}
    state = NotesDeskState(members=members)
    files: dict[str, str] = {}
    today = base.date()
    order = rng.sample(range(len(topics)), len(topics))
    for number in range(meetings):
        held = today - timedelta(days=7 * (meetings - number) - rng.randint(0, 2))
        topic = topics[order[number % len(order)]]
        attendees = sorted(rng.sample(sorted(members), rng.randint(3, 4)))
        latest = number == meetings - 1
        lines = [
            f"# {topic['title']} — {held.isoformat()}",
            "",
            "Attendees: " + ", ".join(f"@{h}" for h in attendees),
        ]
        lines += ["", "## Notes", *(f"- {note}" for note in rng.sample(topic["notes"], 2))]
        lines += ["", "## Action items"]
        path = f"notes/{held.isoformat()}-{topic['slug']}.md"
        open_titles = {item.title for item in state.items.values() if item.status == "open"}
        fresh = [title for title in topic["actions"] if title not in open_titles]
        for title in rng.sample(fresh, min(len(fresh), rng.randint(2, 3))):
            owner = rng.choice(attendees)
            due = held + timedelta(days=rng.randint(7, 21))
            done = not latest and due < today and rng.random() < 0.7
            lines.append(f"- [{'x' if done else ' '}] @{owner}: {title} (due {due.isoformat()})")
            if latest:
                continue  # the newest meeting's items are not tracked yet
            item_id = f"AI-{state.next_item_number:03d}"
            state.next_item_number += 1
            state.items[item_id] = ActionItem(
                item_id=item_id,
                title=title,
                owner=owner,
                due=due.isoformat(),
                status="done" if done else "open",
                meeting=path,
                created_at=iso(datetime.combine(held, base.timetz()).replace(hour=17)),
                closed_at=iso(datetime.combine(due, base.timetz())) if done else None,
            )
        files[path] = "\n".join(lines) + "\n"
    files["action_items.csv"] = render_csv(sorted(state.items.values(), key=lambda i: i.item_id))
    return Initial(state=state, files=files)
