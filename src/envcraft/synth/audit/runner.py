"""The audit program that runs *inside* the sandbox, next to the untrusted package.

:mod:`envcraft.synth.audit.confined` starts it under bubblewrap with the package read-only
at ``/candidate``, no network, a private ``/tmp`` and an environment of its own. It reads
one JSON job from stdin and writes one JSON line per finished stage, then ``{"done"}``,
each carrying the job's nonce; its own stdout and stderr are sent to ``/dev/null`` first,
so nothing the package prints can pass for a report. Stages (see ``findings.STAGES``):
``dependencies`` (offline install into a throwaway venv), ``load``, ``s0``, ``skills``,
``explore`` (with a replay in a second interpreter under another hash seed) and ``yield``
(the data engine). The first failing stage ends the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from envcraft.core.environment import StateModel
from envcraft.core.lint import lint_package
from envcraft.core.package import EnvPackage, PackageError, load_package
from envcraft.core.state import canonical_json, state_hash
from envcraft.core.workspace import Workspace
from envcraft.synth.audit.explore import (
    Exploration,
    ExploreConfig,
    coverage_findings,
    domain_tools,
    explore,
    nondeterminism_findings,
    replay_traces,
)
from envcraft.synth.audit.findings import Finding, Severity, Stage, StageResult, stage_result
from envcraft.synth.audit.skillcheck import check_mentions, run_example
from envcraft.synth.audit.trace import locate

DEPS_VENV = Path("/tmp/deps-venv")
REPLAY_HASH_SEED = "1"


@dataclass
class Context:
    """What the stages share within one run."""

    root: Path
    job: dict[str, Any]
    package: EnvPackage | None = None
    known_good: list[dict[str, Any]] = field(default_factory=list)
    exploration: Exploration | None = None

    @property
    def options(self) -> dict[str, Any]:
        options: dict[str, Any] = self.job.get("options", {})
        return options

    def loaded(self) -> EnvPackage:
        assert self.package is not None, "the load stage runs first"
        return self.package


def main() -> None:
    """Entry point inside the sandbox (see the module docstring)."""
    job = json.loads(sys.stdin.readline())
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    if job.get("mode") == "replay":
        _send(protocol, job, {"divergences": _replay(job)})
        return
    context = Context(root=Path(job["package"]), job=job)
    for name in job["stages"]:
        started = time.monotonic()
        try:
            result = STAGE_RUNNERS[name](context)
        except BaseException as exc:  # the package's code may raise anything, even SystemExit
            cause = locate(exc, context.root)
            finding = Finding(
                stage=name,
                code="audit_crash",
                message=f"the {name} audit crashed: {cause.describe()}",
                file=cause.file,
                line=cause.line,
                detail={"traceback": list(cause.frames)},
            )
            result = stage_result(name, [finding], time.monotonic() - started)
        _send(protocol, job, {"stage": result.model_dump(mode="json")})
        if not result.ok:
            break
    _send(protocol, job, {"done": True})


def _send(protocol: IO[str], job: dict[str, Any], message: dict[str, Any]) -> None:
    protocol.write(json.dumps({"nonce": job["nonce"], **message}) + "\n")
    protocol.flush()


# -- dependencies --------------------------------------------------------------------------------
def stage_dependencies(context: Context) -> StageResult:
    """Install the declared requirements from the host's wheels, offline, into a fresh venv."""
    started = time.monotonic()
    requirements: list[str] = context.job.get("requirements", [])
    findings: list[Finding] = []
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(DEPS_VENV)], check=True, timeout=60)
    command = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(DEPS_VENV / "bin" / "python"),
        "install",
        "--no-index",
        "--find-links",
        context.job["wheels"],
        "--only-binary=:all:",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--no-input",
        *requirements,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        findings.append(
            Finding(stage="dependencies", code="install", message=f"pip install failed: {tail[:400]}")
        )
        return stage_result("dependencies", findings, time.monotonic() - started)
    site = next(iter(sorted((DEPS_VENV / "lib").glob("python*/site-packages"))), None)
    provided = _top_level_names(site) if site else set()
    if site is not None:
        sys.path.append(str(site))  # after the runtime's own packages, which a requirement cannot shadow
    for module in context.job.get("third_party", []):
        if module not in provided:
            installed = ", ".join(requirements)
            message = f"imports {module}, which none of the installed requirements provides ({installed})"
            findings.append(Finding(stage="dependencies", code="import", message=message))
    facts = {"installed": sorted(provided)}
    return stage_result("dependencies", findings, time.monotonic() - started, facts)


def _top_level_names(site: Path) -> set[str]:
    names = set()
    for entry in site.iterdir():
        if entry.suffix in (".dist-info", ".pth") or entry.name.startswith(("_", ".")):
            continue
        names.add(entry.name.split(".")[0] if entry.is_file() else entry.name)
    return names


# -- load ------------------------------------------------------------------------------------------
def stage_load(context: Context) -> StageResult:
    """Import the package (through the linter, which then checks its tools) and its schemas."""
    started = time.monotonic()
    static = {(f.rule, f.file, f.line, f.message) for f in lint_package(context.root, load=False).findings}
    full = lint_package(context.root)
    findings = [
        Finding(
            stage="load",
            code=f"lint:{f.rule}",
            message=f.message,
            severity=f.severity,
            file=f.file,
            line=f.line,
        )
        for f in full.findings
        if (f.rule, f.file, f.line, f.message) not in static
    ]
    if not full.imported:
        unsafe = sorted({f.rule for f in full.errors})
        message = f"the package was not imported: its static checks fail ({', '.join(unsafe)})"
        findings.append(Finding(stage="load", code="not-imported", message=message))
    if any(f.severity == "error" for f in findings):
        return stage_result("load", findings, time.monotonic() - started)
    try:
        package = load_package(context.root)
    except PackageError as exc:
        findings.append(Finding(stage="load", code="import", message=str(exc).split(": ", 1)[-1]))
        return stage_result("load", findings, time.monotonic() - started)
    env_class = package.env_class
    if env_class.State is StateModel or not issubclass(env_class.State, StateModel):
        message = f"{env_class.__name__}.State must be a StateModel subclass holding the whole state"
        findings.append(Finding(stage="load", code="state-model", message=message, file="env.py"))
    else:
        try:
            json.dumps(env_class.State.model_json_schema())
        except Exception as exc:
            message = f"the State model has no JSON schema: {type(exc).__name__}: {str(exc)[:300]}"
            findings.append(Finding(stage="load", code="state-schema", message=message, file="env.py"))
    if not any(not spec.annotations.read_only for spec in domain_tools(package).values()):
        findings.append(
            Finding(
                stage="load",
                code="no-writes",
                severity="warning",
                message="every tool is read_only: tasks need tools that change the state",
            )
        )
    context.package = package
    facts = {"tools": sorted(domain_tools(package)), "kind": package.kind}
    return stage_result("load", findings, time.monotonic() - started, facts)


# -- s0 --------------------------------------------------------------------------------------------
def stage_s0(context: Context) -> StageResult:
    """generate() over seeds and sizes: valid, reloadable, deterministic, quick, seed-dependent."""
    started = time.monotonic()
    package = context.loaded()
    env_class = package.env_class
    bound = float(context.options.get("generate_seconds", 5.0))
    findings: list[Finding] = []
    hashes: dict[tuple[int, int], str] = {}
    for seed in context.options.get("seeds", [0, 1, 2, 3, 4]):
        for size in context.options.get("sizes", [1, 2, 3]):
            where = f"generate(seed={seed}, size={size})"
            try:
                begun = time.monotonic()
                initial = env_class.generate(seed=seed, size=size, data=package.data)
                elapsed = time.monotonic() - begun
                dumped = initial.state.model_dump(mode="json")
                text = canonical_json(dumped)
                again = env_class.State.model_validate_json(text).model_dump(mode="json")
                twice = env_class.generate(seed=seed, size=size, data=package.data)
            except Exception as exc:
                cause = locate(exc, context.root)
                findings.append(
                    Finding(
                        stage="s0",
                        code="generate",
                        message=f"{where} failed: {cause.describe()}",
                        file=cause.file,
                        line=cause.line,
                        detail={"traceback": list(cause.frames)},
                    )
                )
                continue
            if not isinstance(initial.state, env_class.State):
                message = f"{where} returned a {type(initial.state).__name__}, not the env's State"
                findings.append(Finding(stage="s0", code="generate", message=message))
            if again != dumped:
                message = f"{where}: the state changes when it is loaded again (a validator rewrites it)"
                findings.append(Finding(stage="s0", code="reload", message=message))
            if canonical_json(twice.state.model_dump(mode="json")) != text or twice.files != initial.files:
                message = f"{where} gives a different S0 when called twice: use only random.Random(seed)"
                findings.append(Finding(stage="s0", code="nondeterministic", message=message))
            findings += _files_problems(package, initial.files, where)
            if elapsed > bound:
                findings.append(
                    Finding(
                        stage="s0", code="slow", message=f"{where} took {elapsed:.1f}s (bound {bound:g}s)"
                    )
                )
            hashes[(seed, size)] = state_hash({"state": dumped, "files": initial.files})
    if len(hashes) > 1 and len(set(hashes.values())) == 1:
        message = "every seed and size gives the same S0: tasks need varied initial states"
        findings.append(Finding(stage="s0", code="no-variety", message=message, severity="warning"))
    facts = {"generated": len(hashes), "distinct": len(set(hashes.values()))}
    return stage_result("s0", findings, time.monotonic() - started, facts)


def _files_problems(package: EnvPackage, files: dict[str, str], where: str) -> list[Finding]:
    if not files:
        return []
    if package.kind != "claw":
        message = f"{where} returned workspace files, but a tool environment has no workspace"
        return [Finding(stage="s0", code="files", message=message)]
    problems = []
    for path, content in files.items():
        try:
            Workspace.normalize(path)
        except Exception:
            problems.append(
                Finding(stage="s0", code="files", message=f"{where}: bad workspace path {path!r}")
            )
            continue
        if not isinstance(content, str):
            problems.append(Finding(stage="s0", code="files", message=f"{where}: {path} content is not text"))
    return problems


# -- skills ----------------------------------------------------------------------------------------
def stage_skills(context: Context) -> StageResult:
    """Skills name real tools and arguments; every worked example succeeds on S0."""
    started = time.monotonic()
    package = context.loaded()
    tools = domain_tools(package)
    system = frozenset(set(package.env_class.tools) - set(tools))
    findings: list[Finding] = []
    if not package.skills:
        findings.append(
            Finding(stage="skills", code="skill-missing", message="the package has no skills/<name>/SKILL.md")
        )
    for name, path in package.skills.items():
        rel = f"skills/{name}/SKILL.md"
        text = path.read_text(encoding="utf-8")
        findings += check_mentions(rel, text, tools, system)
        problems, succeeded = run_example(package, rel, text)
        findings += problems
        context.known_good += succeeded
    facts = {"skills": sorted(package.skills), "example_calls": len(context.known_good)}
    return stage_result("skills", findings, time.monotonic() - started, facts)


# -- explore ---------------------------------------------------------------------------------------
def stage_explore(context: Context) -> StageResult:
    """Random call sequences in this process, then their replay in another one."""
    started = time.monotonic()
    package = context.loaded()
    options = context.options.get("explore", {})
    config = ExploreConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in options.items()})  # type: ignore[arg-type]
    result = explore(package, config, context.known_good)
    context.exploration = result
    findings = list(result.findings)
    findings += coverage_findings(result, domain_tools(package), "explore", "warning")
    traces = [t.to_json() for t in result.traces]
    divergences = [] if result.slow else _replay_elsewhere(context, traces)
    if divergences is None:
        findings.append(Finding(stage="explore", code="replay", message="the replay process gave no answer"))
    else:
        findings += nondeterminism_findings(result.traces, divergences)
    return stage_result("explore", findings, time.monotonic() - started, result.facts())


def _replay_elsewhere(context: Context, traces: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Replay in a fresh interpreter with another hash seed (set order, ``hash()`` differ)."""
    job = {"nonce": context.job["nonce"], "mode": "replay", "package": str(context.root), "traces": traces}
    env = {**os.environ, "PYTHONHASHSEED": REPLAY_HASH_SEED}
    boot = context.job["boot"]
    try:
        done = subprocess.run(
            [sys.executable, "-P", "-s", "-B", "-c", boot, json.dumps(sys.path)],
            input=json.dumps(job) + "\n",
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=float(context.options.get("replay_seconds", 120.0)),
        )
    except subprocess.TimeoutExpired:
        return None
    for line in done.stdout.splitlines():
        reply = json.loads(line)
        if reply.get("nonce") == job["nonce"] and "divergences" in reply:
            divergences: list[dict[str, Any]] = reply["divergences"]
            return divergences
    return None


def _replay(job: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        return replay_traces(load_package(Path(job["package"])), job["traces"])
    except Exception:
        traceback.print_exc()
        return [{"trace": 0, "step": -1}] if job["traces"] else []


# -- yield -----------------------------------------------------------------------------------------
def stage_yield(context: Context) -> StageResult:
    """The data engine makes validated tasks; with its golden runs, every tool has succeeded."""
    from envcraft.tasks.corpus.compose import SynthConfig, load_library, synthesize_shard

    started = time.monotonic()
    package = context.loaded()
    wanted = int(context.options.get("yield_tasks", 3))
    library = load_library([str(context.root)])
    # depth 1, as the library's packages were accepted: whether the engine makes tasks of the
    # environment at all, not how deep (a deeper shard costs twice the time and decides nothing)
    shard = synthesize_shard(library, package.id, 0, wanted, SynthConfig(seed=0, depth=1))
    findings: list[Finding] = []
    if len(shard.tasks) < wanted:
        rejected = ", ".join(f"{k} {v}" for k, v in shard.rejected.most_common(4)) or "none"
        examples = "".join(
            f"; e.g. {reason}: {shard.examples[reason]}"
            for reason, _ in shard.rejected.most_common(4)
            if reason in shard.examples
        )
        message = (
            f"the data engine validated {len(shard.tasks)} of {wanted} tasks in {shard.attempts} attempts "
            f"(rejected: {rejected}{examples}); tools need chains of calls whose effects a verifier can check"
        )
        findings.append(Finding(stage="yield", code="yield", message=message))
    findings += text_findings(shard.tasks, package.id)
    exploration = context.exploration or Exploration()
    for key, count in shard.tool_ok.items():
        env, _, tool = key.partition(".")
        if env == package.id:
            exploration.successes[tool] += count
    severity: Severity = "error" if context.options.get("require_coverage", True) else "warning"
    findings += coverage_findings(exploration, domain_tools(package), "yield", severity)
    facts = {
        "tasks": len(shard.tasks),
        "attempts": shard.attempts,
        "rejected": dict(shard.rejected),
        "covered_tools": sorted(t for t in domain_tools(package) if exploration.successes[t]),
    }
    return stage_result("yield", findings, time.monotonic() - started, facts)


# The text checks whose cause is the environment's own phrasing: a goal phrase or an Entity name
# template (the engine's turn framing is checked by its own test over the default corpus).
AUTHORED_TEXT_CHECKS = ("doubled_quotes", "doubled_words", "nested_prefixes")


def text_findings(tasks: list[Any], env_id: str) -> list[Finding]:
    """A user turn rendered from this environment's phrases that reads as generated text.

    The data engine writes turns from each tool's ``goal`` phrase and each Entity's ``names``; a
    phrase that quotes its own placeholder (``"{note}"``: free text is already quoted) or repeats
    the noun its name template already says ("the record record R-1") puts the same seam into
    every task the environment yields. The finding names the turn, the snippet and the tools of
    that turn, so the phrase to change is found without reading the engine.
    """
    from envcraft.tasks.phrasing import lint

    findings: list[Finding] = []
    for task in tasks:
        turns = [turn.user for turn in task.turns]
        for found in lint.scan_turns(task.id, turns):
            if found.check not in AUTHORED_TEXT_CHECKS:
                continue
            tools = sorted({c.tool for c in task.reference.calls if c.turn == found.turn and c.env == env_id})
            message = (
                f"{found.check.replace('_', ' ')} {found.text!r} in a user turn written from this "
                f"environment's goal phrases and entity names ({', '.join(tools) or 'no tool of its own'}): "
                f"{turns[found.turn]!r}; fix the goal phrase or the Entity names template that says it"
            )
            findings.append(
                Finding(
                    stage="yield",
                    code=f"text:{found.check}",
                    message=message,
                    tool=tools[0] if tools else "",
                    detail={"task": task.id, "turn": found.turn, "tools": tools},
                )
            )
    return findings


STAGE_RUNNERS: dict[str, Callable[[Context], StageResult]] = {
    "dependencies": stage_dependencies,
    "load": stage_load,
    "s0": stage_s0,
    "skills": stage_skills,
    "explore": stage_explore,
    "yield": stage_yield,
}
SANDBOX_STAGES: tuple[Stage, ...] = ("dependencies", "load", "s0", "skills", "explore", "yield")
