"""Dictated text comes from the desk's own examples (``@tool(examples=...)``): a disruption desk
dictates a message about the disruption, not "Running a few minutes late." (round 22, ZD)."""

from __future__ import annotations

import random

import pytest

from envcraft.core.package import builtin_ids, load_package
from envcraft.tasks.values.args import FREE_TEXT, StateIndex, _free_text_name, user_values


def _free_text_params() -> list[tuple[str, str, str]]:
    found = []
    for env in builtin_ids():
        for name, spec in load_package(env).env_class.tools.items():
            if not spec.annotations.exclusive:
                continue  # the shell and file tools: a path or a command, never dictated
            for param, prop in spec.parameters["properties"].items():
                if prop.get("type") == "string" and "enum" not in prop and _free_text_name(param):
                    found.append((env, name, param))
    return found


@pytest.mark.parametrize(("env", "tool", "param"), _free_text_params())
def test_every_built_in_free_text_parameter_says_what_its_desk_would_dictate(
    env: str, tool: str, param: str
) -> None:
    prop = load_package(env).env_class.tools[tool].parameters["properties"][param]
    examples = prop.get("examples", [])
    assert len(examples) >= 3
    drawn = {v for seed in range(40) for v in user_values(param, prop, StateIndex(), random.Random(seed))}
    assert drawn == set(examples)  # an S0 that holds no such text: the desk's own, each in turn


def test_a_parameter_without_examples_keeps_the_bank_of_every_desk() -> None:
    drawn = user_values("reason", {"type": "string"}, StateIndex(), random.Random(0))
    assert drawn and set(drawn) <= set(FREE_TEXT["reason"])
