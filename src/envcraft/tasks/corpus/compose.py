"""Task synthesis: walk -> golden run -> one coherent job -> distractors -> file request ->
intents -> world rules -> verifier -> validation (mutations and adversarial agents) -> difficulty
features.

:func:`compose_draft` turns one sampled chain into a validated :class:`Task` or says why not.
:func:`synthesize_shard` makes up to ``quota`` tasks for one environment from one seed —
a pure function of its arguments, so shards can run in any order, in parallel, or again
after an interruption, and give the same tasks. :func:`merge` deduplicates shard outputs
(identical calls asked for in identical words) in shard order and computes the set's stats.
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from envcraft.core.package import BUILTIN_ROOT, EnvPackage, load_package
from envcraft.core.phrasing import Job
from envcraft.core.state import canonical_json, diff
from envcraft.tasks.corpus.measures import ShardResult, accepted_steps, corpus_stats, edge_key
from envcraft.tasks.format.model import Reference, ReferenceCall, Task, Turn, Verifier
from envcraft.tasks.golden.choose import COHESION, DEEP_COHESION, Experience, scalars
from envcraft.tasks.golden.coherence import job_spans, tidy, writes
from envcraft.tasks.golden.defaults import spell_out_defaults
from envcraft.tasks.golden.run import (
    GoldenRun,
    flows_across,
    keep_calls,
    outcome_of,
    replay,
    run_chain,
    state_indexes,
)
from envcraft.tasks.graphs.graph import ToolGraph, WorkflowGraph, build_tool_graph, build_workflow_graph
from envcraft.tasks.graphs.walk import DEEP_MAX_LEN, Coverage, Step, continue_walk, job_walk, sample_walk
from envcraft.tasks.phrasing.intents import (
    MAX_TURNS,
    ChainView,
    IntentPlan,
    Unnameable,
    plan_intents,
    split_turns,
)
from envcraft.tasks.phrasing.leaks import find_leaks, missing_user_values
from envcraft.tasks.phrasing.lint import repeated_values
from envcraft.tasks.phrasing.phrasebook import phrasebook
from envcraft.tasks.phrasing.render import IntentRenderer, Persona, TemplateRenderer, draw_persona
from envcraft.tasks.phrasing.writer import intent_of
from envcraft.tasks.play.execute import LEADS, keeps_pace, left_unrecovered
from envcraft.tasks.play.outcome import Outcome, outcome_hash
from envcraft.tasks.validation.exercised import quiet_defaults, unexercised_choices
from envcraft.tasks.validation.validate import validate
from envcraft.tasks.values.args import StateIndex
from envcraft.tasks.verifier.synthesis import synthesize_verifier
from envcraft.tasks.world.citing import CitedFact, carriers, cite_in_note
from envcraft.tasks.world.distractors import MAX_DISTRACTORS, Distractor, add_distractors, breaks_lookups
from envcraft.tasks.world.hiding import FileFact, hide_in_file
from envcraft.tasks.world.lookups import with_lookups
from envcraft.tasks.world.requests import Request, request_file
from envcraft.tasks.world.rules import generator_seed, lookalike_refusal, world_violations

log = logging.getLogger("envcraft.tasks.corpus.compose")

ATTEMPTS_PER_TASK = 8
GROW_TRIES = 4  # follow-ups tried on a job shorter than its target
DEEP_SHARE = 0.6  # with a depth: the share of a shard's places held for jobs that reach it
# the default depth: half the corpus or more are jobs of 5+ calls over 2+ turns (issue 21: a
# strong model must be able to fail a task by its own mistake; 1 gave a median of 3 calls)
DEFAULT_DEPTH = 5
SHORT_PATIENCE = 3  # short drafts refused in a row, after which the next is kept all the same
P_REQUEST = 0.9  # chance that a Claw task ends with a file the user asks for by its content
P_FILE_FACT = 0.8  # chance that a Claw task's user points at a record through a workspace file
P_CITE = 0.75  # chance that a one-environment job's record is named by a note in another environment
P_JOB = 0.5  # chance that a draw walks one of the environment's declared jobs (Environment.jobs)


@dataclass
class SynthConfig:
    """Knobs of one synthesis run (all recorded with the output)."""

    seed: int = 0
    p_cross: float = 0.5
    p_error: float = 0.1
    size: int = 1
    distractors: bool = True
    # no task of fewer reference calls (the lookups and the asked-for file included); 1: none.
    # Above 1 it is also the target jobs are walked and grown toward (a deeper corpus)
    min_calls: int = 1
    # jobs are walked and grown toward this many reference calls, and ``deep_share`` of a
    # shard's places are held for jobs that reach it; a job that comes out shorter is kept while
    # the shard has room for short ones, or after SHORT_PATIENCE short drafts refused in a row
    # (1: every job as it comes, nothing grown)
    depth: int = DEFAULT_DEPTH
    deep_share: float = DEEP_SHARE

    @property
    def target(self) -> int:
        """The reference calls a job is walked and grown toward."""
        return max(self.depth, self.min_calls)

    @property
    def deep(self) -> bool:
        """Whether jobs are walked and grown toward more than one call."""
        return self.target > 1

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "p_cross": self.p_cross,
            "p_error": self.p_error,
            "size": self.size,
            "distractors": self.distractors,
            "min_calls": self.min_calls,
            "depth": self.depth,
            "deep_share": self.deep_share,
        }


@dataclass
class Library:
    """The environments of a run, with their tool graphs and the workflow graph."""

    packages: dict[str, EnvPackage]
    graphs: dict[str, ToolGraph]
    workflow: WorkflowGraph


def load_library(refs: Iterable[str]) -> Library:
    """Load packages (built-in ids or directories) and build their graphs."""
    return _load_library(tuple(refs))


@cache
def _load_library(refs: tuple[str, ...]) -> Library:
    packages: dict[str, EnvPackage] = {}
    for ref in refs:
        package = load_package(ref)
        packages[package.id] = package
    graphs = {env: build_tool_graph(p) for env, p in sorted(packages.items())}
    return Library(packages, graphs, build_workflow_graph(list(graphs.values())))


def synthesize_shard(
    library: Library,
    env: str,
    shard: int,
    quota: int,
    config: SynthConfig,
    renderer: IntentRenderer | None = None,
) -> ShardResult:
    """Up to ``quota`` validated tasks starting in ``env``; deterministic in its arguments."""
    rng = random.Random(f"shard:{config.seed}:{env}:{shard}")
    coverage = _shard_coverage(library.graphs[env], shard)
    experience = Experience()
    result = ShardResult(env, shard, [])
    seen: set[str] = set()
    render = renderer or TemplateRenderer(seed=f"{config.seed}:{env}:{shard}")
    budget = quota * ATTEMPTS_PER_TASK * config.target  # long jobs: most draws come out short
    short_room = quota - math.ceil(quota * config.deep_share)  # tasks that may stay below depth
    refused = 0  # short drafts refused in a row
    while len(result.tasks) < quota and result.attempts < budget:
        result.attempts += 1
        short = sum(len(t.reference.calls) < config.target for t in result.tasks)
        # below the target while the shard has room, or when the environment's jobs rarely
        # reach it (the shard is not spent on it); never below min_calls
        floor = config.min_calls if short < short_room or refused >= SHORT_PATIENCE else config.target
        jobs, job = library.packages[env].env_class.jobs, None
        chain: list[Step] | None
        if jobs and rng.random() < P_JOB:
            job, chain = job_walk(env, jobs, rng, coverage)
        else:
            chain = sample_walk(
                library.graphs, library.workflow, env, rng, coverage, config.p_cross, min_len=config.target
            )
        if chain is None:
            result.rejected["walk"] += 1
            continue
        tag = f"{config.seed}:{env}:{shard}:{result.attempts}"
        draft, reason = compose_draft(
            library,
            chain,
            tag,
            rng,
            coverage,
            replace(config, min_calls=floor),
            render,
            experience,
            result.validated,
            result.examples,
            job,
        )
        if reason == "shallow":
            refused += 1
        elif draft is not None:
            refused = 0
        task = draft.task if draft is not None else None
        key = dedupe_key(task) if task is not None else ""
        if draft is None or task is None or key in seen:
            result.rejected[reason if task is None else "duplicate"] += 1
            if job is not None:  # walked less from now on (job_walk)
                coverage.jobs_refused[(env, job.name)] += 1
            continue
        assert draft.plan is not None and draft.persona is not None
        seen.add(key)
        result.tasks.append(task)
        result.intents.append(intent_of(draft.plan, draft.persona))
        coverage.accept(accepted_steps(task), library.graphs)
        coverage.jobs.update((env, j["job"]) for j in task.provenance.get("jobs", []))
    result.tool_ok.update({f"{e}.{t}": n for (e, t), n in coverage.ok.items()})
    result.executed.update({edge_key(e, a, b): n for (e, a, b), n in coverage.executed.items()})
    return result


def _shard_coverage(graph: ToolGraph, shard: int) -> Coverage:
    """Fresh coverage counts, nudged so parallel shards of one environment start on different
    edges: edges outside this shard's slice start with one virtual use."""
    coverage = Coverage()
    edges = sorted(graph.edges)
    slices = 4
    for i, (src, dst) in enumerate(edges):
        if i % slices != shard % slices:
            coverage.edges[(graph.env, src, dst)] = 1
    return coverage


def compose_draft(
    library: Library,
    chain: list[Step],
    tag: str,
    rng: random.Random,
    coverage: Coverage,
    config: SynthConfig,
    renderer: IntentRenderer,
    experience: Experience | None = None,
    validated: Counter[str] | None = None,
    examples: dict[str, str] | None = None,
    job: Job | None = None,
) -> tuple[Draft | None, str]:
    """One task from one chain as its whole :class:`Draft` (the task, and the intent plan and
    persona an LLM writer rewrites the turns from), or ``(None, reason)``: the reason names the
    failed stage. ``job``: the declared job the chain walks, which the task must ask for.

    The stages run in order on one :class:`Draft`, each drawing from ``rng`` in turn (so the
    same seed makes the same task); the first that rejects the candidate ends it.
    ``validated`` counts the candidates that reached validation and, per adversarial policy,
    those that came out wrong (``reached``, ``passed``, ``applied:<policy>``, ``failed:<policy>``);
    ``examples`` keeps the first detail a stage gave for each reason (``Draft.why``).
    """
    draft = Draft(library, chain, tag, rng, config, job=job)
    stages: list[Callable[[Draft], str | None]] = [
        lambda d: golden_stage(d, coverage, experience),
        cut_stage,
        job_stage,
        defaults_stage,
        cite_stage,
        fact_stage,
        distractor_stage,
        lookup_stage,
        request_stage,
        depth_stage,
        lambda d: plan_stage(d, renderer),
        text_stage,
        world_stage,
        exercised_stage,
        recovery_stage,
        verifier_stage,
        pace_stage,
        lambda d: validation_stage(d, validated),
    ]
    for stage in stages:
        reason = stage(draft)
        if reason is not None:
            if examples is not None and draft.why:
                examples.setdefault(reason, draft.why)
            return None, reason
    assert draft.task is not None
    return draft, "ok"


@dataclass
class Draft:
    """A candidate task between the stages of :func:`compose_draft`: what each stage made so far."""

    library: Library
    chain: list[Step]
    tag: str
    rng: random.Random
    config: SynthConfig
    job: Job | None = None  # the declared job the chain walks: the task must ask for it
    packages: dict[str, EnvPackage] = field(default_factory=dict)
    initial: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)  # S0 workspace path -> the env that made it
    run: GoldenRun | None = None
    envs: list[str] = field(default_factory=list)
    fact: FileFact | None = None
    cited: CitedFact | None = None
    needs_flow: bool = False
    distractors: list[dict[str, Any]] = field(default_factory=list)
    request: Request | None = None
    turns: list[list[int]] = field(default_factory=list)
    plan: IntentPlan | None = None
    persona: Persona | None = None
    task: Task | None = None
    outcome: Outcome | None = None
    why: str = ""  # what a rejecting stage found, in words (the record, field and value)

    @property
    def claw(self) -> bool:
        """Whether any environment of the candidate is a Claw environment."""
        return any(p.kind == "claw" for p in self.packages.values())

    @property
    def golden(self) -> GoldenRun:
        assert self.run is not None, "no golden run yet"
        return self.run


def golden_stage(draft: Draft, coverage: Coverage, experience: Experience | None) -> str | None:
    """S0 for the chain's environments, the chain run for real, cut down to one coherent job."""
    draft.packages = {e: draft.library.packages[e] for e in dict.fromkeys(s.env for s in draft.chain)}
    try:
        draft.initial, draft.files = generate_initial(
            draft.packages, draft.tag, draft.config.size, draft.owners
        )
    except GenerationError:
        return "generate"
    cohesion = DEEP_COHESION if draft.config.deep else COHESION
    indexes = state_indexes(draft.initial, draft.files)
    run = run_chain(
        draft.chain,
        draft.packages,
        draft.library.graphs,
        draft.initial,
        draft.files,
        draft.rng,
        coverage,
        draft.config.p_error,
        experience,
        cohesion,
        indexes=indexes,
        examples={tool: draft.job.examples_for(tool) for tool in draft.job.steps} if draft.job else None,
    )
    if run is None:
        return "golden"
    # a deeper corpus keeps the job before a step that takes it back, and grows it (salvaged at
    # depth 1, the default corpus had more one-call and fewer multi-turn tasks: 9.7% and 49.4%)
    deep = draft.config.deep
    tidied, reason = tidy(run, draft.packages, draft.library.graphs, skip_gaps=deep, salvage=deep)
    if tidied is None:
        return reason
    if deep and not _carries_out_job(draft, tidied):
        return "job"  # before growing it: a follow-up cannot make a job of steps that failed
    draft.run = _grown(draft, tidied, coverage, experience, cohesion, indexes) if deep else tidied
    return None


def _grown(
    draft: Draft,
    run: GoldenRun,
    coverage: Coverage,
    experience: Experience | None,
    cohesion: float,
    indexes: dict[str, StateIndex],
) -> GoldenRun:
    """A job that came out shorter than its target (``SynthConfig.target``), continued with
    follow-up steps from where it ended (on the records it touched: ``cohesion``), each kept only
    when the whole still tidies into one coherent job that is longer; up to :data:`GROW_TRIES`
    follow-ups. Throwing a short job away costs its golden run; most walks come out short."""
    graphs = draft.library.graphs
    for _ in range(GROW_TRIES):
        if len(run.calls) >= draft.config.target:
            break
        last = run.calls[-1]
        room = DEEP_MAX_LEN - len(run.calls)
        wanted = draft.config.target - len(run.calls)
        more = continue_walk(
            graphs, Step(last.env, last.tool), draft.rng.randint(min(wanted, room), room), draft.rng, coverage
        )
        if more is None:
            continue
        longer = run_chain(
            more,
            draft.packages,
            graphs,
            draft.initial,
            draft.files,
            draft.rng,
            coverage,
            draft.config.p_error,
            experience,
            cohesion,
            prefix=run.calls,
            indexes=indexes,
        )
        tidied = _settled(longer, draft.packages, graphs) if longer is not None else None
        if tidied is not None and len(tidied.calls) > len(run.calls):
            run = tidied
    return run


def _settled(
    run: GoldenRun, packages: dict[str, EnvPackage], graphs: dict[str, ToolGraph]
) -> GoldenRun | None:
    """``run`` tidied until tidying leaves it as it is: leaving out a step on unrelated records
    can leave the step after it unlinked too."""
    for _ in range(len(run.calls)):
        tidied = tidy(run, packages, graphs, skip_gaps=True, salvage=True)[0]
        if tidied is None or len(tidied.calls) == len(run.calls):
            return tidied
        run = tidied
    return run


def cut_stage(draft: Draft) -> str | None:
    """A chain cut before it crossed is a task of fewer environments: replayed on those alone."""
    run = draft.golden
    draft.envs = list(dict.fromkeys(c.env for c in run.calls))
    if len(draft.envs) < len(draft.packages):
        draft.packages = {e: draft.packages[e] for e in draft.envs}
        draft.initial = {e: draft.initial[e] for e in draft.envs}
        # only the files of the envs left: a notes desk holds no mailbox of an env cut away
        draft.files = {p: t for p, t in draft.files.items() if draft.owners.get(p) in draft.packages}
        again = replay(run.calls, draft.packages, draft.initial, draft.files)
        if again is None:
            return "golden"
        draft.run = again
    return None


def job_stage(draft: Draft) -> str | None:
    """A walked job whose steps did not all go through is not that job: no task (its first steps
    alone are what random walks already make); nor is one that took a step its phrase does not
    say and the work did not need (:func:`needless_step`)."""
    if not _carries_out_job(draft, draft.golden):
        return "job"
    if draft.job is not None and needless_step(draft.job, draft.golden, draft.library.graphs, draft.packages):
        return "job"
    return None


def needless_step(
    job: Job, run: GoldenRun, graphs: Mapping[str, ToolGraph], packages: Mapping[str, EnvPackage]
) -> bool:
    """Whether the walked job took a step that its phrase says nothing of alone (every parameter
    the phrase names of it, a later step takes too) and without which the run goes the same:
    a precondition the record did not need ("clean DS-007 into ... with a new recipe" profiled
    the clean DS-007 first, which the tool does not ask for; the verifier then required the
    profile, and a right run that left it out scored 0.444: round 43, R4). Such a step is no
    part of what the user asked for."""
    fields = job.template().fields()
    for found, span in job_spans(run.calls, writes(run, dict(graphs)), dict(packages)):
        if found != job:
            continue
        for k, i in enumerate(span[:-1]):
            call = run.calls[i]
            named = {f.rpartition(".")[2] for f in fields if "." not in f or f.partition(".")[0] == call.tool}
            later = {p for j in span[k + 1 :] for p in run.calls[j].args}
            if (named & set(call.args)) - later:
                continue  # the phrase says something of this step alone
            if keep_calls(run, [j for j in range(len(run.calls)) if j != i], packages) is not None:
                return True
        return False
    return False


def _carries_out_job(draft: Draft, run: GoldenRun) -> bool:
    """Whether ``run`` carries out the draft's walked job (any run, where none was walked);
    if not, ``draft.why`` says which steps it made instead."""
    if draft.job is None:
        return True
    spans = job_spans(run.calls, writes(run, draft.library.graphs), draft.packages)
    if any(job == draft.job for job, _ in spans):
        return True
    draft.why = f"{draft.job.name}: " + ", ".join(c.tool for c in run.calls)
    return False


def defaults_stage(draft: Draft) -> str | None:
    """A value the call left to the environment that the world exercises is passed (and so said)."""
    draft.run = spell_out_defaults(draft.golden, draft.packages, draft.initial, draft.files)
    return None


def cite_stage(draft: Draft) -> str | None:
    """Often, a one-environment job's record is named by a colleague's note in another
    environment that holds notes: the job then starts there (a value found in one environment
    drives the action in another, :mod:`envcraft.tasks.world.citing`)."""
    if len(draft.envs) != 1:
        return None
    rng = random.Random(f"cite:{draft.tag}")  # its own draws: a job not cited is as it was
    options = carriers(draft.library.packages, draft.envs)
    if not options or rng.random() >= P_CITE:
        return None
    carrier = draft.library.packages[rng.choice(options)]
    try:
        state, files = generate_initial({carrier.id: carrier}, draft.tag, draft.config.size)
    except GenerationError:
        return None
    cited = cite_in_note(draft.golden, draft.packages, carrier, state[carrier.id], files, rng)
    if cited is not None:
        draft.run, draft.packages, draft.cited = cited.run, cited.packages, cited.fact
        draft.owners.update(cited.owners)
        draft.envs = [*draft.envs, carrier.id]  # the job's own environment first
        draft.initial, draft.files = cited.run.initial, cited.run.files
    return None


def fact_stage(draft: Draft) -> str | None:
    """Claw tasks: often, a record the user would name is pointed at through a workspace file."""
    if draft.claw and draft.rng.random() < P_FILE_FACT:
        hidden = hide_in_file(draft.golden, draft.packages, draft.rng)
        if hidden is not None:
            draft.run, draft.fact = hidden
    draft.needs_flow = len(draft.envs) > 1 and not flows_across(draft.golden.calls)
    return None


def distractor_stage(draft: Draft) -> str | None:
    """Look-alikes of the records the task names, in S0."""
    if draft.config.distractors:
        draft.run, draft.distractors = _with_distractors(
            draft.golden, draft.packages, draft.library.graphs, draft.rng
        )
    return None


def lookup_stage(draft: Draft) -> str | None:
    """The reads that find each record the user names by description, among its look-alikes
    (:mod:`envcraft.tasks.world.lookups`): the reference does the work every solving run does."""
    rng = random.Random(f"lookup:{draft.tag}")  # its own draws: the stages after draw as before
    draft.run = with_lookups(draft.golden, draft.packages, draft.library.graphs, rng)
    return None


def request_stage(draft: Draft) -> str | None:
    """Claw tasks: a file the user asks for by content (always where values must cross envs)."""
    run = draft.golden
    if draft.claw and (draft.needs_flow or draft.rng.random() < P_REQUEST):
        names = _record_names(run, draft.packages)
        for found in (draft.fact, draft.cited):
            # the record the user pointed at is asked about by no name: its name gives the pointer
            # away, and "that booking" turns ambiguous once a later turn makes another booking
            if found is not None and getattr(found, "kind", "record") == "record":
                names.pop((found.env, found.value), None)
        draft.request = request_file(run, draft.packages, names, draft.rng, carry=draft.needs_flow)
        if draft.request is not None:
            extended = replay([*run.calls, draft.request.call], draft.packages, run.initial, run.files)
            if extended is None:
                return "request"
            draft.run = extended
    if draft.needs_flow and draft.request is None:
        return "cross_no_flow"
    return None


def depth_stage(draft: Draft) -> str | None:
    """A job of fewer reference calls than the draft's floor (``min_calls``; with a depth, the
    target once the shard has no room left for short jobs), the asked-for file and the reads
    included, is no task. Checked before the costly stages."""
    if len(draft.golden.calls) < draft.config.min_calls:
        draft.why = f"{len(draft.golden.calls)} calls"
        return "shallow"
    return None


def plan_stage(draft: Draft, renderer: IntentRenderer) -> str | None:
    """The user turns: calls grouped into turns, each goal planned, rendered in a persona's voice."""
    run, request, fact, rng = draft.golden, draft.request, draft.fact, draft.rng
    mutating = writes(run, draft.library.graphs)
    work = len(run.calls) - (request is not None)  # the asked-for file closes the last turn
    jobs = job_spans(run.calls[:work], mutating[:work], draft.packages)
    inside = {i for _, span in jobs for i in span[:-1]}  # a job's step stays with the job's next
    held = [bool(c.expected_error) or i in inside for i, c in enumerate(run.calls[:work])]
    turns = split_turns(mutating[:work], held, rng, min_turns=2)  # two asks, two turns where it has them
    if request is not None:
        if len(turns) < MAX_TURNS:
            turns.append([len(run.calls) - 1])  # the write-up asked once the work is done
        else:
            turns[-1].append(len(run.calls) - 1)
    pointers = {(fact.env, fact.value): fact.pointer} if fact is not None else {}
    leads = {(fact.env, fact.value): fact.lead} if fact is not None and fact.lead else {}
    if draft.cited is not None:
        pointers[(draft.cited.env, draft.cited.value)] = draft.cited.pointer
        leads[(draft.cited.env, draft.cited.value)] = draft.cited.lead
    quiet = quiet_defaults(run.calls, draft.packages, run.initial, run.files)
    view = ChainView(run.calls, run.initial, run.after, mutating, pointers, quiet, leads)
    skip = {len(run.calls) - 1} if request is not None else set()
    try:
        closing = request.clause if request else ""
        plan = plan_intents(view, turns, draft.packages, rng, skip=skip, closing=closing, jobs=jobs)
    except Unnameable:
        return "unnameable"
    persona = draw_persona(rng, draft.envs)
    texts = renderer.render(plan, persona)
    turn_of = {i: t for t, indices in enumerate(turns) for i in indices}
    calls = [
        ReferenceCall(turn=turn_of[i], env=c.env, tool=c.tool, args=c.args, provenance=c.provenance)
        for i, c in enumerate(run.calls)
    ]
    draft.turns, draft.plan, draft.persona = turns, plan, persona
    draft.task = Task(
        id="pending",
        envs=draft.envs,
        kind="claw" if draft.claw else "tool",
        turns=[Turn(user=t) for t in texts],
        initial_state=run.initial,
        workspace=run.files,
        verifier=Verifier(source=""),
        reference=Reference(calls=calls, final_hash=""),
        persona=persona.describe(),
        provenance=_provenance(draft.packages, draft.chain, run, draft.distractors, draft.tag, turns),
    )
    return None


def text_stage(draft: Draft) -> str | None:
    """What the turns say: every mention recorded; no leaked value, no missing user value, no
    long value or phrase said again word for word in a later turn (the text scan's
    ``repeated_values``)."""
    task, plan = draft.task, draft.plan
    assert task is not None and plan is not None
    task.provenance["mentions"] = [m.to_json() for m in plan.mentions()]
    task.provenance["goal_calls"] = sorted({i for goals in plan.turns for g in goals for i in g.calls})
    asked_jobs = [{"job": g.job, "calls": list(g.steps)} for goals in plan.turns for g in goals if g.job]
    if asked_jobs:
        task.provenance["jobs"] = asked_jobs
    if draft.job is not None and all(j["job"] != draft.job.name for j in asked_jobs):
        draft.why = f"{draft.job.name} is not asked as one outcome"
        return "job"
    if draft.request is not None:
        task.provenance["file_request"] = draft.request.to_json()
    turns = [turn.user for turn in task.turns]
    if draft.fact is not None:
        draft.fact.locate(draft.golden.calls)
        draft.fact.pointer = _as_said(draft.fact.lead, turns) or draft.fact.pointer
        task.provenance["file_fact"] = draft.fact.to_json()
    if draft.cited is not None:
        draft.cited.locate(draft.golden.calls)
        draft.cited.pointer = _as_said(draft.cited.lead, turns) or draft.cited.pointer
        task.provenance["cited_fact"] = draft.cited.to_json()
    leaks, missing = find_leaks(task), missing_user_values(task)
    task.quality.update({"leaks": leaks, "missing_user_values": missing})
    if leaks:
        return "leak"
    if missing:
        return "missing_user_value"
    if repeated_values([turn.user for turn in task.turns]):
        return "repeated_text"  # a long value or phrase said again word for word: no person does
    return None


def _as_said(phrase: str, turns: list[str]) -> str | None:
    """``phrase`` as the turns say it (the case of its first letter is the sentence's), or None
    where no turn says it: the pointer a task records is the words its user used."""
    for text in turns:
        at = text.lower().find(phrase.lower()) if phrase else -1
        if at >= 0:
            return text[at : at + len(phrase)]
    return None


def verifier_stage(draft: Draft) -> str | None:
    """The verifier from the golden outcome; then the task's hash, id and difficulty."""
    task, run, request, outcome = draft.task, draft.golden, draft.request, draft.outcome
    assert task is not None and outcome is not None
    requests = [request.file] if request is not None else []
    said = [turn.user for turn in task.turns]
    verifier = synthesize_verifier(
        run.initial, run.files, outcome, draft.distractors, turn_checks=True, requests=requests, said=said
    )
    if verifier is None:
        return "verifier"
    if request is not None and not any(
        c.get("path") == request.file.path and c["kind"] == "file" for c in verifier.checks
    ):
        return "request_unstable"
    task.verifier = verifier
    task.reference.final_hash = outcome_hash(outcome)
    task.id = task_id(task)
    task.difficulty = {"features": difficulty_features(task, run, draft.library.graphs)}
    return None


def exercised_stage(draft: Draft) -> str | None:
    """Every choice the user states is one the world puts to the test (another value the tool
    takes would end the run otherwise): checked on the golden outcome before the costly
    verifier synthesis, since long jobs state many choices."""
    assert draft.task is not None
    draft.outcome = outcome_of(draft.golden, draft.turns, draft.packages)
    if unexercised_choices(draft.task, draft.outcome, draft.packages):
        return "unexercised"  # the user states a choice the world never puts to the test
    return None


def recovery_stage(draft: Draft) -> str | None:
    """A reference that leaves undone what the environment's documentation asks for after one of
    its calls (a failed sink write sought back and replayed) is no correct run to pay for."""
    assert draft.outcome is not None
    return "unrecovered" if left_unrecovered(draft.outcome) else None


def world_stage(draft: Draft) -> str | None:
    """A world that contradicts itself (:mod:`envcraft.tasks.world.rules`) is no task."""
    assert draft.task is not None
    found = world_violations(draft.task, draft.packages, owners=draft.owners)
    if not found:
        return None
    draft.why = found[0].message
    return f"world:{found[0].kind}"


def pace_stage(draft: Draft) -> str | None:
    """A careful agent keeps pace: the reference calls still go through when the agent looks
    around before each turn's work (:func:`~envcraft.tasks.play.execute.keeps_pace`). Otherwise
    a deadline the user never mentioned lies within a careful agent's lookups: a pickup window
    that closes fails it for reading before it acts (the task would teach haste, not the work),
    and a proposal's hold that lapses asks for a recovery (propose again) that the validation's
    scripted agents do not make, so they could not show the verifier right. Validation dropped
    both before (``slow_reads``); refusing them here says why and spares the validation."""
    assert draft.outcome is not None
    if keeps_pace(draft.outcome):
        return None
    draft.why = f"the work no longer goes through after {LEADS[0]} lookups open each turn"
    return "deadline"


def validation_stage(draft: Draft, validated: Counter[str] | None) -> str | None:
    """Validation (golden, no-op, mutations, scripted agents); counted per adversarial policy."""
    assert draft.task is not None and draft.outcome is not None
    report = validate(draft.task, golden=draft.outcome)
    if validated is not None:
        validated["reached"] += 1
        validated.update(f"failed:{kind}" for kind in report.failed_policies)
        validated.update(f"applied:{kind}" for kind in sorted({trial.kind for trial, _ in report.trials}))
        if not report.failed_policies:
            validated["passed"] += 1
    if report.failed_policies:
        return f"adversarial:{report.failed_policies[0]}"
    if not report.valid:
        return "validation"
    return None


def difficulty_features(task: Task, run: GoldenRun, graphs: dict[str, ToolGraph]) -> dict[str, Any]:
    """What makes a task hard, measured on its reference (calibration adds k / pass_rate / band)."""
    goal_calls = set(task.provenance.get("goal_calls", []))
    hidden = sum(c.source(a).hidden for c in task.reference.calls for a in c.args)
    read_files = {
        str(c.args.get("path"))
        for c in task.reference.calls
        if c.tool in ("read_file", "list_files") and isinstance(c.args, dict)
    }
    written = {p for i in range(len(run.calls)) for p in run.touched_files(i)}
    return {
        "calls": len(task.reference.calls),
        "writes": sum(writes(run, graphs)),
        "reads": len(task.reference.calls) - sum(writes(run, graphs)),
        "goals_stated": len(goal_calls),
        "turns": len(task.turns),
        "hidden_values": hidden,
        "named_records": sum(c.source(a).kind == "named" for c in task.reference.calls for a in c.args),
        "envs": len(task.envs),
        "distractors": len(task.provenance.get("distractors", [])),
        "files_read": len(read_files),
        "files_written": len(written),
        "file_request": "file_request" in task.provenance,
        "error_recovery": bool(task.provenance.get("steps")),
        "user_words": sum(len(t.user.split()) for t in task.turns),
    }


def _record_names(run: GoldenRun, packages: dict[str, EnvPackage]) -> dict[tuple[str, str], str]:
    """How a person names each S0 record the chain's calls mention (for the file request)."""
    names: dict[tuple[str, str], str] = {}
    for call in run.calls:
        book = phrasebook(packages[call.env])
        state = run.initial[call.env]
        for value in scalars(call.args):
            collection = book.collection_of(state, value)
            if collection is None:
                continue
            name = book.name_of(state, collection, value)
            if name is None and book.entity(collection).id_known:
                name = book.id_phrase(collection, value)
            if name is not None:
                names[(call.env, value)] = name
        for collection, key in book.keyed_by_args(state, call.args):
            name = book.name_of(state, collection, key)
            if name is not None:
                names.setdefault((call.env, key), name)
    return names


class GenerationError(RuntimeError):
    """An environment's ``generate`` crashed or produced a state its own model rejects."""


def generate_initial(
    packages: dict[str, EnvPackage], tag: str, size: int, owners: dict[str, str] | None = None
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Each environment's seeded S0, and the shared workspace (templates + generated files);
    ``owners``, if given, gets the environment that made each file.

    Generators are environment code: any exception becomes :class:`GenerationError`, so one
    broken generator seed costs one task, not the run.
    """
    initial: dict[str, dict[str, Any]] = {}
    files: dict[str, str] = {}
    for env, package in packages.items():
        seed = generator_seed(tag, env)
        try:
            generated = package.env_class.generate(seed=seed, size=size, data=package.data)
            initial[env] = package.env_class.State.model_validate(
                generated.state.model_dump(mode="json")
            ).model_dump(mode="json")
        except Exception as exc:
            log.warning("%s.generate(seed=%s) failed: %r", env, seed, exc)
            raise GenerationError(f"{env}: {exc!r}") from exc
        if package.kind == "claw":
            made = {**package.workspace_template, **generated.files}
            files.update(made)
            if owners is not None:
                owners.update(dict.fromkeys(made, env))
    return initial, files


def _with_distractors(
    run: GoldenRun, packages: dict[str, EnvPackage], graphs: dict[str, ToolGraph], rng: random.Random
) -> tuple[GoldenRun, list[dict[str, Any]]]:
    """The same run on S0 with near-duplicates of its targets, if it still works unchanged there
    (same outcomes, derived values still describable, distractors untouched) and the
    environment's lookups still work with them; else the run as it was."""
    seed = rng.random()
    named = _named_in_args(run, packages)

    def still_nameable(env: str, state: dict[str, Any]) -> bool:
        """Every record the calls name can still be told apart (or quoted by its id)."""
        book = phrasebook(packages[env])
        for collection, key in named.get(env, []):
            if book.name_of(state, collection, key) is None and not book.entity(collection).id_known:
                return False
        return True

    calls = [(c.env, c.tool, c.args) for c in run.calls]
    expected = {i for i, c in enumerate(run.calls) if c.expected_error}

    def accepted(distractor: Distractor, states: dict[str, dict[str, Any]]) -> bool:
        """The tools accept the look-alike where the chain writes to its original."""
        refusal = lookalike_refusal(calls, expected, packages, states, run.files, distractor.to_json())
        return refusal is None

    for limit in (MAX_DISTRACTORS, 1):
        states, made = add_distractors(
            run.initial,
            run.targets,
            packages,
            random.Random(seed),
            limit=limit,
            files=run.files,
            accept=still_nameable,
            usable=accepted,
        )
        if not made:
            break
        if any(
            breaks_lookups(packages[e], graphs[e], states[e], made, run.files) for e in {d.env for d in made}
        ):
            continue
        again = replay(run.calls, packages, states, run.files)
        if again is not None and not _touches(again, made):
            return again, [d.to_json() for d in made]
    return run, []


def _named_in_args(run: GoldenRun, packages: dict[str, EnvPackage]) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for call in run.calls:
        book = phrasebook(packages[call.env])
        for value in scalars(call.args):
            collection = book.collection_of(run.initial[call.env], value)
            if collection is not None:
                found.setdefault(call.env, []).append((collection, value))
    return found


def _touches(run: GoldenRun, made: list[Distractor]) -> bool:
    for d in made:
        for change in diff(run.initial[d.env], run.final[d.env]):
            if change["path"] == d.path or change["path"].startswith(d.path + "/"):
                return True
    return False


def _provenance(
    packages: dict[str, EnvPackage],
    chain: list[Step],
    run: GoldenRun,
    distractors: list[dict[str, Any]],
    tag: str,
    turns: list[list[int]],
) -> dict[str, Any]:
    provenance: dict[str, Any] = {
        "generator": "envcraft.tasks.synth",
        "seed": tag,
        "walk": [f"{s.env}.{s.tool}" for s in chain],
        "targets": run.targets,
        "distractors": distractors,
        "turn_calls": turns,
        "hints": [{k: h.to_json() for k, h in c.hints.items()} for c in run.calls],
        "steps": [
            {"call": i, "kind": "error_recovery", "expected_error": c.expected_error}
            for i, c in enumerate(run.calls)
            if c.expected_error
        ],
    }
    external = {e: str(p.root) for e, p in packages.items() if p.root.parent != BUILTIN_ROOT}
    if external:
        provenance["packages"] = external
    return provenance


def task_id(task: Task) -> str:
    """A content hash: the same chain on the same S0 always gets the same id."""
    body = canonical_json(
        {
            "envs": task.envs,
            "calls": [c.model_dump() for c in task.reference.calls],
            "initial": task.initial_state,
            "workspace": task.workspace,
        }
    )
    return f"{task.envs[0]}-{hashlib.sha256(body.encode()).hexdigest()[:12]}"


def dedupe_key(task: Task) -> str:
    """Tasks that ask for the same thing in the same words with the same calls collapse to one
    (the same calls on another S0 name other records, so they are another task)."""
    return canonical_json(
        [[c.env, c.tool, c.args] for c in task.reference.calls] + [t.user for t in task.turns]
    )


def merge(shards: list[ShardResult], library: Library) -> tuple[list[Task], dict[str, Any]]:
    """Shard outputs in shard order, duplicates removed, plus the set's statistics."""
    tasks: list[Task] = []
    seen: set[str] = set()
    duplicates = 0
    for shard in shards:
        for task in shard.tasks:
            key = dedupe_key(task)
            if key in seen:
                duplicates += 1
                continue
            seen.add(key)
            tasks.append(task)
    stats = corpus_stats(tasks, library.graphs, shards)
    stats["duplicates_removed"] = duplicates
    return tasks, stats
