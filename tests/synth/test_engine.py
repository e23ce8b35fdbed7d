"""The synthesis engine end to end, with recorded model answers over the real protocol.

The model is a script of recorded answers (hand-written environment code, see ``variants.py``)
served by a local OpenAI-compatible HTTP server and reached through the ``openai`` SDK, as a
user's vLLM or OpenAI endpoint would be; or Batch API files. Everything after the model is
real: retrieval, the prompt, the strict file-map parser, every audit in its bubblewrap sandbox,
the repair loop, the data engine and ``envcraft run`` on the accepted package.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envcraft.core import load_package
from envcraft.core.lint import lint_package
from envcraft.llm import (
    BatchProvider,
    CachedProvider,
    ChatServer,
    OpenAIProvider,
    Provider,
    ProviderConfig,
    ReplayProvider,
    RetryPolicy,
    Secret,
    answer_batch,
)
from envcraft.synth.engine import CandidateRecord, EngineOptions
from envcraft.synth.filemap import render_file_map
from envcraft.synth.job import load_specs, run_job

from .variants import BREAKS, SPEC_TOML, answer, broken_files, good_files

ENVCRAFT = Path(sys.executable).parent / "envcraft"
KEY = "sk-test-synth"


@pytest.fixture
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "library.toml"
    path.write_text(SPEC_TOML, encoding="utf-8")
    return path


def over_http(server: ChatServer, out: Path) -> Provider:
    config = ProviderConfig(
        model="recorded",
        base_url=server.url,
        api_key=Secret(KEY),
        timeout=30.0,
        retry=RetryPolicy(max_retries=1, backoff_base=0.01, backoff_max=0.05),
    )
    return CachedProvider(OpenAIProvider(config), out / ".cache" / "llm")


def synthesize(
    spec_file: Path, out: Path, script: list[Any], **options: Any
) -> tuple[dict[str, Any], ChatServer]:
    with ChatServer(ReplayProvider(script), api_key=KEY, record=True) as server:
        summary = run_job(load_specs([str(spec_file)]), out, over_http(server, out), EngineOptions(**options))
    return summary, server


def record_of(out: Path) -> CandidateRecord:
    return CandidateRecord.model_validate_json(
        (out / "candidates" / "library_loans" / "record.json").read_text()
    )


def test_a_correct_environment_is_accepted_first_try(spec_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary, server = synthesize(spec_file, out, [answer(good_files())])
    assert summary["accepted"] == 1 and summary["funnel"]["yield"] == 1
    record = record_of(out)
    assert record.status == "accepted" and len(record.attempts) == 1
    assert all(stage.ok for stage in record.attempts[0].report.stages)
    assert [s.stage for s in record.attempts[0].report.stages][-1] == "yield"
    assert record.attempts[0].report.stage("yield").facts["tasks"] >= 3  # type: ignore[union-attr]
    # the request went over HTTP with the contract, two references and the spec
    (body,) = server.received
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert "Table 15" in system and "invalid_transition" in system and "worked-example" in system
    assert user.count("### Reference `") == 2 and "Library loans" in user
    assert [r["reference"] for r in record.retrieval[:2]] == record.references
    # the accepted package loads and passes the linter
    package = out / "envs" / "library_loans"
    assert lint_package(package).ok
    assert sorted(load_package(package, fresh=True).env_class.tools) == sorted(
        ["search_books", "get_member", "borrow_book", "renew_loan", "return_book", "pay_fines"]
    )
    saved = json.loads((out / "synth.json").read_text())
    assert saved["candidates"][0]["retrieval"][0]["score"] > 0
    assert saved["tokens_per_accepted_env"]["prompt_tokens"] > 10_000
    assert "Acceptance funnel" in (out / "report.html").read_text()


def test_a_finished_run_resumes_without_asking_again(spec_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    synthesize(spec_file, out, [answer(good_files())])
    summary, server = synthesize(spec_file, out, [])  # an empty script: any request would fail
    assert summary["accepted"] == 1 and server.received == []
    (out / "candidates" / "library_loans" / "record.json").unlink()  # lose the record, keep the caches
    summary, server = synthesize(spec_file, out, [])
    assert summary["accepted"] == 1 and server.received == []  # the response cache answered


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_a_broken_environment_is_repaired_within_the_bound(
    name: str, spec_file: Path, tmp_path: Path
) -> None:
    path, _, _, stage, code = BREAKS[name]
    fix = render_file_map({path: good_files()[path]})  # a repair answer carries only the changed file
    out = tmp_path / "out"
    summary, server = synthesize(spec_file, out, [answer(broken_files(name)), fix], attempts=3)
    record = record_of(out)
    assert record.status == "accepted" and len(record.attempts) == 2, record.reasons
    first = record.attempts[0].report
    assert first.failed_stage == stage
    assert code in {f.code for f in first.errors()}
    repair = server.received[1]["messages"][1]["content"]
    assert f"Failed: {stage}" in repair and code in repair
    assert f'<file path="{path}">' in repair  # the current files go back with the findings
    assert summary["funnel"]["yield"] == 1


def test_a_candidate_that_never_converges_is_rejected_with_its_reasons(
    spec_file: Path, tmp_path: Path
) -> None:
    script = [answer(broken_files(n)) for n in ("syntax_error", "tool_raises", "skill_names_missing_tool")]
    out = tmp_path / "out"
    summary, server = synthesize(spec_file, out, script, attempts=3)
    record = record_of(out)
    assert record.status == "rejected" and len(record.attempts) == 3 and len(server.received) == 3
    assert [a.report.failed_stage for a in record.attempts] == ["static", "explore", "skills"]
    assert record.best_attempt == 2  # the attempt that got furthest through the stages
    assert any("internal_error" in reason for reason in record.reasons)
    assert not (out / "envs" / "library_loans").exists()
    assert summary["failure_causes"] == {"explore: internal_error": 1}
    assert summary["funnel"]["skills"] == 1 and summary["funnel"]["explore"] == 0


def test_a_repair_that_changes_nothing_stops_early(spec_file: Path, tmp_path: Path) -> None:
    broken = answer(broken_files("syntax_error"))
    out = tmp_path / "out"
    _, server = synthesize(spec_file, out, [broken, broken, broken], attempts=3)
    record = record_of(out)
    assert record.status == "rejected" and len(server.received) == 2
    assert not record.attempts[1].changed and record.stopped == "attempt 2 changed no file"


def test_a_malformed_answer_is_a_response_finding_the_model_can_fix(spec_file: Path, tmp_path: Path) -> None:
    prose = "Here is your environment!\n\n" + answer(good_files())
    out = tmp_path / "out"
    _, server = synthesize(spec_file, out, [prose, answer(good_files())], attempts=2)
    record = record_of(out)
    assert record.status == "accepted" and record.attempts[0].report.failed_stage == "response"
    assert "text outside a <file> block" in server.received[1]["messages"][1]["content"]


def test_batch_files_carry_the_job_across_runs(spec_file: Path, tmp_path: Path) -> None:
    out, batch = tmp_path / "out", tmp_path / "batch"
    specs = load_specs([str(spec_file)])
    first = run_job(specs, out, BatchProvider(batch, "recorded"), EngineOptions())
    assert first["status"] == {"waiting": 1}
    lines = (batch / "requests.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["url"] == "/v1/chat/completions"
    asyncio.run(
        answer_batch(
            batch / "requests.jsonl",
            batch / "responses" / "out.jsonl",
            ReplayProvider([answer(good_files())]),
        )
    )
    second = run_job(specs, out, BatchProvider(batch, "recorded"), EngineOptions())
    assert second["accepted"] == 1 and (out / "envs" / "library_loans" / "env.py").is_file()


def test_an_accepted_environment_yields_validated_tasks_through_envcraft_run(
    spec_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    synthesize(spec_file, out, [answer(good_files())])
    run = tmp_path / "run"
    done = subprocess.run(
        [str(ENVCRAFT), "run", "--envs", str(out / "envs"), "--out", str(run), "--n-per-env", "6", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["envs"] == ["library_loans"] and summary["corpus"]["tasks"] >= 3
    assert summary["validation"]["golden_pass_rate"] == 1.0 and summary["validation"]["kill_rate"] == 1.0
    check = subprocess.run(
        [str(ENVCRAFT), "tasks", "check", str(run / "tasks"), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert check.returncode == 0, check.stderr


def test_the_cli_runs_the_engine_over_http(spec_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ChatServer(ReplayProvider([answer(good_files())]), api_key=KEY) as server:
        done = synth_cli([str(spec_file), "--out", str(out), "--base-url", server.url], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["accepted"] == 1
    assert (out / "envs" / "library_loans" / "envcraft.toml").is_file()


def test_workers_take_several_candidates_at_once(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ChatServer(ReplayProvider([_for_the_asked_id, _for_the_asked_id]), api_key=KEY) as server:
        summary = run_job(
            load_specs(_two_specs(tmp_path)), out, over_http(server, out), EngineOptions(workers=2)
        )
    assert summary["accepted"] == 2
    assert sorted(p.name for p in (out / "envs").iterdir()) == ["library_annex", "library_loans"]


def synth_cli(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    """``envcraft synth ARGS --model recorded --json`` in a bare environment (no host keys)."""
    return subprocess.run(
        [str(ENVCRAFT), "synth", *args, "--model", "recorded", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": KEY, "HOME": str(home)},
    )


def _two_specs(tmp_path: Path) -> list[str]:
    specs = []
    for env_id in ("library_loans", "library_annex"):
        path = tmp_path / f"{env_id}.toml"
        path.write_text(SPEC_TOML.replace('id = "library_loans"', f'id = "{env_id}"'), encoding="utf-8")
        specs.append(str(path))
    return specs


def _for_the_asked_id(request: Any) -> str:
    env_id = "library_annex" if "`library_annex`" in request.messages[1]["content"] else "library_loans"
    files = good_files()
    files["envcraft.toml"] = files["envcraft.toml"].replace('"library_loans"', f'"{env_id}"')
    return answer(files)


def test_synth_on_ray_makes_the_records_of_one_process(tmp_path: Path) -> None:
    """``--executor ray``: each candidate a Ray task; the same requests, packages and verdicts."""
    pytest.importorskip("ray")
    specs = _two_specs(tmp_path)
    made = {}
    for executor in ("local", "ray"):
        out = tmp_path / executor
        with ChatServer(ReplayProvider([_for_the_asked_id] * 2), api_key=KEY) as server:
            done = synth_cli(
                [
                    *specs,
                    "--out",
                    str(out),
                    "--base-url",
                    server.url,
                    "--workers",
                    "2",
                    "--executor",
                    executor,
                ],
                tmp_path,
            )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["accepted"] == 2
        made[executor] = [
            (r["id"], r["status"], [(a["request_key"], a["files_hash"]) for a in r["attempts"]])
            for r in json.loads((out / "synth.json").read_text())["candidates"]
        ]
    assert made["ray"] == made["local"]


def test_synth_with_batch_files_refuses_ray(spec_file: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            *(str(ENVCRAFT), "synth", str(spec_file), "--out", str(tmp_path / "out"), "--model", "m"),
            *("--batch", str(tmp_path / "batch"), "--executor", "ray"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and "drop --executor ray" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "batch").exists()
