"""The verifier runtime: isolated, clamped, and any failure scores 0 with its reason."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envcraft.tasks.play.execute import execute
from envcraft.tasks.verifier.scoring import build_context, pack, run_verifier, score_contexts

from .verify_support import make_task

JUNK = {
    "raises": ("def verify(ctx):\n    raise RuntimeError('boom')\n", "RuntimeError: boom"),
    "not a dict": ("def verify(ctx):\n    return 1.0\n", "not a dict"),
    "nan": ("def verify(ctx):\n    return {'score': float('nan')}\n", "non-numeric"),
    "string score": ("def verify(ctx):\n    return {'score': '1'}\n", "non-numeric"),
    "bool score": ("def verify(ctx):\n    return {'score': True}\n", "non-numeric"),
    "bad component": ("def verify(ctx):\n    return {'score': 1, 'components': {'a': 'yes'}}\n", "component"),
    "components list": ("def verify(ctx):\n    return {'score': 1, 'components': [1]}\n", "components"),
    "unserializable": ("def verify(ctx):\n    return {'score': 1, 'x': {1, 2}}\n", "not JSON serializable"),
    "syntax error": ("def verify(ctx:\n", "SyntaxError"),
    "no verify": ("x = 1\n", "verify"),
    "exits": ("import sys\ndef verify(ctx):\n    sys.exit(0)\n", "SystemExit"),
    "hard exit": ("import os\ndef verify(ctx):\n    os._exit(3)\n", "status 3"),
}


@pytest.mark.parametrize("name", sorted(JUNK))
def test_a_broken_verifier_scores_zero_with_its_reason(name: str) -> None:
    source, reason = JUNK[name]
    (score,) = score_contexts(source, [{"final": {}}])
    assert score.score == 0.0 and score.components == {}
    assert score.error is not None and reason in score.error


def test_a_verifier_that_never_returns_is_stopped() -> None:
    (score,) = score_contexts("def verify(ctx):\n    while True:\n        pass\n", [{}], timeout=1.0)
    assert score.score == 0.0 and score.error is not None and "timed out" in score.error


def test_scores_and_components_are_clamped_and_stdout_noise_is_ignored() -> None:
    source = (
        "def verify(ctx):\n"
        "    print('debugging output')\n"
        "    return {'score': ctx['s'], 'components': {'high': 7, 'low': -2.5}}\n"
    )
    high, low, exact = score_contexts(source, [{"s": 3.5}, {"s": -1}, {"s": 0.25}])
    assert (high.score, low.score, exact.score) == (1.0, 0.0, 0.25)
    assert high.components == {"high": 1.0, "low": 0.0}


def test_one_crashing_run_in_a_batch_does_not_spoil_the_others() -> None:
    source = "def verify(ctx):\n    return {'score': 1 / ctx['d'], 'components': {}}\n"
    good, bad = score_contexts(source, [{"d": 2}, {"d": 0}])
    assert good.score == 0.5 and good.error is None
    assert bad.score == 0.0 and bad.error is not None and "ZeroDivisionError" in bad.error


def test_the_context_is_plain_json_with_every_snapshot() -> None:
    turns = [[{"env": "counter", "tool": "increment", "args": {"name": "a", "by": 2}}], []]
    task, golden = make_task(turns, initial={"counter": {"counters": {"z": 1}}})
    ctx = build_context(golden)
    assert json.loads(json.dumps(ctx)) == ctx
    assert set(ctx) == {"initial", "final", "initial_files", "files", "turns", "actions"}
    assert ctx["initial"]["counter"]["counters"] == {"z": 1}
    assert ctx["final"]["counter"]["counters"] == {"z": 1, "a": 2}
    assert [t["final"]["counter"]["counters"] for t in ctx["turns"]] == [{"z": 1, "a": 2}] * 2
    assert ctx["actions"][0] == {
        "turn": 0,
        "env": "counter",
        "tool": "increment",
        "args": {"name": "a", "by": 2},
        "result": {"name": "a", "value": 2},
    }
    assert run_verifier(task, golden).score == 1.0


def test_inputs_are_read_only() -> None:
    """A verifier that writes into its ctx scores 0 (in a batch the runs share their data)."""
    task, golden = make_task([[{"env": "counter", "tool": "increment", "args": {"name": "a", "by": 2}}]])
    writer = (
        "def verify(ctx):\n"
        "    ctx['initial']['counter']['counters']['a'] = 2\n"
        "    return {'score': 1.0, 'components': {}}\n"
    )
    before = json.dumps(build_context(golden), sort_keys=True)
    scores = score_contexts(writer, [build_context(golden), build_context(golden)])
    assert [s.score for s in scores] == [0.0, 0.0]
    assert all(s.error and "read-only" in s.error for s in scores)
    assert json.dumps(build_context(golden), sort_keys=True) == before
    assert execute(task, [[]]).final["counter"]["counters"] == {}


def test_shared_data_is_sent_once_and_comes_back_whole() -> None:
    shared = {"orders": {str(i): {"status": "open", "lines": [i, i + 1]} for i in range(50)}}
    contexts = [{"initial": shared, "final": {**shared, "x": i}} for i in range(10)]
    packed = pack(contexts)
    assert len(json.dumps(packed)) < len(json.dumps(contexts)) / 5
    echo = "def verify(ctx):\n    return {'score': len(ctx['final']['orders']) / 50, 'components': {}}\n"
    assert [s.score for s in score_contexts(echo, contexts)] == [1.0] * 10


def test_a_verifier_sees_no_host_files_and_no_network(tmp_path: Path) -> None:
    """Verifiers run confined: host paths are invisible, writes do not land, sockets do not connect."""
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret", encoding="utf-8")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    probes = {
        "read": f"open({str(secret)!r}).read()",
        "write": f"open({str(tmp_path / 'planted.txt')!r}, 'w').write('x')",
        "connect": f"__import__('socket').create_connection(('127.0.0.1', {port}), timeout=2)",
    }
    try:
        for name, statement in probes.items():
            source = f"def verify(ctx):\n    {statement}\n    return {{'score': 1.0}}\n"
            (score,) = score_contexts(source, [{}])
            assert score.score == 0.0 and score.error, name
    finally:
        listener.close()
    assert not (tmp_path / "planted.txt").exists()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


def _echo(contexts: list[Any]) -> str:
    """A verifier that pays 1.0 for each call whose context is exactly the next of these."""
    expected = [json.dumps(c, sort_keys=True) for c in contexts]
    return (
        "import json\n"
        f"EXPECTED = {expected!r}\n"
        "SEEN = []\n"
        "def verify(ctx):\n"
        "    ok = json.dumps(ctx, sort_keys=True) == EXPECTED[len(SEEN)]\n"
        "    SEEN.append(1)\n"
        "    return {'score': 1.0 if ok else 0.0, 'components': {}}\n"
    )


@settings(max_examples=25, deadline=None)
@given(a=json_values, b=json_values)
def test_packed_contexts_arrive_exactly_as_sent(a: Any, b: Any) -> None:
    """Whatever is shared between and inside contexts, each verifier call sees its context exactly."""
    contexts = [{"x": a, "y": [a, b]}, {"x": b, "z": {"again": a}}, {"x": a}]
    assert [s.score for s in score_contexts(_echo(contexts), contexts)] == [1.0, 1.0, 1.0]


# -- declarative verifiers: scored in this process, exactly as the isolated worker scores them --
DECLARED_ENVS = ("returns_desk", "notes_desk", "event_stream", "itinerary_rebooking")


@pytest.fixture(scope="module")
def declared_tasks() -> list[Any]:
    from envcraft.tasks.corpus.compose import SynthConfig, load_library, synthesize_shard

    library = load_library(list(DECLARED_ENVS))
    tasks = []
    for env in DECLARED_ENVS:
        tasks += synthesize_shard(library, env, 0, 2, SynthConfig(seed=11, p_cross=0.0)).tasks
    assert {t.envs[0] for t in tasks} == set(DECLARED_ENVS)
    return tasks


def test_only_the_rendered_text_counts_as_declarative(declared_tasks: list[Any]) -> None:
    from envcraft.tasks.verifier.source import declared_checks, render

    source = declared_tasks[0].verifier.source
    checks = declared_checks(source)
    assert checks is not None and render(list(checks)) == source
    edits = {
        "a trailing comment": source + "# edited\n",
        "code after the checks": source + "verify = lambda ctx: {'score': 1.0}\n",
        "a changed interpreter": source.replace("return score(CHECKS, ctx)", "return {'score': 1.0}"),
        "a changed header": source.replace("Verifier generated", "Verifier written", 1),
        "checks that are not JSON": source.replace('"role": "goal"', "'role': 'goal'", 1),
    }
    for name, edited in edits.items():
        assert edited != source, name
        assert declared_checks(edited) is None, name


def test_an_edited_declarative_verifier_runs_confined(tmp_path: Path) -> None:
    """Code appended to a rendered verifier is untrusted: it runs isolated and sees no host file."""
    from envcraft.tasks.verifier.source import render

    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret", encoding="utf-8")
    rendered = render([{"name": "n", "role": "goal", "weight": 1.0, "kind": "matches", "env": "e",
                        "path": "/x", "expected": 1}])  # fmt: skip
    ctx = {"initial": {"e": {}}, "final": {"e": {"x": 1}}, "initial_files": {}, "files": {}, "turns": []}
    assert score_contexts(rendered, [ctx])[0].score == 1.0
    seen = f"float(__import__('os').path.exists({str(secret)!r}))"
    probe = f"\ndef verify(ctx):\n    return {{'score': {seen}}}\n"
    (score,) = score_contexts(rendered + probe, [ctx])
    assert (score.score, score.error) == (0.0, None)


def test_declarative_scores_equal_the_isolated_worker_on_every_validation_context(
    declared_tasks: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Golden, idle, mutated and adversarial runs of real tasks: the same score and components
    from the in-process interpreter as from the same verifier run isolated."""
    from envcraft.tasks.validation import validate as validation
    from envcraft.tasks.verifier.source import declared_checks

    compared: list[float] = []

    def both(source: str, contexts: Any, timeout: float | None = None) -> Any:
        assert declared_checks(source) is not None
        here = score_contexts(source, contexts, timeout)
        isolated = score_contexts(source + "# run isolated\n", contexts, timeout)
        assert [s.to_json() for s in here] == [s.to_json() for s in isolated]
        compared.extend(s.score for s in here)
        return here

    monkeypatch.setattr(validation, "score_contexts", both)
    for task in declared_tasks:
        validation.validate(task, adversarial=True, record=False)
    assert len(compared) > 10 * len(declared_tasks)
    assert 1.0 in compared and 0.0 in compared and any(0 < s < 1 for s in compared)


def test_contexts_that_hold_the_packing_marker_arrive_as_sent() -> None:
    """Data whose dict has the packer's own marker key (hypothesis found ``{"\\x00ref": None}``)
    is sent unshared and read back as it was, not as a reference."""
    marker = {"\x00ref": 0}
    shared = {"k": [1, 2]}
    contexts = [{"x": marker, "y": shared}, {"x": shared}, {"x": {"\x00ref": None}}]
    assert [s.score for s in score_contexts(_echo(contexts), contexts)] == [1.0, 1.0, 1.0]
    (alone,) = score_contexts(_echo(contexts[:1]), contexts[:1])
    assert alone.score == 1.0
