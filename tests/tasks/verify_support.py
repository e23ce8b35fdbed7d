"""Builders for the verification tests: real tasks on the counter fixture, golden run included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envcraft.tasks.format.model import Reference, ReferenceCall, Task, Turn, Verifier
from envcraft.tasks.play.execute import execute
from envcraft.tasks.play.outcome import Outcome, outcome_hash

COUNTER = Path(__file__).resolve().parent.parent / "fixtures" / "counter"

# Hand-written verifier: counter "a" must have grown by exactly 2 from S0.
GROWS_BY_TWO = """
def verify(ctx):
    before = ctx["initial"]["counter"]["counters"].get("a", 0)
    after = ctx["final"]["counter"]["counters"].get("a", 0)
    ok = 1.0 if after - before == 2 else 0.0
    return {"score": ok, "components": {"a grew by 2": ok}}
"""


def make_task(
    turns: list[list[dict[str, Any]]],
    *,
    initial: dict[str, dict[str, Any]] | None = None,
    workspace: dict[str, str] | None = None,
    packages: dict[str, str] | None = None,
    source: str = GROWS_BY_TWO,
    task_id: str = "t-counter",
    kind: str = "tool",
) -> tuple[Task, Outcome]:
    """A task whose reference is ``turns`` (calls ``{"env","tool","args"}``), plus its golden outcome."""
    packages = packages or {"counter": str(COUNTER)}
    calls = [
        ReferenceCall(
            turn=i, env=c["env"], tool=c["tool"], args=c.get("args", {}), provenance=c.get("provenance", {})
        )
        for i, turn in enumerate(turns)
        for c in turn
    ]
    task = Task(
        id=task_id,
        envs=sorted(packages),
        kind=kind,  # type: ignore[arg-type]
        turns=[Turn(user=f"turn {i}") for i in range(len(turns))],
        initial_state=initial or {env: {} for env in packages},
        workspace=workspace or {},
        verifier=Verifier(source=source),
        reference=Reference(calls=calls, final_hash=""),
        provenance={"packages": packages},
    )
    golden = execute(task, turns)
    task.reference.final_hash = outcome_hash(golden)
    return task, golden


# A help desk whose ticket ids come from the seeded rng and whose times come from the clock:
# both move when an agent makes an extra call, so a verifier must not pin them.
DESK_ENV = '''
from envcraft import Environment, StateModel, tool


class Ticket(StateModel):
    ticket_id: str
    title: str
    priority: str
    status: str = "open"
    assignee: str | None = None
    created_at: str
    updated_at: str


class DeskState(StateModel):
    tickets: dict[str, Ticket] = {}


class Desk(Environment):
    """A help desk of tickets."""

    State = DeskState

    @tool(read_only=True)
    def list_tickets(self) -> dict:
        """List every ticket.

        Returns:
            The tickets.
        """
        return {"tickets": [t.model_dump() for t in self.state.tickets.values()]}

    @tool(produces=["ticket_id"])
    def create_ticket(self, title: str, priority: str = "normal") -> dict:
        """Open a ticket.

        Args:
            title: Short summary.
            priority: low, normal or high.

        Returns:
            The new ticket.
        """
        ticket_id = f"T-{self.rng.randrange(10**6):06d}"
        stamp = self.now().isoformat()
        ticket = Ticket(
            ticket_id=ticket_id, title=title, priority=priority, created_at=stamp, updated_at=stamp
        )
        self.state.tickets[ticket_id] = ticket
        return ticket.model_dump()

    @tool(consumes=["ticket_id"])
    def assign(self, ticket_id: str, assignee: str) -> dict:
        """Assign a ticket.

        Args:
            ticket_id: The ticket.
            assignee: Who works on it.

        Returns:
            The ticket.
        """
        ticket = self.state.tickets.get(ticket_id) or self.fail("not_found", f"no ticket {ticket_id}")
        ticket.assignee = assignee
        ticket.updated_at = self.now().isoformat()
        return ticket.model_dump()

    @tool(consumes=["ticket_id"])
    def close_ticket(self, ticket_id: str) -> dict:
        """Close a ticket.

        Args:
            ticket_id: The ticket.

        Returns:
            The ticket.
        """
        ticket = self.state.tickets.get(ticket_id) or self.fail("not_found", f"no ticket {ticket_id}")
        ticket.status = "closed"
        ticket.updated_at = self.now().isoformat()
        return ticket.model_dump()

    @tool(consumes=["ticket_id"])
    def delete_ticket(self, ticket_id: str) -> dict:
        """Delete a ticket.

        Args:
            ticket_id: The ticket.

        Returns:
            The deleted id.
        """
        if self.state.tickets.pop(ticket_id, None) is None:
            self.fail("not_found", f"no ticket {ticket_id}")
        return {"deleted": ticket_id}
'''

# A Claw environment that writes CSV / JSON / text reports (stamped with the clock) into the
# workspace and can archive (delete) files.
REPORTS_ENV = '''
import json

from envcraft import StateModel, tool
from envcraft.sandbox import ClawEnvironment


class ReportsState(StateModel):
    exports: int = 0


class Reports(ClawEnvironment):
    """Sales reports written into the workspace."""

    State = ReportsState

    @tool
    def export_sales(self, region: str) -> dict:
        """Write out/sales.csv, out/summary.json and out/notes.txt for a region.

        Args:
            region: Sales region.

        Returns:
            The files written.
        """
        stamp = self.now().isoformat()
        rows = f"region,amount,at\\n{region},120,{stamp}\\n{region},80,{stamp}\\n"
        self.workspace.write_text("out/sales.csv", rows)
        summary = {"region": region, "total": 200, "generated_at": stamp}
        self.workspace.write_text("out/summary.json", json.dumps(summary))
        self.workspace.write_text("out/notes.txt", f"Report for {region}\\nGenerated {stamp}\\n")
        self.state.exports += 1
        return {"files": ["out/sales.csv", "out/summary.json", "out/notes.txt"]}

    @tool
    def archive(self, path: str) -> dict:
        """Remove a file from the workspace.

        Args:
            path: File to remove.

        Returns:
            The removed path.
        """
        self.workspace.delete(path)
        return {"archived": path}
'''


def write_package(root: Path, env_id: str, kind: str, source: str) -> Path:
    """An environment package on disk (loaded through the real loader)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "env.py").write_text(source, encoding="utf-8")
    (root / "envcraft.toml").write_text(
        f'id = "{env_id}"\ntitle = "{env_id}"\nkind = "{kind}"\n', encoding="utf-8"
    )
    return root


def ticket(ticket_id: str, title: str, status: str = "open") -> dict[str, Any]:
    stamp = "2026-01-01T00:00:00+00:00"
    return {
        "ticket_id": ticket_id,
        "title": title,
        "priority": "normal",
        "status": status,
        "assignee": None,
        "created_at": stamp,
        "updated_at": stamp,
    }


# An environment with a timer: every call first expires the holds whose time has passed, so
# what a run ends with depends on how many calls it made (like holds, events, SLAs).
HOLDS_ENV = '''
from envcraft import Environment, StateModel, tool


class Hold(StateModel):
    seat: str
    until: str
    status: str = "held"


class HoldsState(StateModel):
    holds: dict[str, Hold] = {}
    booked: list[str] = []


class Holds(Environment):
    """Seat holds that lapse at their time; booked seats."""

    State = HoldsState

    def _expire(self) -> None:
        now = self.now().isoformat()
        for hold in self.state.holds.values():
            if hold.status == "held" and hold.until <= now:
                hold.status = "lapsed"

    @tool
    def hold(self, seat: str, minutes: int) -> dict:
        """Hold a seat for some minutes.

        Args:
            seat: Seat name.
            minutes: How long to hold it (1 to 60).

        Returns:
            The hold.
        """
        self._expire()
        until = self.clock.at(self.action_index + minutes).isoformat()
        self.state.holds[seat] = Hold(seat=seat, until=until)
        return self.state.holds[seat].model_dump()

    @tool
    def book(self, seat: str) -> dict:
        """Book a seat.

        Args:
            seat: Seat name.

        Returns:
            The booked seats.
        """
        self._expire()
        self.state.booked.append(seat)
        return {"booked": self.state.booked}
'''
