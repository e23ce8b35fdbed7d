"""What the eval report and table say (issue 23 item 13): one pass@1 column when k = 1, why the
per-environment rows count more tasks than there are, and a chart of zero rewards that reads."""

from __future__ import annotations

import re

from envcraft.rollout.loop import Trajectory
from envcraft.rollout.metrics import summarize
from envcraft.rollout.report import bar_svg, render_report


def trajectories(score: float) -> list[Trajectory]:
    """A cross-environment task and a single-environment one, one sample each."""
    return [
        Trajectory("t-cross", 0, "m", "auto", ["mail_triage", "event_stream"], "claw", score=score),
        Trajectory("t-mail", 0, "m", "auto", ["mail_triage"], "tool", score=score),
    ]


def headers(html: str) -> list[list[str]]:
    return [re.findall(r"<th>([^<]*)</th>", row) for row in re.findall(r"<table><tr>(.*?)</tr>", html)]


def test_with_k_1_the_tables_have_one_pass_at_1_column() -> None:
    played = trajectories(1.0)
    for k, expected in ((1, ["pass@1"]), (4, ["pass@1", "pass@4"])):
        html = render_report(summarize(played, k), played)
        for header in headers(html)[:3]:
            assert [h for h in header if h.startswith("pass@")] == expected, header


def test_rows_that_count_a_task_twice_say_why() -> None:
    played = trajectories(1.0)
    html = render_report(summarize(played, 1), played)
    assert (
        "These rows count 3 tasks for 2: a cross-environment task counts in each of its environments" in html
    )
    assert "under its kind and under cross-env" in html
    single = [played[1]]
    assert "These rows count" not in render_report(summarize(single, 1), single)


def test_a_chart_of_zero_rewards_shows_empty_gauges_and_says_all_zero() -> None:
    chart = bar_svg("mean reward by environment", {"mail_triage": 0.0, "event_stream": 0.0}, maximum=1.0)
    assert "all 0" in chart
    assert chart.count('fill="#ecf0f1"') == 2  # one full-length track per environment
    assert "all 0" not in bar_svg("mean reward by environment", {"a": 0.0, "b": 0.5}, maximum=1.0)
