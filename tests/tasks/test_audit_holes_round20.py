"""The twentieth round's findings on their real tasks (``tests/fixtures/audit_tasks_round20.jsonl``,
a default run at ``e4408ee``, seed 20):

* event_stream-42675f68c8d4: "Try to read raw records from a partition without consuming them:
  audit and 0; if that is not possible, process up to 3 records of partition 2 of the payments
  topic instead." A lookup planned to be refused had lost the lookup that recovered from it (its
  answer fed nothing), and the refusal was kept beside an unrelated step: a planned refusal now
  stays only with the call that recovers from it.
"""

from __future__ import annotations

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.model import GoldenCall, Task
from envcraft.tasks.golden.coherence import tidy
from envcraft.tasks.golden.run import replay
from envcraft.tasks.graphs.graph import build_tool_graph

from .test_created_records import audit_tasks


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round20.jsonl")


def test_a_refusal_planned_for_a_lookup_nothing_uses_goes_with_it(tasks: dict[str, Task]) -> None:
    task = tasks["event_stream-42675f68c8d4"]
    package = load_package("event_stream")
    denied = {"error": {"category": "permission_denied"}}  # the consumer group may not read audit
    refused = GoldenCall("event_stream", "read_batch", {"topic": "audit", "partition": 0}, {}, denied)
    refused.expected_error = "permission_denied"
    lookup = GoldenCall("event_stream", "read_batch", {"topic": "payments", "partition": 2}, {}, {})
    work = GoldenCall(
        "event_stream", "process_batch", {"topic": "payments", "partition": 2, "max_records": 3}, {}, {}
    )
    run = replay([refused, lookup, work], {"event_stream": package}, task.initial_state, task.workspace)
    assert run is not None and not run.calls[0].ok and run.calls[1].ok
    tidied, reason = tidy(run, {"event_stream": package}, {"event_stream": build_tool_graph(package)})
    assert tidied is not None, reason
    assert [c.tool for c in tidied.calls] == ["process_batch"]
