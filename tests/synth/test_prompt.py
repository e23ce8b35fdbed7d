"""What the model is shown: references (contract in full, code by budget), the prompt, repairs."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from envcraft.synth.audit.findings import AuditReport, Finding, stage_result
from envcraft.synth.catalog import load_catalog
from envcraft.synth.prompt import first_messages, repair_messages, summarize_findings, system_prompt
from envcraft.synth.references import render_reference
from envcraft.synth.retrieval import reference_roots
from envcraft.synth.spec import from_scenario, load_spec
from envcraft.synth.tokens import count_tokens

ENVCRAFT = Path(sys.executable).parent / "envcraft"
ROOTS = reference_roots()
PROMPT_LIMIT = 30_000  # tokens: the figure for two of today's whole references


@pytest.mark.parametrize("archetype", sorted(ROOTS))
def test_a_reference_shows_its_contract_state_and_tools_in_full(archetype: str) -> None:
    root = ROOTS[archetype]
    ref = render_reference(root, archetype)
    text = ref.render()
    for name in ("ARCHETYPE.md", "README.md"):
        assert (root / name).read_text(encoding="utf-8").strip() in text
    tree = ast.parse((root / "env.py").read_text(encoding="utf-8"))
    env_class = next(
        n
        for n in tree.body
        if isinstance(n, ast.ClassDef)
        and n.name != "Rules"
        and any(
            getattr(b, "id", getattr(b, "attr", "")) in ("Environment", "ClawEnvironment") for b in n.bases
        )
    )
    tools = [
        n
        for n in env_class.body
        if isinstance(n, ast.FunctionDef) and any("tool" in ast.unparse(d) for d in n.decorator_list)
    ]
    surface = next(s.text for s in ref.sections if "tool surface" in s.title)
    for tool in tools:
        assert f"def {tool.name}(" in surface and (ast.get_docstring(tool) or "").split("\n")[0] in surface
    state = next(s.text for s in ref.sections if "State" in s.title)
    state_module = root / "state.py" if (root / "state.py").is_file() else root / "env.py"
    models = [
        n.name
        for n in ast.parse(state_module.read_text(encoding="utf-8")).body
        if isinstance(n, ast.ClassDef) and any(getattr(b, "id", "") == "StateModel" for b in n.bases)
    ]
    assert models and all(f"class {m}(" in state for m in models)


@pytest.mark.parametrize("archetype", sorted(ROOTS))
def test_the_implementation_is_shown_within_the_budget(archetype: str) -> None:
    small = render_reference(ROOTS[archetype], archetype, budget=0)
    large = render_reference(ROOTS[archetype], archetype, budget=6000)
    assert not any("implementation" in s.title or "generator" in s.title for s in small.sections)
    shown = sum(
        count_tokens(s.text)
        for s in large.sections
        if "implementation" in s.title
        or "logic" in s.title
        or "generator" in s.title
        or s.title in ("rules.py", "generate.py")
    )
    assert 0 < shown <= 6000 + 50 * len(large.sections)  # joins add a few tokens
    assert large.tokens() > small.tokens() and len(large.omitted) < len(small.omitted)
    assert "Left out for the prompt budget" in small.render()


@pytest.mark.parametrize("archetype", sorted(ROOTS))
def test_a_reference_is_a_package_of_three_modules(archetype: str) -> None:
    """The nine references are split: tools in env.py, domain logic in rules.py, S0 in
    generate.py, the State in state.py (or still in env.py); with budget for everything, each
    module shows under its own title."""
    root = ROOTS[archetype]
    assert all((root / name).is_file() for name in ("env.py", "rules.py", "generate.py"))
    ref = render_reference(root, archetype, budget=1_000_000)
    titles = [s.title for s in ref.sections]
    assert "rules.py" in titles and "generate.py" in titles and not ref.omitted
    assert "env.py: the S0 generator" not in titles  # what env.py keeps after the class is logic
    imports = next(s.text for s in ref.sections if s.title.startswith("env.py: imports"))
    assert "from .rules import" in imports  # the model sees how the modules reach each other
    if (root / "state.py").is_file():
        assert titles.index("state.py: the State") < titles.index("env.py: imports")
        assert "from .state import" in imports
    generator = next(s.text for s in ref.sections if s.title == "generate.py")
    assert re.search(r"^(def|class) \w+", generator, re.MULTILINE)


def test_every_catalog_prompt_with_two_references_stays_under_the_limit() -> None:
    sizes = []
    for scenario in load_catalog():
        spec = from_scenario(scenario)
        from envcraft.synth.retrieval import rank_archetypes

        top = rank_archetypes(spec.text())[:2]
        refs = [render_reference(ROOTS[s.archetype], s.archetype) for s in top]
        messages = first_messages(spec, refs)
        sizes.append(sum(count_tokens(str(m["content"])) for m in messages))
    assert max(sizes) < PROMPT_LIMIT, max(sizes)


def test_the_system_prompt_states_the_contract() -> None:
    text = system_prompt()
    for needle in (
        "Table 15",
        "Table 16",
        "self.fail",
        "self.now()",
        "self.rng",
        "permission_denied",
        "missing_field",
        "dangling(",
        "worked-example",
        '<file path="env.py">',
        "from .rules import",
    ):
        assert needle in text, needle


def test_a_repair_gets_the_failing_stage_deduplicated_with_places() -> None:
    same = [
        Finding(
            stage="explore",
            code="internal_error",
            message=f"x raised KeyError: 'M-{i}'",
            tool="x",
            file="env.py",
            line=40,
        )
        for i in range(5)
    ]
    other = Finding(stage="explore", code="reload", message="after y: the state changes", tool="y")
    report = AuditReport(
        stages=[stage_result("static", [], 0.1), stage_result("explore", [*same, other], 1.0)]
    )
    text = summarize_findings(report)
    assert text.startswith("Passed: static. Failed: explore")
    assert text.count("- internal_error") == 1 and "(5x)" in text and "[env.py:40]" in text
    spec = load_spec("messaging-communication")
    messages = repair_messages(spec, {"env.py": "x = 1\n"}, report)
    assert '<file path="env.py">\nx = 1\n</file>' in messages[1]["content"]
    assert "### Reference" not in messages[1]["content"]


def test_explain_ranks_without_a_model() -> None:
    done = subprocess.run(
        [str(ENVCRAFT), "synth", "--explain", "messaging-communication", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)
    scores = [row["score"] for row in result["ranking"]]
    assert len(scores) == 9 and scores == sorted(scores, reverse=True)
    assert result["ranking"][0]["archetype"] == "human_agent_interaction"
    assert 10_000 < result["prompt_tokens"]["total"] < PROMPT_LIMIT and len(result["references"]) == 2
    bad = subprocess.run(
        [str(ENVCRAFT), "synth", "--explain", "no-such-thing"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2 and "neither a spec file" in bad.stderr and "Traceback" not in bad.stderr
