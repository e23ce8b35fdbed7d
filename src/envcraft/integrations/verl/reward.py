"""``compute_score`` for VERL reward-function setups (``reward.custom_reward_function``).

VERL calls ``compute_score(data_source, solution_str, ground_truth, extra_info, **reward_kwargs)``
once per trajectory, with the agent loop's ``extra_fields`` merged into ``extra_info``. The
decoded response text says nothing about the environment's state, so the score is computed
from what envcraft's agent loop recorded: the calls of the trajectory, grouped per user turn,
are played again in fresh sessions from the task's S0 and the task's verifier scores that run
(:func:`envcraft.tasks.verifier.scoring.score_trajectory`, the scoring every envcraft door shares). The
task comes from the task set named by ``reward_kwargs.tasks`` (or ``$ENVCRAFT_TASKS``) and must
match the row's digest.

Configure with ``reward.custom_reward_function.path=pkg://envcraft.integrations.verl.reward``,
``name=compute_score``, ``reward_kwargs.tasks=<export>/tasks.jsonl``, and ``score_in_loop:
false`` for the agent loop (else the loop's own ``reward_score`` is used and this is not called).
"""

from __future__ import annotations

from typing import Any

from envcraft.integrations.taskset import load_index
from envcraft.tasks.verifier.scoring import score_trajectory

DATA_SOURCE_PREFIX = "envcraft/"


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    tasks: str | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """The verifier's score of the trajectory recorded in ``extra_info["envcraft"]``.

    Returns ``{"score", "envcraft_tool_calls", "envcraft_turns_completed"}`` (the same keys
    for every row, as VERL's reward managers require). A row that is not envcraft's, or that
    ran under another agent loop, is a configuration error and raises ``ValueError``: paying
    it 0 would quietly train on a broken setup.
    """
    if not str(data_source).startswith(DATA_SOURCE_PREFIX):
        raise ValueError(
            f"data source {data_source!r} is not an envcraft task (expected {DATA_SOURCE_PREFIX}...)"
        )
    record = (extra_info or {}).get("envcraft")
    if not isinstance(record, dict) or not isinstance(record.get("trajectory"), list):
        raise ValueError(
            "the row carries no envcraft trajectory: run envcraft rows with agent_name envcraft_agent "
            "(envcraft.integrations.verl.agent_loop)"
        )
    task = load_index(tasks).for_row(ground_truth, extra_info)
    score = score_trajectory(task, record["trajectory"])
    calls = sum(len(turn) for turn in record["trajectory"] if isinstance(turn, list))
    return {
        "score": score.score,
        "envcraft_tool_calls": calls,
        "envcraft_turns_completed": int(record.get("turns_completed", 0)),
    }
