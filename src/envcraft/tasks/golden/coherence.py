"""One coherent job per task: the golden run cut down to steps that serve it.

A random walk proposes tools; the golden run executes them. What comes out is often not a
job a person would ask for: lookups whose answer nothing uses, a step that acts on a record
no other step touches, a request whose effect already held, a step that takes back what an
earlier one did. :func:`tidy` turns a golden run into one coherent job or says why it cannot:

* a step that should change something but changes nothing (its effect already held in S0,
  timestamps and counters aside), or that the tool itself reports changed nothing (``"changed":
  false``: a stage re-run on inputs that did not change only logs the run), is left out, and the
  chain with it when later steps depend on it (``no_effect``);
* read-only steps whose results no later step uses are left out (the run is replayed), with a
  refusal planned before one of them (a planned refusal stays only with the call recovering from it);
* each step after the first must use an entity an earlier step produced, read or acted on
  (an argument taken from a result, or a record or value an earlier call also had); the chain
  is cut before the first that does not (``flow`` when nothing useful is left). The first step
  in another environment is exempt: the worlds share no records, and what a crossing task
  carries across is checked by the synthesis (a value in free text or in an asked-for file);
* a step that undoes an earlier one (a declared ``undoes`` on a shared record, a voiding step on
  a record an earlier step changed, a value put back where an earlier step changed it, free text
  an earlier step wrote rewritten) rejects the chain (``undo``), and so does the same request
  made twice, also when only its free text differs (``repeat``); with ``salvage`` the job up
  to that step is kept instead (the walk went on past a job; what came before it is one, and a
  deeper corpus grows it from there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.core.phrasing import Job
from envcraft.core.state import MISSING, canonical_json, get_path, objects_in
from envcraft.tasks.format.model import GoldenCall
from envcraft.tasks.golden.choose import scalars
from envcraft.tasks.golden.run import GoldenRun, bookkeeping, keep_calls, passed_texts
from envcraft.tasks.graphs.graph import ToolGraph
from envcraft.tasks.phrasing.intents import FREE_TEXT_PARAMS
from envcraft.tasks.phrasing.phrasebook import is_time, phrasebook
from envcraft.tasks.values.args import flatten


def writes(run: GoldenRun, graphs: Mapping[str, ToolGraph]) -> list[bool]:
    """Per call: a successful call of a tool that changes things and did change something."""
    return [
        c.ok and graphs[c.env].nodes[c.tool].mutates and run.changed_by(i) for i, c in enumerate(run.calls)
    ]


def effects(run: GoldenRun, i: int) -> list[tuple[str, dict[str, Any]]]:
    """What call ``i`` changed, apart from bookkeeping (timestamps and top-level counters). A
    time the call was given (a pickup moved to 15:35) is what it was asked to do, not bookkeeping."""
    passed = passed_texts(run.calls[i])
    return [(env, change) for env, change in run.changes(i) if not bookkeeping(change, passed)]


def tidy(
    run: GoldenRun,
    packages: Mapping[str, EnvPackage],
    graphs: Mapping[str, ToolGraph],
    skip_gaps: bool = False,
    salvage: bool = False,
) -> tuple[GoldenRun | None, str]:
    """The coherent job in ``run`` and ``"ok"``, or ``(None, reason)`` (see the module docstring;
    ``skip_gaps``: steps on unrelated records are left out, not the rest of the run cut;
    ``salvage``: a step that takes back or repeats an earlier one ends the job, cut before it
    with a refusal planned just before it, instead of rejecting the run: a deeper corpus
    grows the job from there)."""
    idle = {
        i
        for i, call in enumerate(run.calls)
        if call.ok
        and graphs[call.env].nodes[call.tool].mutates
        and not graphs[call.env].nodes[call.tool].system
        and ((not effects(run, i) and not run.touched_files(i)) or call.result.get("changed") is False)
    }
    idle |= {i - 1 for i in idle if i > 0 and run.calls[i - 1].expected_error}  # its planned refusal too
    if idle:  # a request whose effect already holds is no request: the step goes, the rest replays
        kept = [i for i in range(len(run.calls)) if i not in idle]
        left = keep_calls(run, kept, packages) if kept else None
        if left is None:
            return None, "no_effect"
        run = left
    pruned, reason = _prune_reads(run, packages, graphs)
    if pruned is None:
        return None, reason
    current, reason = _cut_at_gap(pruned, packages, graphs, skip_gaps)
    if current is None:
        return None, reason
    at, reason = _undoing(current, packages), "undo"
    if at is None:
        at, reason = _repeated(current, graphs), "repeat"
    if at is not None:
        while salvage and at > 0 and current.calls[at - 1].expected_error:
            at -= 1
        shorter = keep_calls(current, list(range(at)), packages) if salvage and at > 0 else None
        if shorter is None:
            return None, reason
        return tidy(shorter, packages, graphs, skip_gaps, salvage)
    if not any(writes(current, graphs)):
        return None, "no_effect"
    return current, "ok"


def job_spans(
    calls: Sequence[GoldenCall], wrote: Sequence[bool], packages: Mapping[str, EnvPackage]
) -> list[tuple[Job, list[int]]]:
    """The declared jobs (:class:`envcraft.core.phrasing.Job`) a run's writes carry out, each
    with the indices of its state-changing steps: those tools in order as consecutive writes of
    its environment (reads may sit between them; no planned refusal), each step after the first
    on a record an earlier step named or answered (a step naming no record, an export of the
    whole desk, goes with any), and on the record an earlier step made where it needs one of
    that kind (the item just added, never another of the owner's items a listing gave first; an
    optional link, a to-do's message, may name any); a record a step acts on that the job's
    phrase leaves unsaid is one an earlier step named, made or answered as its own (a swap books
    the cancelled booking's member). The longest job first where two start at one step; no step
    serves two jobs. A person asks for such a span as one outcome."""
    acts = [i for i, c in enumerate(calls) if wrote[i] or c.expected_error]
    spans: list[tuple[Job, list[int]]] = []
    at = 0
    while at < len(acts):
        env = calls[acts[at]].env
        package = packages.get(env)
        jobs = [(job, job_writes(job, package)) for job in package.env_class.jobs] if package else []
        found = None
        for job, writes_of in sorted(jobs, key=lambda pair: -len(pair[1])):
            span = acts[at : at + len(writes_of)]
            if (
                _carries_out(writes_of, calls, span, package)
                and _reached(job, calls[span[-1]])
                and _one_subject(job, calls, span, package)
            ):
                found = (job, span)
                break
        if found is None:
            at += 1
            continue
        spans.append(found)
        at += len(found[1])
    return spans


def _reached(job: Job, last: GoldenCall) -> bool:
    """Whether the job's last step answered the outcome its goal states (:attr:`Job.reaches`):
    "get the request on its way ...: the driver takes it and the rider confirms" of a confirm
    the rider declined asks for what cannot happen (round 48, R1: a careful agent scored 0.0)."""
    result = last.result if isinstance(last.result, dict) else {}
    return all(result.get(key) == value for key, value in job.reaches.items())


def _one_subject(job: Job, calls: Sequence[GoldenCall], span: list[int], package: EnvPackage | None) -> bool:
    """Whether each record a step acts on that the job's phrase leaves unsaid is one an earlier
    step named, made, or answered as its own record: "swap {booking_id} for a seat in
    {session_id}" books the booking's member, never the member the cancel promoted from the
    waitlist (round 51, R4: the reference booked Priya Silva where the user said Luca
    Adeyemi's booking; every right run scored 0.389)."""
    if package is None:
        return True
    tools, said = package.env_class.tools, job.template().fields()
    own: set[Any] = set()  # what the steps so far named or made, and their own records' values
    for n, i in enumerate(span):
        call = calls[i]
        spec = tools.get(call.tool)
        if spec is None:
            continue
        required = spec.parameters.get("required", [])
        unsaid = [p for p in required if not _said_by(job, said, call.tool, p, tools)]
        if n and any(_identifying_value(call.args.get(p)) and call.args.get(p) not in own for p in unsaid):
            return False
        named = _identifying(call.args)
        result = call.result if isinstance(call.result, dict) else {}
        own |= named | {result.get(kind) for kind in spec.annotations.produces}
        for record in objects_in(result):  # the records it answered that hold what it named
            values = {v for v in record.values() if _identifying_value(v)}  # their own fields
            if values & named:
                own |= values
    return True


def _said_by(job: Job, said: set[str], tool: str, param: str, tools: Mapping[str, Any]) -> bool:
    """Whether the job's phrase (its placeholders ``said``) says ``tool``'s ``param``: as
    ``{tool.param}``, or as ``{param}`` where ``tool`` is the first step that takes it."""
    if f"{tool}.{param}" in said:
        return True
    first = next((t for t in job.steps if t in tools and param in tools[t].parameters["properties"]), None)
    return param in said and first == tool


def job_writes(job: Job, package: EnvPackage | None) -> tuple[str, ...]:
    """A job's steps that change things (its lookups left out)."""
    tools = package.env_class.tools if package is not None else {}
    return tuple(s for s in job.steps if s not in tools or not tools[s].annotations.read_only)


def _carries_out(
    steps: tuple[str, ...], calls: Sequence[GoldenCall], span: list[int], package: EnvPackage | None
) -> bool:
    if len(span) != len(steps):
        return False
    if any(calls[i].expected_error or calls[i].tool != step for i, step in zip(span, steps, strict=True)):
        return False
    if len({calls[i].env for i in span}) != 1:
        return False
    seen: set[Any] = set()
    made: dict[str, set[Any]] = {}  # the ids of the records a step made, by kind ("item_id")
    for i in range(span[0], span[-1] + 1):
        call, values = calls[i], _identifying(calls[i].args)
        answered = {v for _, v in flatten(call.result) if _identifying_value(v)}
        if i not in span:  # a lookup between the steps on what they touched: its answer counts
            if call.ok and call.env == calls[span[0]].env and values & seen:
                seen |= answered
            continue
        if i != span[0] and values and not values & seen:
            return False
        spec = package.env_class.tools.get(call.tool) if package is not None else None
        required = spec.parameters.get("required", []) if spec is not None else []
        if any(name in made and name in call.args and call.args[name] not in made[name] for name in required):
            return False  # another record than the step before made: the first of a listing by owner
        seen |= values | answered
        for kind in spec.annotations.produces if spec is not None else ():
            if isinstance(call.result, dict) and _identifying_value(call.result.get(kind)):
                made.setdefault(kind, set()).add(call.result[kind])
    return True


def _repeated(run: GoldenRun, graphs: Mapping[str, ToolGraph]) -> int | None:
    """The first call that makes the same request again, if any: identical calls, or two
    successful writes of one tool on the same records that differ only in their free text (a
    reply drafted twice to one message), or the same act made on what it just made (a forward
    of the new forward to the same address: round 51). The second has no purpose. A planned
    failure and its corrected call are one request, not two."""
    done, targets = set(), set()
    made: list[GoldenCall] = []  # the successful writes so far
    for i, (call, wrote) in enumerate(zip(run.calls, writes(run, graphs), strict=True)):
        if wrote or call.expected_error:
            key = (call.env, call.tool, canonical_json(call.args))
            if key in done:
                return i
            done.add(key)
        if wrote:
            fixed = {k: v for k, v in call.args.items() if not FREE_TEXT_PARAMS.search(k)}
            if fixed and len(fixed) < len(call.args):
                target = (call.env, call.tool, canonical_json(fixed))
                if target in targets:
                    return i
                targets.add(target)
            if any(_on_its_own_output(call, earlier) for earlier in made):
                return i
            made.append(call)
    return None


def _on_its_own_output(call: GoldenCall, earlier: GoldenCall) -> bool:
    """Whether ``call`` makes ``earlier``'s request again on the record ``earlier`` made: the
    same tool and arguments (free text aside), but for one naming what ``earlier`` returned."""
    if (call.env, call.tool) != (earlier.env, earlier.tool) or set(call.args) != set(earlier.args):
        return False
    output = set(scalars(earlier.result))
    fixed = [k for k in call.args if not FREE_TEXT_PARAMS.search(k)]
    moved = [k for k in fixed if not _same(call.args[k], earlier.args[k])]
    return bool(moved) and all(isinstance(call.args[k], str) and call.args[k] in output for k in moved)


def _prune_reads(
    run: GoldenRun, packages: Mapping[str, EnvPackage], graphs: Mapping[str, ToolGraph]
) -> tuple[GoldenRun | None, str]:
    mutating = writes(run, graphs)
    keep = _with_feeders(run, {i for i in range(len(run.calls)) if mutating[i]})
    # a planned refusal stays with the call that recovers from it (the next one): a lookup whose
    # answer nothing uses goes, and the refusal planned before it too ("try to read partition 0
    # of audit; if that is not possible, process partition 0 of refunds" asks for nothing)
    keep = _with_feeders(
        run, keep | {i for i, c in enumerate(run.calls) if c.expected_error and i + 1 in keep}
    )
    if len(keep) == len(run.calls):
        return run, "ok"
    pruned = keep_calls(run, sorted(keep), packages)
    return (pruned, "ok") if pruned is not None else (None, "prune")


def _with_feeders(run: GoldenRun, keep: set[int]) -> set[int]:
    """``keep`` and the calls whose results the kept calls' arguments came from, transitively."""
    keep = set(keep)
    more = keep
    while more:
        more = set().union(*(_feeders(run, i) for i in more)) - keep
        keep |= more
    return keep


def _feeders(run: GoldenRun, i: int) -> set[int]:
    found = set()
    for arg in run.calls[i].args:
        source = run.calls[i].source(arg)
        if source.from_call and source.call is not None:
            found.add(source.call)
    return found


def _cut_at_gap(
    run: GoldenRun, packages: Mapping[str, EnvPackage], graphs: Mapping[str, ToolGraph], skip: bool = False
) -> tuple[GoldenRun | None, str]:
    """The run up to its first step on nothing the job so far touched; with ``skip`` (a deeper
    corpus), the run without every such step (reserve an order, count another bin, ship the
    order: the count goes, the shipment stays), replayed."""
    seen: set[Any] = set()
    gaps: list[int] = []
    for i, call in enumerate(run.calls):
        values = _identifying(call.args)
        linked = bool(_feeders(run, i)) or bool(values & seen) or bool(set(run.touched_files(i)) & seen)
        # a step naming no record (an export of the whole desk) that follows a step of its job
        linked |= not values and any(
            c.env == call.env and _job_order(packages[call.env], c.tool, call.tool) for c in run.calls[:i]
        )
        # the first step in another environment shares no records with the first one; the value a
        # crossing task must carry across comes later (free text, or the file the user asks for)
        crossing = all(c.env != call.env for c in run.calls[:i])
        if i > 0 and not linked and not crossing and not run.calls[i - 1].expected_error:
            gaps.append(i)
            if not skip:
                break
            continue
        seen |= values | {v for _, v in flatten(call.result) if _identifying_value(v)}
        seen |= set(run.touched_files(i))
    if not gaps:
        return run, "ok"
    kept = [i for i in range(len(run.calls)) if i not in gaps] if skip else list(range(gaps[0]))
    wrote = writes(run, graphs)
    if not any(wrote[i] for i in kept):
        return None, "flow"
    cut = keep_calls(run, kept, packages)
    return (cut, "ok") if cut is not None else (None, "flow")


def _identifying(args: Mapping[str, Any]) -> set[Any]:
    return {
        v
        for name, value in args.items()
        if not FREE_TEXT_PARAMS.search(name)
        for v in scalars(value)
        if _identifying_value(v)
    }


def _identifying_value(value: Any) -> bool:
    return isinstance(value, str) and len(value) >= 3 and " " not in value.strip() and not is_time(value)


def _undoing(run: GoldenRun, packages: Mapping[str, EnvPackage]) -> int | None:
    """The first step that takes back an earlier one, if any: the tool it undoes, on a shared
    record; any earlier change to the record a voiding tool voids (a coach assigned to a class, then the
    class cancelled: the assignment had no purpose); the undone step made again on exactly the
    records the voiding one named (a member's booking cancelled, then the member booked into that
    class again; another class is a move, and a job); a value put back; free text rewritten."""
    for j, later in enumerate(run.calls):
        if not later.ok:
            continue
        undone = phrasebook(packages[later.env]).undoes.get(later.tool, ())
        later_ids = _identifying(later.args)
        voided = _voided(later, packages) if undone else set()
        for i in range(j):
            earlier = run.calls[i]
            if earlier.env != later.env or not earlier.ok:
                continue
            earlier_ids = _identifying(earlier.args) | {
                v for _, v in flatten(earlier.result) if _identifying_value(v)
            }
            if earlier.tool in undone and later_ids & earlier_ids:
                return j
            redone = phrasebook(packages[earlier.env]).undoes.get(earlier.tool, ())
            if later.tool in redone and later_ids and later_ids <= earlier_ids:
                return j  # the undone step made again as it was: a booking cancelled, then rebooked
            if voided & earlier_ids and run.changed_by(i) and not earlier.expected_error:
                return j  # (its result counts: a series booked, then one of its classes cancelled)
        if _restores(run, j, packages) or _overwrites(run, j, packages):
            return j
    return None


def _voided(call: GoldenCall, packages: Mapping[str, EnvPackage]) -> set[Any]:
    """The ids of the records a voiding call (one declared to undo others) names by the kinds it
    consumes: the class ``cancel_class`` cancels, not the reason it gives."""
    spec = packages[call.env].env_class.tools[call.tool]
    kinds = set(spec.annotations.consumes)
    return {v for name, v in call.args.items() if name in kinds and _identifying_value(v)}


def _overwrites(run: GoldenRun, j: int, packages: Mapping[str, EnvPackage]) -> bool:
    """Call ``j`` replaces text an earlier call of the chain wrote (a reply drafted, then its body
    rewritten): the earlier step had no purpose, unless the two are a declared job's steps in
    that order (a to-do added, then ticked off). Appending to it is fine."""
    for env, change in effects(run, j):
        before = change.get("before")
        if not (isinstance(before, str) and " " in before.strip()):
            continue
        if any(
            run.calls[i].env == env
            and _wrote(run, i, env, change["path"])
            and not _job_order(packages[env], run.calls[i].tool, run.calls[j].tool)
            for i in range(j)
        ):
            return True
    for path in run.touched_files(j):
        old, new = run.before(j).files.get(path), run.steps[j].files.get(path)
        if old is None or new is None:
            continue
        lost = {line for line in set(old.splitlines()) - set(new.splitlines()) if len(line.split()) >= 4}
        for i in range(j):
            if path in run.touched_files(i) and not _job_order(
                packages[run.calls[i].env], run.calls[i].tool, run.calls[j].tool
            ):
                added = set((run.steps[i].files.get(path) or "").splitlines()) - set(
                    (run.before(i).files.get(path) or "").splitlines()
                )
                if added & lost:
                    return True
    return False


def _wrote(run: GoldenRun, i: int, env: str, path: str) -> bool:
    return any(c["path"] == path or path.startswith(c["path"] + "/") for e, c in run.changes(i) if e == env)


def _restores(run: GoldenRun, j: int, packages: Mapping[str, EnvPackage]) -> bool:
    """Call ``j`` puts a value back to what it was before an earlier call changed it, unless
    the two are steps of a declared job in that order (a reservation shipped: the later step
    uses up what the earlier one set aside)."""
    for env, change in effects(run, j):
        path = change["path"]
        for i in range(j):
            if run.calls[i].env != env or _job_order(packages[env], run.calls[i].tool, run.calls[j].tool):
                continue
            before = get_path(run.before(i).final[env], path)
            after = get_path(run.after(i)[env], path)
            if before is MISSING or _same(before, after):
                continue
            if _same(get_path(run.after(j)[env], path), before):
                return True
    return False


def _job_order(package: EnvPackage, first: str, then: str) -> bool:
    """Whether some job of ``package`` has a step ``first`` followed later by a step ``then``."""
    return any(
        first in job.steps and then in job.steps[job.steps.index(first) + 1 :]
        for job in package.env_class.jobs
    )


def _same(a: Any, b: Any) -> bool:
    return a == b and type(a) is type(b)
