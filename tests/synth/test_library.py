"""The environment library: a real synth run (recorded answers over the real protocol) added to a
library, every stored package re-parsed from its answers byte for byte, and the library used by
`envcraft run --envs library` and `envcraft envs check library`.

The run has two candidates: ``library_loans`` (a first answer with a syntax error, repaired by a
second answer that carries only the fixed file: accepted) and ``library_annex`` (two answers
that are not file maps: rejected), so the replay covers a repair and the funnel a rejection.
"""

from __future__ import annotations

import asyncio
import json
import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envcraft.llm import (
    BatchProvider,
    CachedProvider,
    ChatRequest,
    ChatServer,
    OpenAIProvider,
    ProviderConfig,
    ReplayProvider,
    RetryPolicy,
    Secret,
    answer_batch,
)
from envcraft.synth import library
from envcraft.synth.engine import EngineOptions
from envcraft.synth.filemap import render_file_map
from envcraft.synth.job import load_specs, run_job
from envcraft.synth.library import LibraryError
from envcraft.synth.library.store import CANDIDATES_FILE, REPO_LIBRARY

from .variants import SPEC_TOML, answer, broken_files, good_files

ENVCRAFT = Path(sys.executable).parent / "envcraft"
KEY = "sk-test-library"
CI_SAMPLE = 2  # library environments the data engine runs on in CI


def _model(request: ChatRequest) -> str:
    """The recorded model: annex never answers with a file map; loans first breaks, then repairs."""
    user = str(request.messages[1]["content"])
    if "`library_annex`" in user or "Environment id: library_annex" in user:
        return "I would rather describe the environment in prose."
    if "# What the audits found" in user:
        return render_file_map({"env.py": good_files()["env.py"]})
    return answer(broken_files("syntax_error"))


@pytest.fixture(scope="module")
def synth_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real `envcraft synth` output directory (engine, audits, response cache) of two candidates."""
    base = tmp_path_factory.mktemp("synth")
    specs = []
    for env_id in ("library_loans", "library_annex"):
        path = base / f"{env_id}.toml"
        path.write_text(SPEC_TOML.replace('id = "library_loans"', f'id = "{env_id}"'), encoding="utf-8")
        specs.append(str(path))
    out = base / "out"
    with ChatServer(ReplayProvider([_model] * 4), api_key=KEY) as server:
        config = ProviderConfig(
            model="recorded",
            base_url=server.url,
            api_key=Secret(KEY),
            timeout=30.0,
            retry=RetryPolicy(max_retries=1, backoff_base=0.01, backoff_max=0.05),
        )
        provider = CachedProvider(OpenAIProvider(config), out / ".cache" / "llm")
        summary = run_job(load_specs(specs), out, provider, EngineOptions(attempts=2))
    assert summary["status"] == {"accepted": 1, "rejected": 1}, summary["status"]
    return out


@pytest.fixture(scope="module")
def lib(synth_out: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("library") / "library"
    library.add(root, synth_out)
    return root


def envcraft(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ENVCRAFT), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_add_keeps_the_package_its_record_answers_and_every_candidate(lib: Path) -> None:
    (path,) = library.archives(lib)
    assert path.name == "library_loans.tar.xz"
    entry = library.read_entry(path)
    assert entry.record["status"] == "accepted" and [a["kind"] for a in entry.record["attempts"]] == [
        "first",
        "repair",
    ]
    assert sorted(entry.answers) == [1, 2] and '<file path="env.py">' in entry.answers[2]
    assert entry.spec["id"] == "library_loans" and entry.record["model"] == "recorded"
    assert entry.files["env.py"] == good_files()["env.py"].encode()  # the repair's file, not the break
    candidates = library.read_candidates(lib)
    assert sorted((c["id"], c["status"]) for c in candidates) == [
        ("library_annex", "rejected"),
        ("library_loans", "accepted"),
    ]


def test_every_package_is_what_its_answers_give(lib: Path) -> None:
    """The provenance test over the fixture library (the repository's own is below)."""
    for path in library.archives(lib):
        library.check(library.read_entry(path))


@pytest.mark.parametrize("path", library.archives(REPO_LIBRARY), ids=lambda p: p.name)
def test_every_repository_library_package_is_what_its_answers_give(path: Path) -> None:
    """No hand edits: each stored package re-parsed from its recorded answers, byte for byte."""
    library.check(library.read_entry(path))


def test_adding_the_same_run_again_changes_no_byte(lib: Path, synth_out: Path, tmp_path: Path) -> None:
    before = {p.name: p.read_bytes() for p in lib.iterdir() if p.is_file()}
    before.update({p.name: p.read_bytes() for p in library.archives(lib)})
    again = library.add(lib, synth_out)
    assert again.unchanged == ["library_loans"] and again.new_candidates == 0 and not again.added
    after = {p.name: p.read_bytes() for p in lib.iterdir() if p.is_file()}
    after.update({p.name: p.read_bytes() for p in library.archives(lib)})
    assert after == before
    other = tmp_path / "other"
    library.add(other, synth_out)  # another library, another time: the same bytes
    assert (other / "envs" / "library_loans.tar.xz").read_bytes() == before["library_loans.tar.xz"]
    assert (other / CANDIDATES_FILE).read_bytes() == before[CANDIDATES_FILE]


def test_a_hand_edited_package_is_refused_and_nothing_is_written(synth_out: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(synth_out, out)
    rules = out / "envs" / "library_loans" / "rules.py"
    rules.write_text(rules.read_text() + "\n# tuned by hand\n")
    root = tmp_path / "library"
    done = envcraft("library", "add", str(out), "--library", str(root))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "library_loans: 1 file(s) differ from what its answers give: rules.py" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not root.exists()


def test_an_answer_that_does_not_give_the_recorded_files_is_refused(synth_out: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(synth_out, out)
    record = json.loads((out / "synth.json").read_text())
    loans = next(c for c in record["candidates"] if c["id"] == "library_loans")
    entry = out / ".cache" / "llm" / loans["attempts"][1]["request_key"][:2]
    (cached,) = entry.glob("*.json")
    data = json.loads(cached.read_text())
    data["completion"]["choices"][0]["message"]["content"] += '<file path="notes.py">\nx = 1\n</file>\n'
    cached.write_text(json.dumps(data))
    with pytest.raises(LibraryError, match="attempt 2's answer does not give the files its record says"):
        library.add(tmp_path / "library", out)
    assert not (tmp_path / "library").exists()


def test_an_archive_edited_after_it_was_added_fails_the_check(lib: Path, tmp_path: Path) -> None:
    entry = library.read_entry(library.archives(lib)[0])
    files = {**entry.files, "README.md": entry.files["README.md"] + b"\nOne more line.\n"}
    edited = library.Entry(record=entry.record, spec=entry.spec, answers=entry.answers, files=files)
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "library_loans.tar.xz").write_bytes(library.pack(edited))
    with pytest.raises(LibraryError, match=r"differ from what its answers give: README\.md"):
        library.check(library.read_entry(tmp_path / "envs" / "library_loans.tar.xz"))
    done = envcraft("library", "check", "--library", str(tmp_path))
    assert done.returncode == 1 and "README.md" in done.stdout


def test_the_readme_has_the_funnel_beside_the_paper_and_the_environments(lib: Path) -> None:
    text = (lib / "README.md").read_text()
    assert "| generated | 0 | 2 | 2 |" not in text  # both candidates are tool environments
    assert "| generated | 2 | 0 | 2 |" in text
    assert "| response | 1 (50.0%) | 0 (-) | 1 (50.0%) |" in text
    assert "| yield | 1 (50.0%) | 0 (-) | 1 (50.0%) |" in text
    assert "| general tool | 1 | 2 | 50.0% | 70 / 203 | 34.5% |" in text
    assert (
        "| Claw | 0 | 0 | - | 69 / 121 | 57.0% |" in text
        and "| total | 1 | 2 | 50.0% | 139 / 324 | 42.9% |" in text
    )
    assert "Repairs per accepted environment: 1.00 (1 after 1 repair)" in text
    row = next(line for line in text.splitlines() if line.startswith("| library_loans |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "tool" and cells[4] == "6" and cells[5] == "-" and int(cells[6]) >= 3
    done = envcraft("library", "readme", "--library", str(lib))
    assert done.returncode == 0 and (lib / "README.md").read_text() == text


def _ci_library(lib: Path) -> Path:
    """The repository's library once it has packages; until then the fixture's."""
    return REPO_LIBRARY if library.archives(REPO_LIBRARY) else lib


def test_ci_loads_and_lints_every_library_environment(lib: Path, tmp_path: Path) -> None:
    root = _ci_library(lib)
    env = {"ENVCRAFT_LIBRARY": str(root), "ENVCRAFT_CACHE": str(tmp_path / "cache")}
    done = envcraft("envs", "check", "library", "--json", env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    reports = json.loads(done.stdout)
    assert len(reports) == len(library.archives(root)) and all(r["ok"] for r in reports)
    assert all(Path(r["package"]).is_relative_to(tmp_path / "cache") for r in reports)


def test_ci_runs_the_data_engine_over_a_sample_of_the_library(lib: Path, tmp_path: Path) -> None:
    root = _ci_library(lib)
    paths = library.unpacked(root, tmp_path / "cache")
    sample = paths[:: max(1, len(paths) // CI_SAMPLE)][:CI_SAMPLE]
    run = tmp_path / "run"
    done = envcraft(
        "run", "--envs", ",".join(map(str, sample)), "--out", str(run), "--n-per-env", "4", "--json"
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert len(summary["envs"]) == len(sample) and summary["corpus"]["tasks"] >= len(sample)
    assert summary["validation"]["golden_pass_rate"] == 1.0


def test_run_envs_library_uses_the_cache_and_resumes(lib: Path, tmp_path: Path) -> None:
    env = {"ENVCRAFT_LIBRARY": str(lib), "ENVCRAFT_CACHE": str(tmp_path / "cache")}
    run = tmp_path / "run"
    args = ("run", "--envs", "library", "--out", str(run), "--n-per-env", "4", "--json")
    first = envcraft(*args, env=env)
    assert first.returncode == 0, first.stderr
    summary: dict[str, Any] = json.loads(first.stdout)
    assert summary["envs"] == ["library_loans"] and summary["corpus"]["tasks"] >= 3
    (unpacked,) = (tmp_path / "cache" / "library").glob("*/library_loans")
    assert (unpacked / "envcraft.toml").is_file() and not list(lib.rglob("envcraft.toml"))
    second = envcraft(*args, env=env)
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert again["shards"]["resumed"] == again["shards"]["total"] > 0
    assert again["corpus"] == summary["corpus"]
    copy = tmp_path / "library"
    shutil.copytree(lib, copy)
    done = envcraft("library", "readme", "--library", str(copy), "--run", str(run))
    assert done.returncode == 0, done.stderr
    row = next(line for line in (copy / "README.md").read_text().splitlines() if "| library_loans |" in line)
    assert row.split("|")[6].strip() == str(summary["corpus"]["envs"]["library_loans"]["tasks"])
    kept = json.loads((copy / "run.json").read_text())
    assert kept["tasks"] == summary["corpus"]["tasks"] and "workers" not in kept["options"]  # any pace


def test_tasks_synth_envs_library_writes_a_task_set(lib: Path, tmp_path: Path) -> None:
    env = {"ENVCRAFT_LIBRARY": str(lib), "ENVCRAFT_CACHE": str(tmp_path / "cache")}
    out = tmp_path / "set"
    done = envcraft("tasks", "synth", "--envs", "library", "--n", "3", "--out", str(out), env=env)
    assert done.returncode == 0, done.stderr
    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert len(tasks) >= 3 and {env for task in tasks for env in task["envs"]} == {"library_loans"}


def test_an_empty_library_is_a_one_line_error(tmp_path: Path) -> None:
    env = {"ENVCRAFT_LIBRARY": str(tmp_path / "none"), "ENVCRAFT_CACHE": str(tmp_path / "cache")}
    for args in (("run", "--envs", "library", "--out", str(tmp_path / "run")), ("envs", "check", "library")):
        done = envcraft(*args, env=env)
        assert done.returncode == 2 and "holds no environments" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_the_candidates_record_is_one_json_line_per_candidate(lib: Path) -> None:
    lines = lzma.decompress((lib / CANDIDATES_FILE).read_bytes()).decode().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["library_annex", "library_loans"]


def test_a_batch_run_is_added_from_its_output_files_without_touching_them(tmp_path: Path) -> None:
    spec = tmp_path / "library_loans.toml"
    spec.write_text(SPEC_TOML, encoding="utf-8")
    out, batch = tmp_path / "out", tmp_path / "batch"
    specs = load_specs([str(spec)])
    assert run_job(specs, out, BatchProvider(batch, "recorded"), EngineOptions())["status"] == {"waiting": 1}
    responses = batch / "responses" / "out.jsonl"
    asyncio.run(answer_batch(batch / "requests.jsonl", responses, ReplayProvider([answer(good_files())])))
    assert run_job(specs, out, BatchProvider(batch, "recorded"), EngineOptions())["accepted"] == 1
    before = {p: p.read_bytes() for p in batch.rglob("*") if p.is_file()}
    root = tmp_path / "library"
    missing = envcraft("library", "add", str(out), "--library", str(root))  # no --batch: no cache either
    assert missing.returncode == 2 and "attempt 1's answer is not in" in missing.stderr and not root.exists()
    done = envcraft("library", "add", str(out), "--batch", str(batch), "--library", str(root), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == ["library_loans"]
    assert {p: p.read_bytes() for p in batch.rglob("*") if p.is_file()} == before
    assert library.read_entry(library.archives(root)[0]).answers == {1: answer(good_files())}


def test_the_repository_library_readme_is_generated_from_its_records(tmp_path: Path) -> None:
    """library/README.md is what `envcraft library readme` writes (no hand edits, never stale)."""
    copy = tmp_path / "library"
    shutil.copytree(REPO_LIBRARY, copy)
    library.write_readme(copy)
    assert (copy / "README.md").read_text() == (REPO_LIBRARY / "README.md").read_text()
