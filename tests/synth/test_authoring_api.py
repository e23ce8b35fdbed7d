"""The prompt's authoring API names every construct the references use.

A model writing an environment imitates the nine references; whatever they use that the prompt
does not explain, the model has to guess. The constructs are found in the references' source by
AST (never a hand-kept list), so a construct a reference starts using fails this test until the
prompt documents it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from envcraft.core.environment import Environment
from envcraft.core.phrasing import FORMATS
from envcraft.sandbox import ClawEnvironment
from envcraft.synth.prompt import system_prompt
from envcraft.synth.retrieval import reference_roots

ROOTS = reference_roots()
# Base-class members a tool or a generator reaches through self./cls.
BASE_MEMBERS = {
    name
    for klass in (Environment, ClawEnvironment)
    for name in vars(klass)
    if not name.startswith("_") and name not in ClawEnvironment.tools
}
# Decorators of other libraries the prompt names when the references use them.
KNOWN_DECORATORS = {"tool", "invariant", "model_validator", "field_validator"}
PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*(?::([a-z]+))?(\|)?")


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for root in ROOTS.values():
        for path in sorted(root.glob("*.py")):
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def _call_name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def constructs() -> dict[str, set[str]]:
    """What the references use, by kind: each entry is a word the prompt must contain."""
    found: dict[str, set[str]] = {k: set() for k in ("import", "keyword", "decorator", "member", "api")}
    found["module"] = set()
    found["goal syntax"] = set()
    for path, tree in _modules():
        found["module"].add(path.name)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("envcraft"):
                found["import"].update(alias.name for alias in node.names)
            elif isinstance(node, ast.Call) and _call_name(node.func) in ("tool", "Entity", "invariant"):
                found["keyword"].update(k.arg for k in node.keywords if k.arg)
                for key in node.keywords:
                    if key.arg == "goal" and isinstance(key.value, ast.Constant):
                        found["goal syntax"].update(_goal_syntax(str(key.value.value)))
            elif isinstance(node, ast.FunctionDef):
                for deco in node.decorator_list:
                    name = _call_name(deco.func if isinstance(deco, ast.Call) else deco)
                    if name in KNOWN_DECORATORS:
                        found["decorator"].add(name)
                if node.name in ("generate", "rule_violations"):
                    found["member"].add(node.name)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
                and node.attr in BASE_MEMBERS
            ):
                found["member"].add(node.attr)
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "self"
                and node.value.attr in ("workspace", "data")
            ):
                found["api"].add(node.attr)
    return found


def _goal_syntax(text: str) -> Iterator[str]:
    """The goal-phrase constructs a template uses, as the prompt spells them."""
    if "[" in text:
        yield "[ ... ]"
    for fmt, choice in PLACEHOLDER.findall(text):
        if fmt:
            assert fmt in FORMATS, text
            yield f"`{fmt}`"
        if choice:
            yield "{param|a=text|b=text|*=text}"


def test_the_references_use_the_constructs_this_test_reads() -> None:
    """The scan itself finds what it looks for (an empty scan would pass anything)."""
    found = constructs()
    assert {"Environment", "StateModel", "tool", "Entity"} <= found["import"] | {"Environment"}
    assert {"goal", "consumes", "vary", "id_known"} <= found["keyword"]
    assert {"fail", "now", "state", "generate"} <= found["member"]
    assert found["goal syntax"] and found["api"] and "env.py" in found["module"]


@pytest.mark.parametrize("kind", ["import", "keyword", "decorator", "member", "api", "module", "goal syntax"])
def test_the_prompt_names_every_construct_the_references_use(kind: str) -> None:
    prompt = system_prompt()
    words = sorted(constructs()[kind])
    missing = [w for w in words if not re.search(rf"(?<![\w]){re.escape(w)}(?![\w])", prompt)]
    assert not missing, f"the prompt's authoring API leaves out these {kind}s of the references: {missing}"


def test_the_fence_rule_does_not_contradict_the_worked_examples() -> None:
    prompt = system_prompt()
    assert "no Markdown fences around or inside" not in prompt
    assert "worked-example" in prompt and "verbatim" in prompt
