"""Facts that live in another environment: a colleague's note there names the record to act on.

The paper's workflow graph is about work where a value found in one environment drives the
action in another. Two worlds share no records, so a chain that merely visits both carries
nothing across. :func:`cite_in_note` makes the crossing real: it takes a record the job acts
on that the user would have named (the order to refund, the run to cancel), and has a colleague
name it in a note left in another environment that holds notes (a mail in the inbox, through
:meth:`~envcraft.core.environment.Environment.leave_note`), among look-alikes the note says are
already handled. The user points at the note instead ("the order that the message “Orders
still open” from Dana Li says still needs doing"); the reference reads the note with that
environment's own tool, and every argument that carried the record is labelled
``cited:<read call>.<path>`` (:class:`envcraft.tasks.format.model.Source`).

The note names only real records of S0 by their declared names, and what it adds (which one
is still open) is nowhere in either state, so it contradicts neither world. The verifier is
untouched: the goals stay the effects on the named record; an agent that acts on a sibling the
note calls handled fails them (the ``file_decoy`` policy plays it for every cited task too).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envcraft.core.environment import Environment, Initial
from envcraft.core.package import EnvPackage
from envcraft.tasks.format.model import GoldenCall
from envcraft.tasks.golden.run import GoldenRun, LiveSessions, replay
from envcraft.tasks.phrasing.phrasebook import join_words, phrasebook
from envcraft.tasks.phrasing.words import a, capital, plural
from envcraft.tasks.values.args import flatten
from envcraft.tasks.world.hiding import (
    MAX_DECOYS,
    MIN_DECOYS,
    record_candidates,
    record_label,
    relabel,
    shifted,
    without_idle_reads,
)

# (subject, text): {noun}, {nouns}, {Nouns}, {target}, {others}, {are}, {s}, {them}; the look-alikes
# may be done or pending, so the note says only that they need nothing now, and the user points at the one it
# says needs attention (SAYS). It names no day, not even "today": the carrier's clock may run
# days after theirs (round 26, DA: "the trips from yesterday" of trips a week old; round 44, R1
# and R3: "Waitlist places for today" sent on January 12 of classes on January 10)
NOTES = (
    (
        "{Nouns} on my list",
        "Quick update on the {nouns} on my list: {others} {are} sorted, but {target} still needs "
        "attention. Could you take care of it?",
    ),
    (
        "One more {noun}",
        "I went through the {nouns} on my list: {others} need{s} nothing from you, {target} does.",
    ),
    (
        "Re: the {noun} list",
        "Of the {nouns} we talked about, only {target} still needs attention. {others} {are} already "
        "handled, no need to touch {them}.",
    ),
)

SAYS = "says still needs attention"


@dataclass
class CitedFact:
    """One record the user points at through a note in another environment (``provenance``)."""

    env: str  # the environment holding the record
    collection: str
    value: str  # the record's key
    carrier: str  # the environment holding the note
    note: str  # the note's key there (a message id)
    pointer: str  # how the user points at the record, as the turns say it (the lead, where said)
    decoys: list[str]  # siblings the note also names, as handled
    read_call: int  # the reference call that reads the note
    # the pointer as a sentence of its own, said before the work on "that <noun>" ("The message
    # “Runs on my list” from Marta Klein says a run still needs attention"); not stored
    lead: str = ""

    def locate(self, calls: list[GoldenCall]) -> None:
        """Find the read again in ``calls`` (a later stage may insert calls before it)."""
        self.read_call = next(
            i for i, c in enumerate(calls) if c.env == self.carrier and self.note in c.args.values()
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "record",
            "env": self.env,
            "collection": self.collection,
            "value": self.value,
            "carrier": self.carrier,
            "note": self.note,
            "pointer": self.pointer,
            "decoys": self.decoys,
            "read_call": self.read_call,
        }


@dataclass
class Cited:
    """The run with the note read first, its environments and S0, and what was cited."""

    run: GoldenRun
    packages: dict[str, EnvPackage]
    owners: dict[str, str]  # the carrier's workspace files -> the carrier
    fact: CitedFact


def carriers(library: Mapping[str, EnvPackage], envs: list[str]) -> list[str]:
    """Environments of the library, other than the run's, whose worlds hold notes, and whose
    clock starts no earlier than every one of the run's: the note is written just before the
    carrier's session starts, so it is never dated before the records it names (a mail of
    January 12 about action items created on February 18 contradicts both worlds)."""
    default = getattr(Environment.leave_note, "__func__", None)
    latest = max(library[env].clock.base_time for env in envs)
    return [
        env
        for env, package in sorted(library.items())
        if env not in envs
        and getattr(package.env_class.leave_note, "__func__", None) is not default
        and package.clock.base_time >= latest
    ]


def cite_in_note(
    run: GoldenRun,
    packages: Mapping[str, EnvPackage],
    carrier: EnvPackage,
    carrier_state: dict[str, Any],
    carrier_files: dict[str, str],
    rng: random.Random,
) -> Cited | None:
    """The run with one user-named record cited by a colleague's note in ``carrier`` (whose
    generated S0 is ``carrier_state`` and ``carrier_files``) and read there before the first call
    that needs it; None when no record of the run has enough unnamed siblings, the note does not
    fit the carrier's world or workspace, or the run no longer replays unchanged."""
    found = [c for c in record_candidates(run, packages) if c.env != carrier.id]
    if not found or any(path in run.files for path in carrier_files):
        return None
    pick = rng.choice(found)
    decoys = list(pick.decoys[: rng.randint(MIN_DECOYS, min(MAX_DECOYS, len(pick.decoys)))])
    book = phrasebook(packages[pick.env])
    state = run.initial[pick.env]
    noun = book.entity(pick.collection).noun
    subject, template = rng.choice(NOTES)
    labels = [_label(record_label(book, state, pick.collection, k)) for k in decoys]
    text = template.format(
        noun=noun,
        nouns=plural(noun),
        target=_label(record_label(book, state, pick.collection, pick.value)),
        others=join_words(labels),
        are="is" if len(labels) == 1 else "are",
        s="s" if len(labels) == 1 else "",
        them="it" if len(labels) == 1 else "them",
    )
    text = capital(text)
    subject = subject.format(noun=noun, Noun=capital(noun), Nouns=capital(plural(noun)))
    note = _leave(carrier, carrier_state, carrier_files, subject, text, rng.randrange(2**31))
    if note is None:
        return None
    carrier_state, carrier_files, collection, key = note
    read = _reader(carrier, carrier_state, carrier_files, key, text)
    if read is None:
        return None
    tool, param, path = read
    envs = {**packages, carrier.id: carrier}
    initial = {**run.initial, carrier.id: carrier_state}
    files = {**run.files, **carrier_files}
    label = f"cited:{pick.call}.{path}"
    calls = [c if c.env != pick.env else relabel(c, pick.value, label) for c in shifted(run.calls, pick.call)]
    calls.insert(pick.call, GoldenCall(carrier.id, tool, {param: key}, {param: "named"}, {}))
    again = replay(calls, envs, initial, files)
    if again is None or not again.calls[pick.call].ok:
        return None
    again = without_idle_reads(again, envs, keep=pick.call)
    if again is None:
        return None
    at = next(i for i, c in enumerate(again.calls) if c.env == carrier.id and c.args == {param: key})
    called = phrasebook(carrier).name_of(carrier_state, collection, key)
    if called is None:
        return None
    pointer = f"the {noun} that {called} {SAYS}"
    lead = f"{called} says {a(noun)} {SAYS.removeprefix('says ')}"
    fact = CitedFact(pick.env, pick.collection, pick.value, carrier.id, key, pointer, decoys, at, lead)
    return Cited(again, envs, dict.fromkeys(carrier_files, carrier.id), fact)


def _leave(
    carrier: EnvPackage, state: dict[str, Any], files: dict[str, str], subject: str, text: str, seed: int
) -> tuple[dict[str, Any], dict[str, str], str, str] | None:
    """The carrier's S0 with the note left in it (state, files), and the note's (collection, key)."""
    model = carrier.env_class.State.model_validate(state)
    initial = Initial(state=model, files=dict(files))
    try:
        made = carrier.env_class.leave_note(initial, subject, text, seed)
    except Exception:  # environment code: a note that does not fit costs one task, not the run
        return None
    if made is None:
        return None
    after = carrier.env_class.State.model_validate(initial.state.model_dump(mode="json"))
    if carrier.env_class.rule_violations(after, initial.files):
        return None
    return after.model_dump(mode="json"), initial.files, made[0], made[1]


def _reader(
    carrier: EnvPackage, state: dict[str, Any], files: dict[str, str], key: str, text: str
) -> tuple[str, str, str] | None:
    """The carrier's read-only tool that opens the note by its key alone, and the result path of
    the note's text: (tool, parameter, path). Found by calling each candidate on the note, in one
    session (a read-only call leaves the note's text as it is)."""
    with LiveSessions({carrier.id: carrier}, {carrier.id: state}, files) as live:
        for name, spec in sorted(carrier.env_class.tools.items()):
            required = spec.parameters.get("required", [])
            if not spec.annotations.read_only or len(required) != 1:
                continue
            result = live.call(carrier.id, name, {required[0]: key})
            path = next(
                (p for p, v in flatten(result) if isinstance(v, str) and text in v and "." not in p), None
            )
            if path is not None:
                return name, required[0], path
    return None


def _label(text: str) -> str:
    """A record's label as a colleague types it: without the addresses inside its name
    ("ORD-100003 (Elena Nguyen placed on November 15)", not "(Elena Nguyen (elena@...) ...)")."""
    return re.sub(r" \([^()\s]+@[^()\s]+\)", "", text)
