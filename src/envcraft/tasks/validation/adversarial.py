"""Adversarial validation: scripted agents, right and wrong, scored like any agent.

Mutating the golden outcome only shows that a verifier notices a change of its own golden
run. These policies play the task for real, the way plausible agents would, in fresh
sessions from S0 (one :class:`~envcraft.tasks.play.episode.Episode` each); an argument the
reference took from an earlier result is re-read from the policy's own results, as an agent
would. Their outcomes go through the task's verifier in the isolated worker, exactly as
``envcraft tasks score`` scores a trajectory.

Wrong agents must score below 1:

* ``skip_turn`` - leaves out one user turn's work (each turn that asks for something);
* ``stop_early`` - does the first turn and stops;
* ``wrong_entity`` - does a requested step to a look-alike (a distractor) or a sibling record
  instead of the one the user named;
* ``file_decoy`` - in a task whose user points at a record through a workspace file
  (``provenance["file_fact"]``, see :mod:`envcraft.tasks.world.hiding`) or a colleague's note in
  another environment (``provenance["cited_fact"]``, :mod:`envcraft.tasks.world.citing`), acts
  on another record the same file or note lists instead of the one it points at;
* ``reads_only`` - only looks things up;
* ``extra_write`` - does the work plus one change nobody asked for (a requested kind of step
  applied to an unrelated record; in Claw tasks also an unrelated workspace file overwritten);
* ``early_turn`` - does a later turn's work already in the turn before, when the user had not
  asked for it yet (the end of the run is the golden one's);
* ``unasked_write`` - does the work plus a write of another kind, with a tool the reference
  never uses, on a record nobody named (flagging another message);
* ``extra_line`` - writes a file the user asked for with one of its lines twice;
* ``negation`` - writes the user's dictated text negated (a "not" put in, or taken out);
* ``retraction`` - writes the dictated text and then a sentence that withdraws it.

Right agents must score exactly 1:

* ``extra_reads`` - harmless lookups before, between and after the steps (the clock moves);
* ``slow_reads`` - ten lookups before each turn's work (the clock moves further than in the
  correct variants the verifier was built from);
* ``reorder`` - two adjacent independent steps of a turn swapped;
* ``repeat_reads`` - every lookup (or one diagnostic) repeated, also at the very end;
* ``file_equivalent`` - in Claw tasks, every file the reference writes with a file tool is
  written through the shell instead;
* ``shell_read`` - in Claw tasks, every file the reference reads with the file tool is read
  with ``cat`` in the shell instead;
* ``cosmetic_text`` - writes the dictated text lower-cased, with curly quotes and apostrophes and
  without its final full stop, a message or a note inside a greeting and a sign-off;
* ``bare_address`` - writes every ``Name <address>`` e-mail address as the bare address.

The four text policies apply to tasks with such text (free text the user dictates, or
addresses with a display name), in any call but a file write; the three that rewrite dictated
text only in calls that write (a lookup's query is read by no verifier: rewriting it proves
nothing, and counting it inflated the share that held).

A policy that cannot be built for a task (no second turn, no independent pair, ...) is not
applicable; every applicable one must come out as expected, else the task is dropped.
"""

from __future__ import annotations

import base64
import copy
import random
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from envcraft.core.errors import is_error
from envcraft.core.package import EnvPackage
from envcraft.core.pointer import escape_token, unescape_token
from envcraft.core.state import canonical_json, diff, get_path
from envcraft.tasks.format.model import Source, Task
from envcraft.tasks.graphs.effects import tool_effects
from envcraft.tasks.phrasing.phrasebook import is_time, phrasebook
from envcraft.tasks.play.episode import Episode
from envcraft.tasks.play.execute import late_runs, tail_runs
from envcraft.tasks.play.outcome import Outcome
from envcraft.tasks.values.args import StateIndex, user_values, value_at
from envcraft.tasks.verifier.checks import BODY_PARAMS
from envcraft.tasks.verifier.runtime import untimed

Expect = Literal["below_1", "exactly_1"]
WRONG: tuple[str, ...] = (
    "skip_turn",
    "stop_early",
    "wrong_entity",
    "file_decoy",
    "reads_only",
    "extra_write",
    "early_turn",
    "unasked_write",
    "extra_line",
    "negation",
    "retraction",
)
RIGHT: tuple[str, ...] = (
    "extra_reads",
    "slow_reads",
    "reorder",
    "repeat_reads",
    "file_equivalent",
    "shell_read",
    "cosmetic_text",
    "bare_address",
)
SLOW_READS = 10  # lookups before each turn in ``slow_reads`` (audit agents read this much before acting)
FILE_TOOLS = frozenset({"write_file", "edit_file"})
READ_SYSTEM = ("list_files", "read_file")
ATTEMPTS = 3  # look-alikes or siblings tried per record before a policy gives up

Call = dict[str, Any]  # {"env", "tool", "args", "ref"?: reference index, "provenance"?}


@dataclass
class Trial:
    """One scripted agent's run of a task."""

    kind: str
    expect: Expect
    outcome: Outcome
    note: str = ""

    def passes(self, score: float) -> bool:
        return score < 1.0 - 1e-9 if self.expect == "below_1" else score >= 1.0 - 1e-9


@dataclass
class Adversary:
    """Builds and plays the policies of one task (see the module docstring)."""

    task: Task
    packages: Mapping[str, EnvPackage]
    seed: str = "adversary"
    reference: list[list[Call]] = field(init=False)
    rng: random.Random = field(init=False)
    indexes: dict[str, StateIndex] = field(init=False)
    _golden: Outcome = field(init=False)
    # outcomes by call list: policies often build the same run (a one-turn task's skipped turn is
    # its reads-only run when it reads nothing), and a run is a function of its calls
    _played: dict[str, Outcome] = field(init=False, default_factory=dict)
    # per environment, the paths the world changes by itself after the golden end or while a
    # correct agent reads first (:meth:`_moving`), found once per golden run
    _moves: dict[str, set[str]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"{self.seed}:{self.task.id}")
        self.reference = [[] for _ in self.task.turns]
        for index, call in enumerate(self.task.reference.calls):
            self.reference[call.turn].append(
                {
                    "env": call.env,
                    "tool": call.tool,
                    "args": call.args,
                    "ref": index,
                    "provenance": call.provenance,
                }
            )
        self.indexes = {
            env: StateIndex.build(state, self.task.workspace)
            for env, state in self.task.initial_state.items()
        }

    # -- playing ---------------------------------------------------------------------------------
    def play(self, turns: Sequence[Sequence[Call]]) -> Outcome:
        """Play ``turns`` from S0; reference arguments taken from results are re-read from this run.
        The same calls played again give the outcome of the first play (do not change it);
        turns left off at the end are played as empty turns."""
        padding: list[list[Call]] = [
            [] for _ in range(len(self.task.turns) - len(turns))
        ]  # as _play ends them
        key = canonical_json([*turns, *padding])
        if key not in self._played:
            self._played[key] = self._play(turns)
        return self._played[key]

    def _play(self, turns: Sequence[Sequence[Call]]) -> Outcome:
        with Episode(self.packages, self.task.initial_state, self.task.workspace) as episode:
            results: dict[int, dict[str, Any]] = {}
            for calls in turns:
                for call in calls:
                    args = self._rebind(call, results)
                    result = episode.call(call["env"], call["tool"], args)
                    if "ref" in call:
                        results[call["ref"]] = result
                episode.end_turn()
            for _ in range(len(self.task.turns) - len(turns)):
                episode.end_turn()
            return episode.outcome()

    def _rebind(self, call: Call, results: Mapping[int, dict[str, Any]]) -> Any:
        args = call["args"]
        if not isinstance(args, dict) or "ref" not in call:
            return args
        rebound = dict(args)
        for name, label in call.get("provenance", {}).items():
            source = Source.parse(label)
            if not source.from_call or source.call is None or source.call not in results:
                continue
            old = value_at(self._golden_result(source.call), source.path or "")
            new = value_at(results[source.call], source.path or "")
            if new is None or old is None or old == new:
                continue
            value = args.get(name)
            if value == old:
                rebound[name] = copy.deepcopy(new)
            elif value == [old]:
                rebound[name] = [copy.deepcopy(new)]
            elif isinstance(value, str) and isinstance(old, str) and old in value and isinstance(new, str):
                rebound[name] = value.replace(old, new)
        return rebound

    def _golden_result(self, index: int) -> dict[str, Any]:
        """The reference call's result in the golden run (its actions are the reference calls)."""
        return self._golden.actions[index].result

    # -- policies --------------------------------------------------------------------------------
    def trials(self, golden: Outcome) -> tuple[list[Trial], list[str]]:
        """Every applicable policy played once (``skip_turn``: once per turn), and the kinds that
        do not apply to this task."""
        self._golden = golden
        self._played.clear()  # arguments re-read from results depend on the golden run
        self._moves.clear()
        trials: list[Trial] = []
        missing: list[str] = []
        for kind in (*WRONG, *RIGHT):
            built = getattr(self, f"_{kind}")()
            if not built:
                missing.append(kind)
            trials += built
        return trials, missing

    def _goal_turns(self) -> list[int]:
        return [t for t, calls in enumerate(self.reference) if any(self._writes(c) for c in calls)]

    def _writes(self, call: Call) -> bool:
        return call["tool"] not in READ_SYSTEM and not _read_only(self.packages[call["env"]], call["tool"])

    def _skip_turn(self) -> list[Trial]:
        out = []
        for t in self._goal_turns():
            turns = [[] if i == t else calls for i, calls in enumerate(self.reference)]
            out.append(Trial("skip_turn", "below_1", self.play(turns), f"turn {t + 1}"))
        return out

    def _stop_early(self) -> list[Trial]:
        if len(self.reference) < 2:
            return []
        return [Trial("stop_early", "below_1", self.play(self.reference[:1]))]

    def _reads_only(self) -> list[Trial]:
        turns = [[c for c in calls if not self._writes(c)] for calls in self.reference]
        return [Trial("reads_only", "below_1", self.play(turns))]

    def _wrong_entity(self) -> list[Trial]:
        distractors = {d["of"]: d["path"] for d in self.task.provenance.get("distractors", []) if "of" in d}
        for t, calls in enumerate(self.reference):
            for n, call in enumerate(calls):
                if not self._writes(call) or not isinstance(call["args"], dict):
                    continue
                book = phrasebook(self.packages[call["env"]])
                state = self.task.initial_state[call["env"]]
                for arg, value in call["args"].items():
                    if Source.parse(call["provenance"].get(arg, "user")).from_call:
                        continue
                    collection = book.collection_of(state, value)
                    if collection is None:
                        continue
                    for other in self._siblings(state, collection, value, distractors):
                        wrong = {**call, "args": {**call["args"], arg: other}, "provenance": {}}
                        wrong.pop("ref")
                        turns = [list(c) for c in self.reference]
                        turns[t][n] = wrong
                        outcome = self.play(turns)
                        made = [a for a in outcome.actions if a.turn == t]
                        if n < len(made) and not is_error(made[n].result):
                            return [Trial("wrong_entity", "below_1", outcome, f"{value} -> {other}")]
        return []

    def _file_decoy(self) -> list[Trial]:
        trials: list[Trial] = []
        for key, kind in (("file_fact", "file"), ("cited_fact", "cited")):
            fact = self.task.provenance.get(key)
            if isinstance(fact, dict):
                trials += self._decoys(fact["value"], fact["decoys"], kind)
        return trials

    def _decoys(self, value: Any, decoys: list[Any], kind: str) -> list[Trial]:
        """The reference acting on a look-alike the file or note also lists, for each argument
        it read there as ``value`` (the first decoy whose call goes through, else the first)."""
        first = None
        for decoy in decoys[:ATTEMPTS]:
            turns = [[_swap_read_value(c, value, decoy, kind) for c in calls] for calls in self.reference]
            outcome = self.play(turns)
            trial = Trial("file_decoy", "below_1", outcome, f"{value} -> {decoy}")
            swapped = [a for a in outcome.actions if decoy in _scalars(a.args)]
            if swapped and not any(is_error(a.result) for a in swapped):
                return [trial]  # the mistake went through: the verifier alone must catch it
            first = first or trial
        return [first] if first is not None else []

    def _siblings(
        self, state: Mapping[str, Any], collection: str, key: str, distractors: Mapping[str, str]
    ) -> list[str]:
        """Records an agent could mistake for ``key``: its look-alike first, then the siblings most
        like it (most equal fields: they meet the same preconditions)."""
        path = f"/{escape_token(collection)}/{escape_token(key)}"
        first = [unescape_token(distractors[path].rsplit("/", 1)[-1])] if path in distractors else []
        named = {str(v) for c in self.task.reference.calls for v in _scalars(c.args)}
        records = state.get(collection, {})
        target = records.get(key, {})
        others = [k for k in sorted(records) if k != key and k not in named and k not in first]
        self.rng.shuffle(others)
        others.sort(key=lambda k: -sum(records[k].get(f) == v for f, v in target.items()))
        return (first + others)[:ATTEMPTS]

    def _extra_write(self) -> list[Trial]:
        out = []
        named = {str(v) for c in self.task.reference.calls for v in _scalars(c.args)}
        writes = [
            c for calls in self.reference for c in calls if self._writes(c) and c["tool"] not in FILE_TOOLS
        ]
        done = False
        for call in writes:
            if done or not isinstance(call["args"], dict):
                break
            book = phrasebook(self.packages[call["env"]])
            state = self.task.initial_state[call["env"]]
            for arg, value in call["args"].items():
                collection = book.collection_of(state, value)
                if collection is None or book.is_log(collection):
                    continue
                others = [k for k in sorted(state.get(collection, {})) if k not in named]
                self.rng.shuffle(others)
                for other in others[:ATTEMPTS]:
                    extra = {"env": call["env"], "tool": call["tool"], "args": {**call["args"], arg: other}}
                    turns = [list(c) for c in self.reference]
                    turns[-1].append(extra)
                    outcome = self.play(turns)
                    if not is_error(outcome.actions[-1].result) and self._harmful(outcome):
                        out.append(Trial("extra_write", "below_1", outcome, f"{call['tool']} on {other}"))
                        done = True
                        break
                if done:
                    break
        claw = next((e for e in self.task.envs if self.packages[e].kind == "claw"), None)
        if claw is not None:
            touched = {p for calls in self.reference for c in calls for p in _paths(c)}
            untouched = [
                p
                for p in sorted(self.task.workspace)
                if p not in touched and self._golden.files.get(p) == self.task.workspace[p]
            ]
            if untouched:
                path = self.rng.choice(untouched)
                extra = {
                    "env": claw,
                    "tool": "write_file",
                    "args": {"path": path, "content": "overwritten\n"},
                }
                turns = [list(c) for c in self.reference]
                turns[-1].append(extra)
                out.append(Trial("extra_write", "below_1", self.play(turns), f"overwrite {path}"))
        return out

    def _early_turn(self) -> list[Trial]:
        for t in self._goal_turns():
            if t == 0:
                continue
            turns = [list(c) for c in self.reference]
            turns[t - 1] += turns[t]
            turns[t] = []
            return [Trial("early_turn", "below_1", self.play(turns), f"turn {t + 1} done in turn {t}")]
        return []

    def _unasked_write(self) -> list[Trial]:
        """A write tool the reference never calls, on records nobody named, that went through
        and changed a record in a way a user would mind."""
        used = {(c["env"], c["tool"]) for calls in self.reference for c in calls}
        named = {str(v) for c in self.task.reference.calls for v in _scalars(c.args)}
        for env, package in sorted(self.packages.items()):
            index = self.indexes[env]
            for name, spec in sorted(package.env_class.tools.items()):
                if (env, name) in used or name in FILE_TOOLS or _read_only(package, name):
                    continue
                if package.kind == "claw" and name not in package.env_class.__dict__:
                    continue  # a system tool (shell, files): extra_write covers the workspace
                if not self._writes_records(package, name):
                    continue  # only logs and counters (a health check): a diagnostic, not harm
                args = self._args_for(spec.parameters, index)
                if args is None or any(str(v) in named for v in _scalars(args)):
                    continue  # a note on the record the work is about is no side effect
                turns = [list(c) for c in self.reference]
                turns[-1].append({"env": env, "tool": name, "args": args})
                outcome = self.play(turns)
                if not is_error(outcome.actions[-1].result) and self._harmful(outcome):
                    return [Trial("unasked_write", "below_1", outcome, f"{name} {args}")]
        return []

    @staticmethod
    def _writes_records(package: EnvPackage, tool: str) -> bool:
        book = phrasebook(package)
        effects = tool_effects(package.env_class).get(tool)
        written = effects.writes if effects is not None else set()
        return any(c in book.collections and not book.is_log(c) for c in written)

    def _extra_line(self) -> list[Trial]:
        for t, calls in enumerate(self.reference):
            for n, call in enumerate(calls):
                args = call["args"]
                if call["tool"] != "write_file" or not isinstance(args, dict):
                    continue
                lines = str(args.get("content", "")).splitlines()
                filled = [line for line in lines if line.strip()]
                if not filled or self._golden.files.get(args.get("path", "")) is None:
                    continue
                doubled = "\n".join([*lines, filled[-1]]) + "\n"
                turns = [list(c) for c in self.reference]
                turns[t][n] = {**call, "args": {**args, "content": doubled}}
                return [Trial("extra_line", "below_1", self.play(turns), f"{args['path']}: a line twice")]
        return []

    def _moving(self, env: str) -> set[str]:
        """The paths of ``env`` where a tail or late run of the golden run ends otherwise than
        the golden run: what the world changes by itself."""
        if env not in self._moves:
            gold = self._golden.final[env]
            runs = [*tail_runs(self._golden), *late_runs(self._golden)]
            self._moves[env] = {c["path"] for run in runs for c in diff(gold, run.final[env])}
        return self._moves[env]

    def _harmful(self, outcome: Outcome) -> bool:
        """Whether a run changed a record the golden run left alone in a way a user would mind
        (not only log records, free fields, counters or timestamps), or a workspace file (a line
        the golden run's file lacks: a note appended to an incident's record). A record the golden
        run changes may end otherwise only because the extra call moved the clock (a drain that
        completes), and so may one the world changes by itself while a correct agent idles or
        reads first (a flight cancelled by a scheduled event): neither is the extra call's harm."""
        for env, final in outcome.final.items():
            book = phrasebook(self.packages[env])
            gold, start = self._golden.final[env], self._golden.initial[env]
            moving = self._moving(env)
            for change in diff(gold, final):
                if change["path"] in moving:
                    continue
                parts = change["path"].split("/")
                collection = unescape_token(parts[1]) if len(parts) > 1 else ""
                if collection not in book.collections or book.is_log(collection) or len(parts) < 3:
                    continue
                if len(parts) > 3 and unescape_token(parts[3]) in book.free_fields(collection):
                    continue
                if is_time(change.get("after")) or is_time(change.get("before")):
                    continue
                record = "/".join(parts[:3])
                if get_path(gold, record) != get_path(start, record):
                    continue  # the work's own record: the clock's doing
                return True
        gold_files = self._golden.files
        for path in set(gold_files) | set(outcome.files):
            mine, theirs = outcome.files.get(path), gold_files.get(path)
            if mine is None or theirs is None:
                if mine != theirs:
                    return True
                continue
            if {untimed(line) for line in mine.splitlines()} - {
                untimed(line) for line in theirs.splitlines()
            }:
                return True
        return False

    def _extra_reads(self) -> list[Trial]:
        reads = self._read_calls(2 * len(self.task.reference.calls) + 4)
        if not reads:
            return []
        turns: list[list[Call]] = []
        for calls in self.reference:
            mixed: list[Call] = []
            for call in calls:
                if reads:
                    mixed.append(reads.pop())
                mixed.append(call)
            turns.append(mixed)
        turns[-1] += reads
        return [Trial("extra_reads", "exactly_1", self.play(turns))]

    def _slow_reads(self) -> list[Trial]:
        """Lookups before each turn's work: the agent looks around before it acts."""
        reads = self._read_calls(SLOW_READS * len(self.reference))
        if not reads:
            return []
        turns = [
            [*(reads.pop() for _ in range(SLOW_READS)), *calls] if calls else [] for calls in self.reference
        ]
        return [
            Trial(
                "slow_reads", "exactly_1", self.play(turns), f"{SLOW_READS} lookups before each turn's work"
            )
        ]

    def _reorder(self) -> list[Trial]:
        for t, calls in enumerate(self.reference):
            for n in range(len(calls) - 1):
                a, b = calls[n], calls[n + 1]
                if not (self._writes(a) or self._writes(b)) or not self._independent(a, b):
                    continue
                turns = [list(c) for c in self.reference]
                turns[t][n], turns[t][n + 1] = b, a
                outcome = self.play(turns)
                ok = [not is_error(x.result) for x in outcome.actions]
                if all(ok) or ok == [not is_error(x.result) for x in self._golden.actions]:
                    return [
                        Trial("reorder", "exactly_1", outcome, f"turn {t + 1}: {a['tool']} <-> {b['tool']}")
                    ]
        return []

    def _independent(self, a: Call, b: Call) -> bool:
        """No data flows between the two calls and neither touches what the other reads or
        writes (by the static effects of their tools)."""
        if a["env"] == b["env"]:
            effects = tool_effects(self.packages[a["env"]].env_class)
            ea, eb = effects.get(a["tool"]), effects.get(b["tool"])
            if ea is None or eb is None:
                return False
            if (ea.writes & (eb.reads | eb.writes)) or (eb.writes & ea.reads):
                return False
            if (ea.ws_writes & (eb.ws_reads | eb.ws_writes)) or (eb.ws_writes & ea.ws_reads):
                return False
        for later, earlier in ((b, a), (a, b)):
            for label in later.get("provenance", {}).values():
                source = Source.parse(label)
                if source.from_call and source.call == earlier.get("ref"):
                    return False
                if source.kind == "file" and source.path in _paths(earlier):
                    return False  # the value comes from the file the other call reads
        ids_a = {str(v) for v in _scalars(a["args"]) if isinstance(v, str) and len(v) >= 3}
        ids_b = {str(v) for v in _scalars(b["args"]) if isinstance(v, str) and len(v) >= 3}
        if ids_a & ids_b or a.get("expected_error") or b.get("expected_error"):
            return False
        planned = {s["call"] for s in self.task.provenance.get("steps", [])}
        return (
            a.get("ref") not in planned
            and b.get("ref") not in planned
            and set(_paths(a)).isdisjoint(_paths(b))
        )

    def _repeat_reads(self) -> list[Trial]:
        reads = [c for calls in self.reference for c in calls if not self._writes(c)]
        if not reads:
            reads = self._read_calls(1)
            if not reads:
                return []
            turns = [list(c) for c in self.reference]
            turns[-1] += reads * 3
            return [
                Trial("repeat_reads", "exactly_1", self.play(turns), "a diagnostic three times at the end")
            ]
        turns = []
        for calls in self.reference:
            doubled: list[Call] = []
            for call in calls:
                doubled.append(call)
                if not self._writes(call):
                    doubled.append(call)
            turns.append(doubled)
        turns[-1] += [{k: v for k, v in c.items() if k != "ref"} for c in reads]
        return [Trial("repeat_reads", "exactly_1", self.play(turns))]

    def _file_equivalent(self) -> list[Trial]:
        if not any(c["tool"] in FILE_TOOLS for calls in self.reference for c in calls):
            return []
        turns = []
        for calls in self.reference:
            swapped = []
            for call in calls:
                if call["tool"] == "write_file" and isinstance(call["args"], dict):
                    swapped.append(
                        {
                            "env": call["env"],
                            "tool": "shell",
                            "args": {"command": shell_write(call["args"]["path"], call["args"]["content"])},
                            "ref": call["ref"],
                        }
                    )
                else:
                    swapped.append(call)
            turns.append(swapped)
        if turns == self.reference:
            return []
        return [Trial("file_equivalent", "exactly_1", self.play(turns), "file writes through the shell")]

    def _shell_read(self) -> list[Trial]:
        turns = [[_shell_cat(c) for c in calls] for calls in self.reference]
        if turns == self.reference:
            return []
        return [Trial("shell_read", "exactly_1", self.play(turns), "file reads through the shell")]

    def _negation(self) -> list[Trial]:
        return self._rewritten("negation", "below_1", lambda arg, text: negated(text))

    def _retraction(self) -> list[Trial]:
        return self._rewritten("retraction", "below_1", lambda arg, text: f"{text}\n\n{RETRACTION}")

    def _cosmetic_text(self) -> list[Trial]:
        return self._rewritten("cosmetic_text", "exactly_1", cosmetic)

    def _bare_address(self) -> list[Trial]:
        turns = [[_map_args(c, _bare_addresses) for c in calls] for calls in self.reference]
        if turns == self.reference:
            return []
        return [Trial("bare_address", "exactly_1", self.play(turns), "display names dropped")]

    def _rewritten(self, kind: str, expect: Expect, change: Any) -> list[Trial]:
        """The reference with every dictated text (see :func:`dictated`) of a write changed by
        ``change``. A lookup's words (a search query) are left alone: no verifier reads them, so
        a lookup rewritten is no run of this kind, and a task whose only text is a lookup's is
        not one these policies apply to."""
        turns = [
            [
                {**c, "args": {**c["args"], **{a: change(a, c["args"][a]) for a in texts}}}
                if self._writes(c)
                and (texts := [a for a in dictated(c) if not self._keys_a_record(c["env"], c["args"][a])])
                else c
                for c in calls
            ]
            for calls in self.reference
        ]
        if turns == self.reference:
            return []
        return [Trial(kind, expect, self.play(turns))]

    def _keys_a_record(self, env: str, value: str) -> bool:
        """Whether ``value`` is the key of a record (a counter's name): it names, it is not said."""
        states = (self.task.initial_state.get(env, {}), self._golden.final.get(env, {}))
        return any(isinstance(field, dict) and value in field for state in states for field in state.values())

    def _read_calls(self, count: int) -> list[Call]:
        """Lookups a curious agent might make: read-only tools with arguments from S0."""
        options: list[Call] = []
        for env, package in self.packages.items():
            index = self.indexes[env]
            for name, spec in sorted(package.env_class.tools.items()):
                if not spec.annotations.exclusive or not _read_only(package, name):
                    continue
                args = self._args_for(spec.parameters, index)
                if args is not None:
                    options.append({"env": env, "tool": name, "args": args})
            if package.kind == "claw" and self.task.workspace:
                path = self.rng.choice(sorted(self.task.workspace))
                options.append({"env": env, "tool": "read_file", "args": {"path": path}})
                options.append({"env": env, "tool": "list_files", "args": {}})
        if not options:
            return []
        return [copy.deepcopy(self.rng.choice(options)) for _ in range(count)]

    def _args_for(self, schema: Mapping[str, Any], index: StateIndex) -> dict[str, Any] | None:
        args: dict[str, Any] = {}
        for param in schema["required"]:
            prop = schema["properties"][param]
            values = user_values(param, prop, index, self.rng, limit=4)
            if not values:
                return None
            args[param] = values[0]
        return args


RETRACTION = "Correction: please disregard this message."
_AUXILIARY = re.compile(r"\b(is|are|am|was|were|will|can|could|should|would|do|does|did|has|have)\b", re.I)
_NEGATION = re.compile(r"\s*\b(not|never|no)\b|n't\b", re.I)
_NAMED_ADDRESS = re.compile(r"\s*[^<>@]*<\s*([^<>\s@]+@[^<>\s@]+)\s*>\s*")


def dictated(call: Call) -> list[str]:
    """The arguments of a call that hold free text the user states (a message, a note, a reason,
    a title; a composed text that carries a value from a result counts too): strings of several
    words, neither addresses nor a file's content."""
    args = call.get("args")
    if call["tool"] in FILE_TOOLS or not isinstance(args, dict):
        return []
    return [
        name
        for name, value in args.items()
        if isinstance(value, str)
        and " " in value.strip()
        and "@" not in value
        and Source.parse(call.get("provenance", {}).get(name, "user")).kind in ("user", "embed")
    ]


def negated(text: str) -> str:
    """The text saying the opposite: its first negation taken out, else a "not" after its first
    auxiliary verb, else "Not" in front."""
    if _NEGATION.search(text):
        return _NEGATION.sub("", text, count=1)
    if _AUXILIARY.search(text):
        return _AUXILIARY.sub(lambda m: m.group(0) + " not", text, count=1)
    return "Not " + text[:1].lower() + text[1:]


def cosmetic(arg: str, text: str) -> str:
    """The same words as a hurried agent writes them: lower-cased, curly quotes and apostrophes,
    no final full stop; a message or a note also inside a greeting and a sign-off."""
    plain = text.strip().rstrip(".").lower().replace("'", "\u2019").replace('"', "\u201d")
    return f"Hi,\n\n{plain}\n\nThanks!" if arg in BODY_PARAMS else plain


def _bare_addresses(value: Any) -> Any:
    if isinstance(value, list):
        return [_bare_addresses(v) for v in value]
    named = _NAMED_ADDRESS.fullmatch(value) if isinstance(value, str) else None
    return named.group(1) if named is not None else value


def _map_args(call: Call, change: Any) -> Call:
    args = call.get("args")
    if call["tool"] in FILE_TOOLS or not isinstance(args, dict):
        return call
    changed = {name: change(value) for name, value in args.items()}
    return call if changed == args else {**call, "args": changed}


def _read_only(package: EnvPackage, tool: str) -> bool:
    """A lookup: declared read-only, or (undeclared) a tool whose code writes nothing."""
    spec = package.env_class.tools.get(tool)
    if spec is None:
        return False
    if spec.annotations.read_only is not None:
        return spec.annotations.read_only
    effects = tool_effects(package.env_class).get(tool)
    return effects is not None and not (effects.writes or effects.ws_writes)


def shell_write(path: str, content: str) -> str:
    """A shell command that writes ``content`` to ``path`` exactly (what an agent at a prompt does)."""
    encoded = base64.b64encode(content.encode("utf-8")).decode("ascii")
    folder = path.rsplit("/", 1)[0] if "/" in path else "."
    return f"mkdir -p {shlex.quote(folder)} && echo {encoded} | base64 -d > {shlex.quote(path)}"


def _shell_cat(call: Call) -> Call:
    """A ``read_file`` call as the shell ``cat`` an agent at a prompt would type instead."""
    args = call.get("args")
    if call["tool"] != "read_file" or not isinstance(args, dict) or "path" not in args:
        return call
    return {"env": call["env"], "tool": "shell", "args": {"command": f"cat {shlex.quote(args['path'])}"}}


def _swap_read_value(call: Call, value: str, other: str, kind: str) -> Call:
    """``call`` with every argument the reference read from a workspace file or a note (source
    ``kind``) as ``value`` set to ``other`` (a look-alike the same file or note lists)."""
    args, provenance = call.get("args"), call.get("provenance", {})
    if not isinstance(args, dict):
        return call
    swap = [a for a, v in args.items() if v == value and Source.parse(provenance.get(a, "")).kind == kind]
    if not swap:
        return call
    return {**call, "args": {**args, **dict.fromkeys(swap, other)}}


def _paths(call: Call) -> list[str]:
    args = call.get("args")
    if not isinstance(args, dict):
        return []
    return [
        str(v)
        for k, v in args.items()
        if k in ("path", "output_path", "file", "file_path") and isinstance(v, str)
    ]


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    return [value]
