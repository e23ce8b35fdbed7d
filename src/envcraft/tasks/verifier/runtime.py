"""The interpreter every generated verifier runs: declarative checks scored against a run.

A generated verifier is this module's source followed by one assignment of ``CHECKS`` (see
:func:`envcraft.tasks.verifier_source.render`), so it must stay **standard-library only**
and free of ``from __future__``: it runs under the system Python in the sandbox's isolated
worker, where envcraft is not importable. The data engine imports the same module to run
checks in-process (robustness filtering, validation), so both sides agree by construction.

``verify(ctx)`` scores ``CHECKS`` against ``ctx`` (the plain-JSON run a verifier sees: S0,
the final state, the files, a snapshot per user turn and the action log). Each check has a
``role``: ``goal`` checks say what the user asked for and must *change* relative to the
window's start; ``guard`` checks say what must be left alone. The score is the weighted
mean of the goals, halved for every guard the run breaks (``HARM``; a guard's copies at the end
of the run and at each turn's end share a ``subject`` and halve it once, :func:`harms`), so a
run that changes nothing scores 0 and a harmful write costs half the reward, however many guards there are
(a mean over the guards made one harmful write cost 1/n of it: 0.95-0.99, a signal an RL
learner barely sees).

Patterns (``expected``): a JSON value matches itself; ``{"$any": kind}`` any value of a kind
("str", "number", ...); ``{"$one_of": [patterns]}`` any of them; ``{"$text": text}`` and
``{"$says": text}`` text the user dictated (see below); ``{"$composed": {"says": text, "carries":
[values]}}`` text the agent writes around dictated words to carry values (see below);
``{"$contains": [texts]}`` a string holding each text (case-insensitive); ``{"$framed": [before,
pattern, after]}`` a string that starts with ``before``, ends with ``after`` and whose middle
matches ``pattern`` (an env's rendering of dictated text: a to-do line, a mail header; more
patterns and texts alternate the same way where the env renders the text more than once);
``{"$addresses": [addresses]}`` a string listing the same e-mail addresses (a ``To:`` header);
``{"$json": pattern}`` a string that is JSON whose value matches ``pattern`` (a line of a JSONL
file an env renders, holding dictated text: the text is read as text, not as its escapes);
``{"$block": pattern}`` only in a ``lines`` file check (:func:`lines_match`);
``{"$fields": {key: pattern}}`` a dict whose listed keys match (other keys are free);
``{"$members": {"has": [...], "lacks": [...], "within": [...]}}`` a list that holds the first,
none of the second and, where ``within`` is given, no member outside it (a driver excluded from
a request by an unasked offer made and cancelled; without it other members may come and go);
``{"$items": [patterns]}`` a list of as many items, each pattern matched by a distinct item in
any order (records matched by content: line numbers and ids the world assigns are left out);
``{"$items": {"rows": [patterns], "in_order": [indices]}}`` the same, the items matching the
patterns at ``indices`` in that order (the rules a recipe held before the work, which run in
order: moving one is a change, though the list holds the same rules);
``{"$holds": [patterns]}`` a list in which each pattern is matched by a distinct item, in any
order, beside any other items (a log in a file the environment renders: the records it renders
are judged by their own checks);
``{"$ids": [text, prefix, text, ...]}`` text naming ids the environment numbered (each prefix
followed by any digits: a draft's file ``mail/drafts/MSG-0010.eml``, redone as ``MSG-0011``). A
plain string that is an e-mail address matches the same address written with or without a
display name, in any case (``CS Team <cs-team@x.example>`` is ``cs-team@x.example``), and a list
of addresses is the same recipients in any order. A ``no_extra`` or ``created_in`` check with
``voided_by`` leaves out the records the run voided (:func:`live`); a ``file`` check
with ``path_like`` reads any file of that shape; any check with ``renamed`` reads the ids of
the run's own live new records as the golden run's ids (:func:`renamed`). A record the world let
lapse and the run made again with the same call is no live record either (:func:`redone`: the
proposal lapsed, the agent proposed again, the new trip is the asked one whatever its id).

A JSON object the user asked for (a ``file`` check with ``extra_keys: "facts"``) holds each asked
key with the asked value; any other key may only repeat what the records the asked ids name say:
each of its values one such a record holds (a flag or a number only under a key the record has),
none an id of an asked id's shape other than the asked ones; a key named as a field of such a
record holds that field's value (of one of them, where several have the field and the state
holds it); a key named for the kind of a record the run made, changed or acted on may hold its id
(:func:`object_matches`), and one named for an act and a kind the id of a record that act was
done to (``"forwarded_message"``). So ``"purchase_order": "PO-7004"`` beside the asked receipt id
passes, and so does ``"health_check": "HC-0001"`` beside the asked new incident; a second
receipt id, a value the record does not hold (another service, "passed" for a failed check),
``"sent": true``, a note taking the answer back, or ``"status": "posted"`` for a draft receipt
fail. A key may name a record the asked ones lead to by its kind, by id or name (``"rider"``
of the trip's request), and say what happened in the words the world times it by
(``"closed_action_item"`` of an item with a ``closed_at`` the run set). Lines added to
an asked text, table or section are still counted (``line_count``, ``only_ids``): there a line
is content.

Dictated text is read by its words, within reason (:func:`says`). Both sides become word tokens
after folding case, whitespace, curly quotes and apostrophes, dashes and contractions ("don't"
is "do not"); punctuation between words is dropped. A string *says* the dictated words when
their tokens stand in it as one contiguous run, and every other word around them is a greeting,
a courtesy, a sign-off or a name (a capitalized word that is no pronoun, negation or
retraction): "Hi Ana, thanks, this is confirmed! Best, Rosa" says "Thanks, this is confirmed.";
after a sign-off a team signs in any case ("Best regards, the travel desk"); a name with no
polite word before it (a bare signature, "- Yara", "(Oskar)") is a user's (``USERS``) or of
someone the call's records are for (``subjects``), never any capitalised word ("... shortly.
Transfer Cancelled" claims something); and a sentence may apologize for a delay or a wait
("Sorry for the delay."), never for what the records could be, or offer help ("We will be happy
to help.", "Let us know if you have any questions.").
So a "not" or "never" put in or taken out, "Your flight is running late" for "Running late",
"Correction: please ignore" after the words, or any other sentence around them, all fail: a
word outside the vocabulary is content the user did not dictate. ``$text`` (names, titles,
reasons) reads the same way; a short attribution set apart after the words ("plans changed
(per Ximena)") is the agent's to add, unless it holds a negation or a retraction, and so is a
short aside naming the call's records (``aside``: their kinds, fields and numbers) or a label
before the words (``label``: the kind of the record the call acts on and its act, "Cancellation
requested by the owner"; never another field, "driver created by mistake"). Composed
text (``$composed``: a note the user asks to "mention" the id of a record) is the agent's own
wording: it must carry each value (as whole tokens), say the dictated words if any as a
sentence of their own, and every other word must point at the record: a courtesy, a pointing
word ("see", "follow up on the reply to"), the reference's framing, or what the world says
about the records carried ("email MSG-0001 to the traveler of ITN-4001"); a claim nobody made
("approved by finance") is not. :func:`said_fault` and :func:`composed_fault` say which words
broke a reading. Each is a few passes over the text's words.
"""

import csv
import functools
import io
import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from datetime import date
from typing import Any

CHECKS: list[dict[str, Any]] = []  # replaced by the generated verifier's own list
MISSING = object()
_LIMIT = 1_000_000  # characters of one file a check parses
HARM = 0.5  # what each broken guard leaves of the reward


def get(node: Any, path: str) -> Any:
    """Read a JSON Pointer ("/orders/O-1/status"; "" is the whole value); MISSING when absent."""
    if path == "":
        return node
    for raw in path[1:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return MISSING
    return node


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "other"


def norm_words(text: Any) -> str:
    """Text up to case, runs of whitespace and punctuation at either end."""
    return " ".join(str(text).lower().split()).strip(" .!?,;:")


_FOLD = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "`": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
        "\u2212": "-", "\u00a0": " ", "\u2026": "...",
    }
)  # fmt: skip
_WORD = re.compile(r"[^\W_]+(?:(?:['\-./@_+&]|(?<=\d)[,:](?=\d))[^\W_]+)*")
_TOKEN_WORDS = re.compile(r"[a-z]+(?:_[a-z]+)+")  # a snake_case enum value: words joined by "_"
_BREAK = re.compile(
    r"[.!?;:\n(),\[\]\"\-\u2013\u2014]"
)  # what may end a clause before or after dictated words
_CONTRACTIONS = tuple(
    (re.compile(pattern, re.IGNORECASE), full)
    for pattern, full in (
        (r"\bwon't\b", "will not"),
        (r"\bcan't\b", "can not"),
        (r"\bshan't\b", "shall not"),
        (r"\bcannot\b", "can not"),
        (r"n't\b", " not"),
        (r"'m\b", " am"),
        (r"'re\b", " are"),
        (r"'ll\b", " will"),
        (r"'ve\b", " have"),
        (r"'d\b", " would"),
    )
)


def _vocabulary(text: str) -> frozenset[str]:
    return frozenset(text.split())


POLITE = _vocabulary(  # greetings, courtesies, sign-offs
    "hi hello hey dear greetings good morning afternoon evening day all team everyone there folks"
    " please kindly thanks thank you so much very many a lot in advance just quick fyi look information info"
    " best regards kind warm warmest cheers sincerely yours the take care talk soon see with love"
    " respectfully cordially br thx ty later have nice great weekend mr mrs ms dr miss sir madam"
    " desk office crew staff both"  # a sign-off from a team: "Best regards, Travel desk"; "Hi both,"
    " sorry apologies apologize apologise for your patience understanding inconvenience"  # "Sorry!"
    " safe travels journey enjoy luck wishes"  # "Safe travels!"
)
MENTION = _vocabulary(  # the words a text needs to point at a record it carries the id of
    "id ids ref reference number no re regarding about for see per the a an of to is it its this that"
    " new on in from and at as with by here i which who into onto"
)
SENDING = _vocabulary("sent emailed messaged texted notified contacted informed")  # none true of a draft
POINTING = SENDING | _vocabulary(  # the words a follow-up note uses to point at a record it carries the id of
    "follow followup up check chase reply replies response answer await awaiting waiting pending"
    " track tracking thread note linked link related mail email message also we us created made started"
    " booking bookings reservation record entry added logged recorded below above attached"
    " ticket case concerns concerning relates pertains"  # "This concerns dataset DS-006."
)
NOTE_LABELS = _vocabulary("update fyi info reminder note comment")  # what labels any note, with a colon
HANDING_ON = _vocabulary(  # a note handing work on asks for it, claiming nothing of the world
    "handle handling take taking look looking one passing over onto action attention"
    " deal care could can would will you need needs needed required when possible pick"
    " visibility awareness again"  # "Forwarding this again for visibility." (round 61, R3: 0.8)
)
COURTESY_LINES = (
    _vocabulary(  # a line of these alone says nothing about the work ("Forwarding as requested.")
        "fyi see below above forwarding forwarded forward fwd requested attached here as per"
        " take look review your attention heads up sharing passing along handle"
    )
)
# put in or left out inside dictated words, they change nothing: a courtesy, or the perfect's
# auxiliary ("plans have changed" says "plans changed"; "has been delayed" says "delayed")
COURTESIES = _vocabulary(  # in or out, the words say the same
    "please kindly have has been a an the"
    " is are"  # "upstream data is incomplete" of "upstream data incomplete" (round 63, R2: 0.75)
)
TIMES = _vocabulary(  # words that make an aside a deadline or a date, not an attribution
    "today tomorrow tonight yesterday now asap eod eow week weekend month monday tuesday wednesday"
    " thursday friday saturday sunday january february march april may june july august september"
    " october november december morning afternoon evening noon midnight"
)
MONTHS = _vocabulary(  # a record's date said in an aside: "(Power Spin, Jan 5 07:00)"
    "jan feb mar apr jun jul aug sep sept oct nov dec january february march april may june july"
    " august september october november december"
)
POSSESSIVES = _vocabulary("my your our their its his her")
ZONES = _vocabulary("utc gmt")  # the zone the world's times are in: "(16:45 UTC on March 13)"
WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_OF = {  # a weekday as said ("sat" and "sun" are words first)
    **{name: name for name in WEEKDAY_NAMES},
    **{name[:3]: name for name in WEEKDAY_NAMES if name[:3] not in ("sat", "sun")},
    "tues": "tuesday",
    "thurs": "thursday",
}
WEEKDAYS = frozenset(_WEEKDAY_OF)
# the words of plain English that say nothing of a record on their own (pronouns, determiners,
# prepositions, auxiliaries): a report in a person's words ("Ines Silva was moved off the
# waitlist", "her booking id is ..."; round 44, R1: 0.667); the negations are never among them
PLAIN = _vocabulary(
    "i me we us you he him she her they them it this that these those who which what where when there here"
    " a an the some any each every both all either other another same else more also too so then than as"
    " and or of in on at by for from to into onto off over out up down through across between after before"
    " during since until via with within be is are was were been being am has have had having do does did"
    " will would shall should can could might must today tomorrow yesterday"
)
_LEADS = _vocabulary("on for re regarding about in of to")  # words that lead an aside about a record
_LETTERS = re.compile(r"[^\W\d_]{2,}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[t ]?\d{2}:\d{2}(?::\d{2})?z?)?|\d{1,2}:\d{2}")
ATTRIBUTIONS = _vocabulary("per via from by according to as requested asked on behalf of source cc")
_SUBJECT = 3  # words that may say who did what a reason tells: "Customer", "Valentina Tanaka"
_SOURCES = _vocabulary("per via according")  # what opens an attribution, never an aside
# words an aside naming the call's record may hold ("(Orders ETL (us) run of Jan 5 05:45)"; round 63,
# R4: 0.8 at six)
_ASIDE = 8
_ATTRIBUTED = 3  # words an attribution after dictated words may name ("(per the shift handoff)")
NEGATIONS = _vocabulary("not no never nothing none nobody neither nor without instead rather actually but")
RETRACTIONS = _vocabulary(
    "ignore disregard correction corrected scratch retract retracted withdraw withdrawn void"
    " mistake mistaken erroneous wrong false untrue nevermind oops sorry delete"
)
# the ends a piece of work can come to besides the one asked for: a free note that says one the
# record does not hold claims it ("Cancelled", "Rejected by support", "Duplicate of AI-659")
OUTCOMES = _vocabulary(
    "cancelled canceled cancel rejected declined failed failure duplicate duplicated obsolete void voided"
    " abandoned reopened blocked postponed deferred invalid refused denied withdrawn"
)
PERSONS = _vocabulary(
    "i me my mine we us our ours you your yours he him his she her hers they them their theirs it its"
    " this that these those"
)
_NOT_NAMES = NEGATIONS | RETRACTIONS | PERSONS
# the first names of the users the data engine speaks for (phrasing/personas.json; a test keeps
# the two the same): a user may sign a text or be credited for it by name alone
USERS = _vocabulary(
    "aiko amara anika bastian boris bruno carmen celia chloe declan dmitri elena esther farid felix"
    " gabriela grace hana hassan hiroshi ibrahim ines isla jamal jonas julia keira kenji kofi laila"
    " lena lukas marek mateo maya nadia nikhil noor olivia oskar owen pablo paula priya quinn ravi"
    " rosa samuel selin tamsin tariq tomasz uma umar valentina viktor wanda wei ximena yara yusuf zane zoe"
)
_NAMES = 6  # capitalized words the greeting and the sign-off may hold together
PARTICLES = _vocabulary("van von de da di du del der den la le ten ter dos das")  # "Ines van Dijk"


def _folded(text: Any) -> str:
    """Text with curly quotes, dashes and odd spaces made plain and contractions spelled out."""
    folded = str(text).translate(_FOLD)
    for pattern, full in _CONTRACTIONS:
        folded = pattern.sub(full, folded)
    return folded


def _hyphenated_as(text: str, dictated: str) -> str:
    """``text`` with two words the dictated text joins by a hyphen, or sets apart, joined or set
    apart as it does: "Month end stock correction" says "Month-end stock correction" and
    "upstream schema change in-progress" says "... in progress" (round 62, R1 and R4: 0.8 and
    0.5). Only the mark between the words changes, so every word keeps its place."""
    if "-" not in text and "-" not in dictated:
        return text
    for first, mark, second in re.findall(r"(?=\b([A-Za-z]+)([ -])([A-Za-z]+)\b)", dictated):
        pattern = rf"\b({re.escape(first)})[ -]({re.escape(second)})\b"
        text = re.sub(pattern, rf"\1{mark}\2", text, flags=re.IGNORECASE)
    return text


Span = tuple[str, int, int]  # a word and where it stands in the folded text


def _spans(text: str) -> list[Span]:
    return [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]


def words(text: Any) -> list[str]:
    """The word tokens of a text, lower-cased (the module docstring: how dictated text is read)."""
    return [w.lower() for w in _WORD.findall(_folded(text))]


_NUMBER_WORDS = (
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen"),
    *("nineteen", "twenty"),
)
NUMERALS = {word: str(n) for n, word in enumerate(_NUMBER_WORDS)}


def _numeral(word: str) -> str:
    """A number word as its digits ("two": "2"); any other word as it is."""
    return NUMERALS.get(word, word)


def _find(tokens: list[str], phrase: list[str]) -> list[int]:
    """Every index where ``phrase`` stands in ``tokens`` as a contiguous run."""
    n = len(phrase)
    return [i for i in range(len(tokens) - n + 1) if tokens[i : i + n] == phrase] if n else []


def times_said(text: str, value: Any) -> int:
    """How often ``text`` says ``value`` as words of its own: "2" is said once by "version: 2"
    and not at all by "sales_2025Q2" or "2026" (a value with no words: 0)."""
    return len(_find(words(text), words(str(value))))


def _name(word: str) -> bool:
    return word[:1].isupper() and word.isalpha() and word.lower() not in _NOT_NAMES


def _polite(
    text: str,
    spans: list[Span],
    side: range,
    allowed: frozenset[str] | None = None,
    others: frozenset[str] = frozenset(),
    signers: frozenset[str] | None = None,
) -> tuple[bool, int]:
    """Whether the words ``side`` (before or after dictated words) are only greetings, courtesies,
    sign-offs and names, and how many names: a name follows a polite word ("Hi Ana", "Best,
    Rosa"), stands on a line of names alone (a signature), or opens the text before a comma
    ("Ana, ..."). "Delayed. Running late" does not pass on a capital letter. A name must be one
    of ``allowed`` (when given) and none of ``others``; a name no polite word leads (a bare
    signature) one of ``signers`` (when given): "... shortly. Transfer Cancelled" is a claim in
    capitals, not someone signing."""
    names, polite = 0, False
    signature = _signature(text, spans, side)
    introduced = {*_introduction(text, spans, side), *_apology(text, spans, side), *_offer(text, spans, side)}
    teams = _team_names(spans, side)
    for i in side:
        word, start, end = spans[i]
        if word.lower() in POLITE or i in introduced:
            polite = True
            continue
        if (i >= signature or polite) and (word.lower() in TEAMS or i in teams):  # "Best, the travel desk"
            continue
        if word.lower() in PARTICLES and i + 1 in side and _name(spans[i + 1][0]):
            continue  # a surname's particle: "Hi Ines van Dijk" (round 34, L4: 0.5)
        if not _name(word) or word.lower() in others or (allowed is not None and word.lower() not in allowed):
            return False, names
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        line = _spans(text[line_start : len(text) if line_end < 0 else line_end])
        gap = text[end : spans[i + 1][1]] if i + 1 < len(spans) else ""
        if not (polite or i >= signature or all(_name(w) for w, _, _ in line) or (i == 0 and "," in gap)):
            return False, names
        if not polite and signers is not None and not _signs(spans, i, side, signers):
            return False, names
        names += 1
        if names > _NAMES:
            break
    return True, names


def _signs(spans: list[Span], i: int, side: range, signers: frozenset[str]) -> bool:
    """Whether the name at ``i`` is one of ``signers`` or a surname right after one ("Yara
    Okafor"): who signs or is credited with no polite word before it is a person the task knows,
    not any capitalised word ("Transfer Cancelled", "(Acme Corp)" are claims)."""
    if spans[i][0].lower() in signers:
        return True
    return i - 1 >= side.start and _name(spans[i - 1][0]) and spans[i - 1][0].lower() in signers


TEAMS = _vocabulary("desk office crew staff team support ops operations dispatch service services")
_SIGNED = 3  # words a signature may hold, two names at most: "Yara Okafor", "Travel desk", "Ops support team"


def _team_names(spans: list[Span], side: range) -> set[int]:
    """The words of ``side`` that name a team by what it does, in any case, before a team's own
    word: "travel" of "Best regards, the travel desk", "traveler" of "Ravi (traveler services)".
    Two such words at most, none a negation, a retraction, a pronoun or a number."""
    found: set[int] = set()
    for j in side:
        if spans[j][0].lower() not in TEAMS:
            continue
        k = j - 1
        while k >= max(side.start, j - _SIGNED + 1) and _describes(spans[k][0]):
            found.add(k)
            k -= 1
    return found


def _describes(word: str) -> bool:
    return word.isalpha() and word.lower() not in _NOT_NAMES | POLITE | OUTCOMES


APOLOGY_FOR = _vocabulary(  # what a courtesy apologizes for, not a claim about the records
    "delay delays wait waiting trouble confusion hassle inconvenience late slow reply response short notice"
)
_APOLOGY = re.compile(r"(?:sorry|apologies|(?:we|i)\s+apologi[sz]e)\s+for\s+", re.IGNORECASE)


def _apology(text: str, spans: list[Span], side: range) -> range:
    """The words of a sentence of apology among ``side``, set apart by a break: "Sorry for the
    delay.", "Apologies for the late reply!", or an empty range. What it apologizes for is a
    courtesy's (``APOLOGY_FOR``), never the records' ("Sorry for the cancellation" claims one)."""
    for i in side:
        found = _APOLOGY.match(text, spans[i][1])
        if found is None:
            continue
        rest = [j for j in side if j > i and spans[j][1] >= found.end()]
        last = i
        for j in rest:
            if spans[j][0].lower() not in APOLOGY_FOR:
                break
            last = j
        after = text[spans[last][2] : spans[last + 1][1] if last + 1 < len(spans) else len(text)]
        if last > i and (_BREAK.search(after) or last + 1 == len(spans)):
            return range(i, last + 1)
        return range(0)
    return range(0)


_IF_NEEDED = (
    r"if\s+(?:you\s+have\s+(?:any\s+)?(?:other\s+|further\s+|more\s+)?questions|anything\s+is\s+unclear"
    r"|you\s+need\s+anything(?:\s+else)?|you\s+need\s+(?:any\s+)?(?:more\s+|further\s+)?help)"
)
_OFFER = re.compile(  # a sentence offering help, of no record: "We will be happy to help."
    rf"(?:{_IF_NEEDED}\s*,?\s*)?"
    r"(?:(?:we|i)\s+(?:will|would|shall)\s+be\s+(?:happy|glad|pleased)\s+to\s+(?:help|assist)"
    r"|(?:we|i)\s+(?:am|are)\s+(?:happy|glad|pleased|here)\s+to\s+(?:help|assist)"
    r"|(?:please\s+)?(?:let\s+(?:us|me)\s+know|feel\s+free\s+to\s+(?:reach\s+out|contact\s+us)"
    r"|do\s+not\s+hesitate\s+to\s+(?:reach\s+out|contact\s+us)))"
    r"(?:\s+(?:you|further))?"
    rf"(?:\s*,?\s*{_IF_NEEDED})?",
    re.IGNORECASE,
)


_SENTENCE_START = re.compile(r"(?:^|[.!?;:\n])\s*(?:(?:please|kindly)\s+)?$", re.IGNORECASE)


def _offer(text: str, spans: list[Span], side: range) -> set[int]:
    """The words of sentences among ``side`` that offer help and say nothing of the records, each
    set apart by breaks: "We will be happy to help.", "If anything is unclear, we will be glad to
    help.", "Let us know if you have any questions." (round 41, R4: 0.667). Only these whole
    sentences: "We will refund you." or "Let us know when the driver arrives" are claims."""
    found: set[int] = set()
    for i in side:
        if i in found or not _SENTENCE_START.search(text[: spans[i][1]]):
            continue
        match = _OFFER.match(text, spans[i][1])
        if match is None or not re.match(r"\s*(?:[.!?\n]|$)", text[match.end() :]):
            continue
        inside = {j for j in side if j >= i and spans[j][2] <= match.end()}
        if len(inside) == len([j for j, span in enumerate(spans) if spans[i][1] <= span[1] < match.end()]):
            found |= inside
    return found


def _signed(word: str) -> bool:
    """Whether a word may stand in a signature: a name, or a team's word after one ("Travel desk")."""
    return _name(word) or word.lower() in TEAMS


_INTRODUCTION = re.compile(r"(?:this|it|here)\s+is\s+(?:the\s+)?", re.IGNORECASE)


def _introduction(text: str, spans: list[Span], side: range) -> range:
    """The words of a sender introducing themselves, set apart by a break, among ``side``: "Hi,
    this is the travel desk: ...", "This is Yara Okafor. ..." (a name, or words ending with a
    team's: never "This is the flight: ..."), or an empty range."""
    for i in side:
        found = _INTRODUCTION.match(text, spans[i][1])
        if found is None:
            continue
        first = next((j for j in side if j > i and spans[j][1] >= found.end()), None)
        if first is None:
            return range(0)
        for last in range(first, min(first + _SIGNED, side.stop)):
            own = spans[first : last + 1]
            team = own[-1][0].lower() in TEAMS or all(_name(w) for w, _, _ in own)
            plain = not any(w.lower() in _NOT_NAMES for w, _, _ in own)
            after = text[own[-1][2] : spans[last + 1][1] if last + 1 < len(spans) else len(text)]
            if team and plain and (_BREAK.search(after) or last + 1 == len(spans)):
                return range(i, last + 1)
        return range(0)
    return range(0)


def _signature(text: str, spans: list[Span], side: range) -> int:
    """Where a signature of names alone ends the text after a break ("... late. Yara", "...
    late. - Travel desk"), or past the end when none does. A signature ends the text bare:
    "... changed. Delayed." is a sentence."""
    if not side or side.stop != len(spans) or text[spans[-1][2] :].strip(" \t\n)"):
        return len(spans)
    first, names = side.stop, 0
    teams = _team_names(spans, side)  # "- Tamsin, travel desk" (round 41, R1: 0.833)
    longest = _SIGNED + (spans[-1][0].lower() in TEAMS)
    while (
        first > side.start
        and (_signed(spans[first - 1][0]) or first - 1 in teams)
        and side.stop - first < longest
    ):
        names += _name(spans[first - 1][0]) and spans[first - 1][0].lower() not in TEAMS
        if names > 2:  # "... lead? Ask Alex Moreno" is a request, not a signature
            break
        first -= 1
    while first < side.stop and not _name(spans[first][0]):  # a team signs by its name first
        first += 1
    if first == side.stop or first == 0:
        return len(spans)
    return first if _BREAK.search(text[spans[first - 1][2] : spans[first][1]]) else len(spans)


def says(
    text: Any,
    dictated: Any,
    names: frozenset[str] | None = None,
    others: frozenset[str] = frozenset(),
    attributed: bool = False,
    polite: bool = True,
    aside: frozenset[str] = frozenset(),
    label: frozenset[str] | None = None,
    titles: frozenset[str] | None = None,
    acted: frozenset[str] = frozenset(),
    things: frozenset[str] = frozenset(),
    subjects: frozenset[str] = frozenset(),
    done: frozenset[str] = frozenset(),
) -> bool:
    """Whether ``text`` says the ``dictated`` words, within reason (the module docstring)."""
    said = (names, others, attributed, polite, aside, label, titles, acted, things, subjects, done)
    fault = said_fault(text, dictated, *said)
    return fault is None


def said_fault(
    text: Any,
    dictated: Any,
    names: frozenset[str] | None = None,
    others: frozenset[str] = frozenset(),
    attributed: bool = False,
    polite: bool = True,
    aside: frozenset[str] = frozenset(),
    label: frozenset[str] | None = None,
    titles: frozenset[str] | None = None,
    acted: frozenset[str] = frozenset(),
    things: frozenset[str] = frozenset(),
    subjects: frozenset[str] = frozenset(),
    done: frozenset[str] = frozenset(),
) -> str | None:
    """Why ``text`` does not say the ``dictated`` words, or None when it does: they stand in it as
    one run of words (a "please", a "have", an "is" or an article put in or left out aside; an env's own
    token for them, "no_longer_needed", as good as the words), and the other words are, where
    ``polite`` (a message, a note, a reason; not a title or a name), greetings, courtesies,
    sign-offs and names ("Hi Ana, thanks, this is confirmed. Best, Rosa" says "Thanks, this is
    confirmed."; "Not running late." does not say "Running late."), or, where ``attributed``, a
    short attribution after them ("plans changed (per Ximena)", :func:`_attribution`); a title
    takes nothing else ("Fix the settings page with Hana" is another title). ``names``: the only
    names (lower-cased) a greeting before the words may hold (the addressee's); ``others``:
    names no word around them may hold (other people of the world; the sender, the user, may
    sign): "Hi Liam" in a message to Daniel is not the message; ``aside``: the other words a
    short aside about the call's records may hold (:func:`_aside`); ``label``: the words that may
    label the dictated words without a colon (the kind of the record the call acts on, the act,
    the parameter: "Cancellation requested by the owner"; ``aside`` where not given); ``titles``:
    the names an aside may call the records by (their ids, names and titles; ``names`` where not
    given: "(training succeeded)" is a claim, not a name); ``things``: words the world keeps in
    lower case (a status, a vehicle's class), no name in any case ("plans changed, Child Seat");
    ``subjects``: the words that may say who did what a reason tells, before it (the kind and the
    name of the person the call's records are for: "Customer found a better price elsewhere");
    ``done``: what the run had done to the records its calls name, in the world's words, which
    sentences of their own before or after the words may say (:func:`_reports`)."""
    if not isinstance(text, str):
        return "not a text"
    if _TOKEN_WORDS.fullmatch(text.strip()):  # an env's own token for the words: "no_longer_needed"
        text = text.replace("_", " ")
    folded = _hyphenated_as(_folded(text), _folded(dictated))
    spans = [s for s in _spans(folded) if s[0].lower() not in COURTESIES]
    phrase = [_numeral(w.replace("-", "")) for w in words(dictated) if w not in COURTESIES]
    # a hyphen inside a word changes nothing: "signups" says "sign-ups" (round 23, AC: 0.5); nor
    # does a number's digits for its word: "Had 2 large suitcases." (round 45, R3: 0.75)
    hits = _find([_numeral(w.lower().replace("-", "")) for w, _, _ in spans], phrase)
    # a capitalised word of the world's own vocabulary (a field, a kind, an act) is no name of a
    # greeting or a sign-off: "Duplicate request - Cancelled By Rider" says who cancelled
    vocabulary, acts = aside | (label or frozenset()), label or frozenset()
    worldly = {w.lower() for w, _, _ in spans if w.lower() in vocabulary or _labels(w.lower(), acts)}
    # ... though a person the records are for is named by the world too, and may sign ("Had two
    # large suitcases. - Olivia" of Olivia's rating; round 41, R3: 0.5)
    unnamed = others | things | (worldly - subjects)
    # who may sign or be credited by name alone, with no "Best," or "per" before it: a user, or
    # someone the call's records are for, not any word they hold (a verifier from before gives
    # no names: anyone)
    signers = None if names is None else (subjects - unnamed) | USERS
    for i in hits:
        end = i + len(phrase)
        if polite:
            head, head_names = _polite(folded, spans, range(i), names, unnamed - (names or frozenset()))
            tail, tail_names = _polite(folded, spans, range(end, len(spans)), None, unnamed, signers)
        else:
            head, head_names, tail, tail_names = i == 0, 0, end == len(spans), 0
            # a title may lead with the record it is about, set apart: "search-api: One replica
            # down, reduced capacity" (round 45, R3 and R4: 0.833 and 0.5)
            head = head or (
                titles is not None
                and 0 < i <= _SUBJECT
                and all(part in titles for w, _, _ in spans[:i] for part in re.split(r"[-_]", w.lower()))
                and re.fullmatch(r"\s*[:\-–]\s*", folded[spans[i - 1][2] : spans[i][1]]) is not None
            )
        if not tail and polite and names and _vocative(folded, spans, end, names - unnamed):
            tail, tail_names = True, len(spans) - end
        if not tail and attributed:
            tail, tail_names = _attribution(folded, spans, end, others, unnamed, signers), 0
        if polite and names is not None:  # a short aside that names the record the call is about
            known = (names if titles is None else titles) | aside
            head = head or _aside(folded, spans, 0, i, known, aside if label is None else label, titles)
            # ... or as any note is, set apart ("Update: ...", "FYI - ..."; round 33, K2: 0.0 where
            # "Note: ..." passed); without the colon a word says what: "Update rollback approved"
            # ... or by whose it is: "Driver note: Had two large suitcases." (round 45, R3: 0.75)
            head = head or (
                0 < i <= _SUBJECT
                and spans[i - 1][0].lower() in NOTE_LABELS
                and all(w.lower() in subjects for w, _, _ in spans[: i - 1])
                and re.fullmatch(r"\s*[:\-–]\s*", folded[spans[i - 1][2] : spans[i][1]]) is not None
            )
            head = head or (0 < i <= _SUBJECT and all(w.lower() in subjects for w, _, _ in spans[:i]))
            # ... or who says it, as a signer would after it: "Oskar: wrong parameters" as
            # "wrong parameters (Oskar)" (round 29, G4: 0.5)
            head = head or (
                signers is not None
                and 0 < i <= 2
                and re.fullmatch(r"\s*[:\-–]\s*", folded[spans[i - 1][2] : spans[i][1]]) is not None
                and all(_name(spans[k][0]) and _signs(spans, k, range(i), signers) for k in range(i))
            )
            tail = tail or _aside(folded, spans, end, len(spans), known, label or frozenset(), titles, acted)
            tail = tail or _remark(folded, spans, end, len(spans), unnamed, label or frozenset())
            # an aside with a greeting before it or a sign-off after it ("Hi Hanna, regarding your
            # trip CLNWG7: ...", "... shortly (trip CLNWG7). Best, Rosa"; round 27, EC: 0.5)
            head = head or any(
                _polite(folded, spans, range(k), names, unnamed - names)[0]
                and _aside(folded, spans, k, i, known, label or frozenset(), titles)
                for k in range(1, i)
            )
            tail = tail or any(
                _aside(folded, spans, end, k, known, label or frozenset(), titles, acted)
                and _polite(folded, spans, range(k, len(spans)), None, unnamed)[0]
                for k in range(end + 1, len(spans))
            )
        if polite and done:  # "Your transfer pickup has been moved to 12:25. <the words>"
            told = done | (label or frozenset())
            head = head or _reports(folded, spans, range(0, i), told, i)
            tail = tail or _reports(folded, spans, range(end, len(spans)), told, end)
            # ... after a greeting: "Hi Freya, your pickup has been moved to 14:25. <the words>"
            # (round 44, R4: 0.667)
            head = head or any(
                _polite(folded, spans, range(k), names, unnamed - (names or frozenset()))[0]
                and _reports(folded, spans, range(k, i), told, i)
                for k in range(1, i)
            )
        if head and tail and head_names + tail_names <= _NAMES:
            return None
    again = (names, others, attributed, polite, aside, label, titles, acted, things, subjects, done)
    if not hits and polite and names:
        plain = _without_vocatives(text, names, phrase)
        if plain != text:
            return said_fault(plain, dictated, *again)
        known = (names if titles is None else titles) | aside
        inserted = _without_inserted(folded, spans, phrase, known, label or frozenset(), titles, acted)
        if inserted is not None:
            return said_fault(inserted, dictated, *again)
    if not hits:
        return f"the words {dictated!r} are not there as one run"
    around = [w for n, (w, _, _) in enumerate(spans) if not any(i <= n < i + len(phrase) for i in hits)]
    odd = [w for w in around if w.lower() not in POLITE and not _name(w)] if polite else []
    return "other words around them: " + ", ".join(repr(w) for w in (odd or around)[:4])


REPORTED = _vocabulary(  # the words a sentence uses to tell someone what was done for them
    "you your we our has have had been be will is are was were now new moved rescheduled changed updated"
    " update to at on in from for of the a an and by this that it its all set as utc"
)


def _reports(text: str, spans: list[Span], side: range, done: frozenset[str], at: int) -> bool:
    """Whether words ``side`` of a text (before the dictated words at ``at``, or after them) are
    sentences of their own that tell what the run did, in the world's words: a word of
    ``done`` (the records the calls name, the fields written and what they hold now, the call's
    kind of record), of :data:`REPORTED`, a courtesy or a month, or a number or a time of a
    value written ("moved to 12:25" of a pickup now at 12:25; never the 12:15 it was). Set
    apart by a sentence's end or a colon ("Trip update: ..."); never a negation, a retraction
    or a word of sending ("... and the driver was notified": a claim)."""
    if not side:
        return False
    last = at - 1 if side.start == at else side.stop - 1  # the word before the break
    gap = text[spans[last][2] : spans[last + 1][1]]
    if not re.search(r"[.!?;:\n]", gap):
        return False
    if wrong_dates([w.lower() for w, _, _ in spans[side.start : side.stop]], done):
        return False
    vocabulary = done | _phrasal(done) | REPORTED | POLITE | COURTESIES | POSSESSIVES | _PLAIN_WORDS
    digits = {d.lstrip("0") for w in done for d in re.findall(r"\d+", w)}
    times = {clock(t) for w in done for t in TIME_OF_DAY.findall(w)}
    said = [w.lower() for w, _, _ in spans[side.start : side.stop]]
    for n, lowered in enumerate(said):
        if lowered in NEGATIONS | RETRACTIONS | SENDING:
            return False
        if lowered in _TIME_NOUNS:  # "your new pickup time is 14:25", never "your flight is on time"
            if not any(TIME_OF_DAY.fullmatch(w) or _MONTH.get(w) for w in said[n + 1 : n + 4]):
                return False
            continue
        numbers = re.findall(r"\d+", lowered)
        if TIME_OF_DAY.fullmatch(lowered):  # as a whole: "moved to 16:00" of a pickup at 16:35 is untrue
            if clock(lowered) not in times:
                return False
        elif numbers:
            if not all(n.lstrip("0") in digits for n in numbers) or _LETTERS.search(lowered):
                return False
        elif not _told(lowered, vocabulary):
            return False
    return True


TIME_OF_DAY = re.compile(r"\d{1,2}:\d{2}")
# a time or a day named as such, which a report gives right after ("pickup time is 14:25"; round 44,
# R4) and a claim says with nothing after ("your flight is on time"; round 46, R4: 1.0)
_TIME_NOUNS = _vocabulary("time date")


def clock(time: str) -> str:
    """A time of day without its hour's leading zero: "08:05" and "8:05" are one time."""
    hour, minute = time.split(":")
    return f"{int(hour)}:{minute}"


_PARTICLES = ("up", "off", "in", "out", "over")


def _phrasal(words: frozenset[str]) -> frozenset[str]:
    """The verbs of the compounds among ``words``, as a sentence says them: "pick", "picks",
    "picked" of a "pickup" ("the transfer picks you up at 12:25")."""
    found = set()
    for word in words:
        for particle in _PARTICLES:
            verb = word.removesuffix(particle)
            if verb != word and len(verb) >= 3 and verb.isalpha():
                found |= {verb, verb + "s", verb + "ed", verb + "ing", particle}
    return frozenset(found)


def _without_vocatives(text: str, names: frozenset[str], phrase: list[str]) -> str:
    """``text`` without the addressee called by name inside the dictated words, set off by a
    comma after it: "Thanks Noah, this is confirmed." says "Thanks, this is confirmed." A name
    that is one of the dictated words, or that no comma follows ("Thanks Noah this is ..."), stays."""

    def drop(match: re.Match[str]) -> str:
        name = match.group(2)
        return "" if name.lower() in names and name.lower() not in phrase else match.group(0)

    return _VOCATIVE.sub(drop, text)


_VOCATIVE = re.compile(r"(?<=[^\W\d_])(,?\s+)([A-Z][a-z]+)(?=\s*,)")


def _without_inserted(
    text: str,
    spans: list[Span],
    phrase: list[str],
    known: frozenset[str],
    kinds: frozenset[str],
    titles: frozenset[str] | None,
    acted: frozenset[str],
) -> str | None:
    """``text`` without a short aside put inside the dictated words, where it names the call's
    records as :func:`_aside` reads one after them ("Your driver will now meet you at a different
    time (15:05 UTC on March 13); the details are in your app.", "Your airport pickup time has
    changed to 16:45 UTC on March 13; please ..."; rounds 61, 67 and 70: 0.833 each): the new
    time told where it belongs. None when the words do not stand so; a wrong time or another
    record's number is no such aside."""
    lowered = [_numeral(w.lower().replace("-", "")) for w, _, _ in spans]
    for k in range(1, len(phrase)):
        for i in _find(lowered, phrase[:k]):
            cut = i + k
            for j in _find(lowered, phrase[k:]):
                if cut < j <= cut + _ASIDE and _aside(text, spans, cut, j, known, kinds, titles, acted):
                    after = spans[j - 1][2]
                    closing = re.match(r"\s*\)", text[after:])
                    return text[: spans[cut - 1][2]] + text[after + (closing.end() if closing else 0) :]
    return None


def _vocative(text: str, spans: list[Span], end: int, names: frozenset[str]) -> bool:
    """Whether the words after ``end`` call the addressee by name at the end of the dictated
    sentence: "Could you share an update, Ines?" (a comma before, the closing mark after)."""
    rest = spans[end:]
    return (
        0 < end < len(spans)
        and all(w[0].isupper() and w.lower() in names for w, _, _ in rest)
        and re.fullmatch(r"\s*,\s*", text[spans[end - 1][2] : rest[0][1]]) is not None
        and re.fullmatch(r"[\s.!?]*", text[rest[-1][2] :]) is not None
    )


def _aside(
    text: str,
    spans: list[Span],
    first: int,
    end: int,
    names: frozenset[str],
    kinds: frozenset[str] = frozenset(),
    values: frozenset[str] | None = None,
    acted: frozenset[str] = frozenset(),
) -> bool:
    """Whether words ``first``..``end`` (after dictated words in brackets, after a dash or a
    comma, or led by a word that points at a record; before them as a label) are a short aside
    naming the records the call is about in their own words: "Priority for this week. (Cascade
    Freight invoice)", "Invoice INV-4765: ...", "... - MSG-0005", "(load_warehouse on RUN-7385)",
    "Reason: duplicate request", "... on your trip UFE6UR", "(Power Spin, Jan 5 07:00)". Each
    word is one of ``names`` (the words of the records the call names, their kinds and fields),
    a word that points at a record, a possessive or a month, or a token whose letters are such
    words and whose numbers those records hold (an id, a stage, a code, a time: never another
    record's id); at most :data:`_ASIDE` words. Before the words, a word or two of ``kinds`` (the
    record's kind, the act, the parameter's name, or a form of one: "cancellation" of "cancel")
    label them without a colon ("Run created by mistake"). Where ``values`` (the records' ids,
    names and titles) is given, an aside set apart after the words names a record by one of
    them, a number or a month: field names and kinds alone say nothing of a record but claims
    ("- Cancelled By Rider"); one led by a pointing word may point by its kind ("... on your
    trip"). After the words, an act of ``kinds`` may be said of the very record the call acts on,
    named by a word of ``acted`` (its own arguments: "plans changed - notify_finance skipped"),
    never of another one ("- Load Warehouse Skipped" of a job still pending)."""
    side = spans[first:end]
    # the words that point ("about your", "re the") lengthen no aside: "About your trip booked
    # under reference 4LB9MP: ..." names as much as "Your trip booked ..." (round 53, R4: 0.5)
    if not side or sum(w.lower() not in MENTION | POSSESSIVES for w, _, _ in side) > _ASIDE:
        return False
    if first > 0:  # after the words: set apart, or pointing ("... on your trip UFE6UR")
        gap = text[spans[first - 1][2] : spans[first][1]]
        lead = side[0][0].lower() in _LEADS and not re.search(r"[.!?\n]", gap)  # not a sentence
        numbered = any(any(c.isdigit() for c in w) for w, _, _ in side)
        # after a comma alone, words of names are a clause going on ("..., send invoices"), not
        # an aside, unless they hold a number ("..., Power Spin Jan 5 07:00")
        set_apart = bool(re.search(r"[(\-]", gap)) or (bool(re.search(",", gap)) and numbered) or lead
        # ... or a line of its own that labels what it names: ". Booking reference: BNDXOZ."
        # (round 50, R1: 0.833)
        set_apart = set_apart or (
            bool(re.search(r"[.!?\n]", gap)) and ":" in text[side[0][2] : side[-1][1]] and len(side) > 1
        )
        # ... or one id at the end, after a space or a colon: "Inbound delivery PO-4939", as
        # "(PO-4939)" and "- PO-4939" are (round 62, R3: 0.875); the id is still the call's own
        set_apart = set_apart or (
            len(side) == 1
            and end == len(spans)
            and _ID.fullmatch(side[0][0]) is not None
            and re.fullmatch(r"\s*:?\s*", gap) is not None
        )
    else:  # before them: a label ("Invoice INV-4765: ...", "Run ...")
        set_apart = bool(re.search(r"[:)\-]", text[spans[end - 1][2] : spans[end][1]]))
        set_apart = set_apart or (
            len(side) <= 2 and all(_labels(w.lower(), kinds) and not w.isdigit() for w, _, _ in side)
        )
    if not set_apart:
        return False  # a sentence of its own ("Invoice received, please archive.") is content
    if first > 0 and side[0][0].lower() in _SOURCES:
        return False  # says who asked: an attribution (:func:`_attribution`), not a record's name
    if wrong_dates([w.lower() for w, _, _ in side], names | acted):
        return False  # "New pickup: March 05 at 16:10" of a pickup on March 13 (round 54, R1: 1.0)
    known = names | MENTION | POSSESSIVES | MONTHS | ZONES
    numbers = {n.lstrip("0") for n in known if n.isdigit()}
    if values is not None and first > 0 and side[0][0].lower() not in _LEADS:  # "on your trip" points
        naming = values | MONTHS
        if not any(_named(w.lower(), naming) or any(c.isdigit() for c in w) for w, _, _ in side):
            return False
    own = first > 0 and any(p in acted for w, _, _ in side for p in _LETTERS.findall(w.lower()))
    passed = {a.lstrip("0") for a in acted if a.isdigit()}  # the numbers the call passed
    for k, (word, _, _) in enumerate(side):
        lowered = word.lower()
        if lowered in NEGATIONS | RETRACTIONS:
            return False
        if first > 0 and values is not None and lowered.isdigit() and not _numbering(side, k, kinds | values):
            return False  # a count, not a name: "Smooth pickup, rider wait 30 minutes" (round 32, J3: 1.0)
        if lowered in known or ((first == 0 or own) and _labels(lowered, kinds)):
            continue
        letters, digits = _LETTERS.findall(lowered), re.findall(r"\d+", lowered)
        if digits and not _DATE.fullmatch(lowered):  # a letter beside a number is part of the name:
            letters = re.findall(r"[^\W\d_]+", lowered)  # "(Room 4B)" names no room of MSG-0004
        # ... or the first letter of a word of theirs before a number the call passed: "payments
        # p2" of a pause of partition 2 (round 63, R4: 0.5), never "p3"
        initial = len(letters) == 1 and len(letters[0]) == 1 and bool(digits) and lowered[0] == letters[0]
        if (
            initial
            and all(d.lstrip("0") in passed for d in digits)
            and any(len(w) > 3 and w.startswith(letters[0]) for w in names)
        ):
            letters = []
        if not (letters or digits) or not all(p in known for p in letters):
            return False
        if numbers and not all(d.lstrip("0") in numbers for d in digits):
            return False  # another record's number: "(re ITN-4002)" beside ITN-4001
    return True


# the words by which a remark would claim something of the world rather than give context: it
# hedges or puts the work off ("(tentative)", "(pending)"), or says the work came to an end,
# well or badly ("(ok)", "(complete)"); a past or present participle says as much ("(approved)",
# "(awaiting sign-off)"), and so do these forms of it without the ending
HEDGES = _vocabulary(
    "maybe perhaps possibly probably unsure unconfirmed tentative tentatively test testing tbd tbc"
    " draft wip pending temporary temporarily partly partially almost nearly later soon eventually"
    " might may could should would reportedly allegedly supposedly if unless"
    " accidental accidentally error erroneously joke kidding"  # "(in error)": a retraction too
)
SUCCESSES = _vocabulary("ok okay success successful successfully complete fine approval open closed live")
# ... or ranks the work: "Call back about the order - urgent" (round 60, R4: a wrong run)
PRIORITIES = _vocabulary(
    "urgent urgently priority critical important high low blocker immediate immediately rush top"
)
_HAPPENED = _vocabulary(
    "done sent paid made taken given seen shut set put held kept left lost won told sold built spent"
    " begun written broken chosen frozen gone run fed"
)
_REMARK = 4  # the most words of a remark: "(on-call request)"


def _remark(
    text: str, spans: list[Span], first: int, end: int, unsaid: frozenset[str], acts: frozenset[str]
) -> bool:
    """Whether words ``first``..``end``, after dictated words, are a short remark of the agent's
    own set apart in brackets or after a dash (the words' final stop before it or not), which
    gives the reader context and claims nothing of the world: "duplicate of the morning run
    (on-call)", "owner asked to stop it (on-call request)", "Shared in the team channel.
    (amara)" (round 60, R3: 0.75; round 69, R3 and R4: 0.833 and 0.75). Which words may stand
    there is open, as a person's are; the words that claim are not: a negation or a retraction
    ("(not really)"), a hedge or a time ("(tentative)", "(tomorrow)"), a rank ("- urgent"), an
    end the work came to ("(failed)", "(ok)"), a participle ("(approved)", "(awaiting
    sign-off)"), a number, a name (a word with a capital: "(Acme Corp)"; who may sign or be
    credited is :func:`said_fault`'s to say), a word of ``unsaid`` (the world's own words for
    states and for the other people and records in it: "(dana)", "(billing close)") and a form
    of one of ``acts`` (the act, the kind and the parameter the words label: "(cancellation)")."""
    side = spans[first:end]
    if not side or len(side) > _REMARK or first == 0:
        return False
    if not re.fullmatch(r"[.!]?\s*(?:\(|[-\u2013\u2014]\s)\s*", text[spans[first - 1][2] : side[0][1]]):
        return False
    claiming = (
        NEGATIONS | RETRACTIONS | HEDGES | TIMES | OUTCOMES | SENDING | SUCCESSES | PRIORITIES | _HAPPENED
    )
    claiming |= unsaid
    for word, _, _ in side:
        if word != word.lower():
            return False  # a name, of whom the world does not say: "(Acme Corp)", a supplier nobody named
        for part in word.split("-"):
            if not part.isalpha() or part in claiming or part.endswith(("ed", "ing")) or _labels(part, acts):
                return False
    return re.fullmatch(r"\)?[.!]?\s*", text[side[-1][2] :]) is not None


def _numbering(side: list[Span], k: int, naming: frozenset[str]) -> bool:
    """Whether the bare number ``side[k]`` numbers what the word before it names: a record by its
    kind or a name of it ("trip 40631", "partition 2"), or a day by its month ("Jan 5"). A number
    after anything else is a quantity the aside claims ("wait 30 minutes", "30 minutes")."""
    if k == 0:
        return False
    before = side[k - 1][0].lower()
    return before in MONTHS or _labels(before, naming) or _named(before, naming)


def _named(word: str, naming: frozenset[str]) -> bool:
    """Whether a word is one of ``naming``, or a token of such words ("notify_finance")."""
    letters = _LETTERS.findall(word)
    return word in naming or (len(letters) > 1 and all(p in naming for p in letters))


def _labels(word: str, kinds: frozenset[str]) -> bool:
    """Whether ``word`` is one of ``kinds`` or a form of one of four letters or more
    ("cancellation", "cancelled" of "cancel"; "skipped" of "skip"; "trips" of "trip")."""
    return word in kinds or any(len(k) >= 4 and word.startswith(k) for k in kinds)


def _attribution(
    text: str,
    spans: list[Span],
    first: int,
    others: frozenset[str],
    unnamed: frozenset[str] = frozenset(),
    signers: frozenset[str] | None = None,
) -> bool:
    """Whether the words from ``first`` on are a short attribution set apart after dictated words:
    "(per Ximena)", ", per the shift handoff", "- Ximena", " per Viktor" ("per" needs no break):
    attribution words ("per", "by", "according to") then at most :data:`_ATTRIBUTED` words, or
    names alone (none of ``unnamed``: "- Cancelled By Rider" is no one); no negation or
    retraction, no time ("by Friday" is a deadline), no other person of the world ("plans
    changed (by mistake)" takes them back). Names alone are ``signers`` where given: "(Resolved)",
    "(Acme Corp)" after a reason credit nobody, they claim something."""
    rest = spans[first:]
    gap = text[spans[first - 1][2] : rest[0][1]] if rest else ""
    if not _BREAK.search(gap) and not (rest and rest[0][0].lower() == "per"):
        return False
    lead = 0
    while lead < len(rest) and rest[lead][0].lower() in ATTRIBUTIONS:
        lead += 1
    body = [w for w, _, _ in rest[lead:]]
    if not body or len(body) > _ATTRIBUTED:
        return False
    if lead == 0 and not (
        all(_name(w) and w.lower() not in unnamed for w in body)
        and (signers is None or body[0].lower() in signers)
        and re.search(r"[(\-]", gap)
    ):
        return False  # names alone only in brackets or after a dash (of people, ``unnamed`` aside)
    return not any(w.lower() in NEGATIONS | RETRACTIONS | TIMES | others for w in body)


def composed(text: Any, spec: Any) -> bool:
    """Whether the agent's ``text`` reads as the composed text ``spec`` asks for (:func:`composed_fault`)."""
    return composed_fault(text, spec) is None


def composed_fault(text: Any, spec: Any) -> str | None:
    """Why the agent's ``text`` is not the composed text ``spec`` asks for, or None when it is: it
    carries every value of ``spec["carries"]`` (as whole words), says ``spec["says"]`` (if any) as
    a clause of its own, and every other word is framing: a courtesy, a word that points at a
    record ("see order ...", "follow up on the reply to ..."), a word of ``spec["framing"]`` (the
    reference's own framing) or of ``spec["context"]`` (what the world says about the records it
    carries: "email MSG-0001 to the traveler of ITN-4001"), never one of ``spec["claims"]`` (what
    the records are not: "sent" of a draft); a greeting names one of ``spec["names"]`` where the
    spec gives them. The wording is the agent's to choose; a claim nobody asked for ("approved by
    finance") is not framing."""
    if not isinstance(text, str) or not isinstance(spec, dict):
        return "not a text"
    folded = _hyphenated_as(_folded(text), _folded(spec.get("says") or ""))
    spans = _spans(folded)
    lowered = [w.lower() for w, _, _ in spans]
    used = [False] * len(spans)
    for value in spec.get("carries", []):
        value_words = words(value)
        hits = _find(lowered, value_words)
        if not hits:
            return f"it does not carry {value}"
        for i in hits:
            used[i : i + len(value_words)] = [True] * len(value_words)
    claims = frozenset(spec.get("claims", ()))
    context = _context(spec) - claims
    phrase = words(spec.get("says") or "")
    if phrase:
        named = frozenset(w for v in spec.get("carries", []) for w in words(v))
        pointing = (MENTION | POINTING | named | frozenset(spec.get("framing") or ()) | context) - claims
        clause = [i for i in _find(lowered, phrase) if _clause(folded, spans, i, i + len(phrase), pointing)]
        if not clause:
            return f"it does not say {spec['says']!r} as a clause of its own"
        used[clause[0] : clause[0] + len(phrase)] = [True] * len(phrase)
    framing = spec.get("framing")
    # a verifier from before framings were recorded (None): only meaning words are out
    allowed = (
        None
        if framing is None
        # ("no" points at a number, never at nothing to do: "Lena has it, no action needed")
        else ((_GENERIC_FRAMING - NEGATIONS - RETRACTIONS) | frozenset(framing) | context) - claims
    )
    greeted = frozenset(spec["names"]) if "names" in spec else None  # who a greeting may name
    for side in _salutations(folded, spans, used, greeted, frozenset(spec.get("others", ()))):
        used[side.start : side.stop] = [True] * len(side)
    quoting = _quoting(folded, spans, frozenset(spec.get("quoted", ())) - claims)
    odd = [
        w
        for n, (w, u) in enumerate(zip(lowered, used, strict=True))
        if not u and not (_framing(w, allowed) if allowed is None else _told(w, allowed)) and n not in quoting
    ]
    if odd:
        return "words that are no framing: " + ", ".join(repr(w) for w in odd[:4])
    wrong = [] if framing is None else wrong_dates(lowered, [*framing, *context, *spec.get("carries", [])])
    if wrong:
        return "a date the records do not hold: " + ", ".join(wrong[:4])
    early = _untimely(lowered, frozenset(spec.get("later_times", ())))
    if early:
        return "a time the user gives only later: " + ", ".join(repr(w) for w in early[:4])
    return None


QUOTING = _vocabulary("forward forwards forwarding forwarded fwd fyi below attached enclosed see")


def _quoting(text: str, spans: list[Span], quoted: frozenset[str]) -> set[int]:
    """The positions of the words of ``quoted`` (what a forwarded mail's body says) in a sentence
    that points at the forwarded mail ("FYI, forwarding the escalation contact for this month.",
    "Please see the escalation contact below."): a note may tell what it forwards in its words,
    never say them as its own ("Payment confirmation sent to Cascade Freight Billing." of a
    phishing mail asking for one; round 45, R2: 1.0)."""
    if not quoted:
        return set()
    found: set[int] = set()
    sentence: list[int] = []
    for n, (_, _, end) in enumerate(spans):
        sentence.append(n)
        last = n + 1 == len(spans) or re.search(r"[.!?\n]", text[end : spans[n + 1][1]]) is not None
        if last:
            said = [spans[k][0].lower() for k in sentence]
            if any(w in QUOTING for w in said):
                found |= {k for k, w in zip(sentence, said, strict=True) if w in quoted}
            sentence = []
    return found


def _told(word: str, allowed: frozenset[str]) -> bool:
    """Whether a word an agent wrote around asked values is one ``allowed`` lets it write: the
    word itself, its singular or plural ("drafts"), a date, a word of allowed words joined by
    hyphens ("follow-up"), or a file path built of them and of ids it may name
    ("ops/incident-INC-2042.md"), in either spelling of a doubled l ("cancelled", "canceled")."""
    return any(
        _DATE.fullmatch(w)
        or _framing(w, allowed)
        or _plural_of(w, allowed)
        or _parts_in(w, allowed)
        or _path_in(w, allowed)
        or _token_part(w, allowed)
        for w in _spellings(word)
    )


def _spellings(word: str) -> list[str]:
    """A word in both spellings of a doubled l, if it has them ("cancelled", "canceled")."""
    other = _DOUBLED_L.fullmatch(word)
    return [word] if other is None else [word, other[1] + ("" if other[2] else "l") + other[3]]


def _among(word: str, known: frozenset[str]) -> bool:
    """Whether ``word`` is one of ``known`` as it is, as a possessive, in its singular or plural,
    or in the other spelling of a doubled l (never as a date or a part of one)."""
    return any(_framing(w, known) or _plural_of(w, known) for w in _spellings(word))


def _untimely(said: list[str], later: frozenset[str]) -> list[str]:
    """The times of day among ``said`` that are among ``later`` (times the user gives only in a
    later turn, without a leading zero): an email of turn 2 that tells the traveler the pickup
    is at 17:20, the time turn 3 asks for (round 42, R1: 1.0)."""
    return [w for w in said if any(clock(t) in later for t in TIME_OF_DAY.findall(w))]


def _token_part(word: str, allowed: frozenset[str]) -> bool:
    """Whether a word is one of the words of an allowed snake_case token, said as English:
    "schema violation" of a dead letter whose reason is ``schema_violation`` (round 41, R1:
    0.889); never a negation ("no" of ``no_show``). A period written after its year is a word
    of its own too: "Q1" of ``sales_2025Q1.csv`` (round 55, R4: 0.909)."""
    if word.isalpha():
        return word not in NEGATIONS | RETRACTIONS and any(
            "_" in token and word in token.split("_") for token in allowed if _TOKEN_WORDS.fullmatch(token)
        )
    return word.isalnum() and any(
        word in found.groups() for token in allowed if (found := _DATED_PERIOD.fullmatch(token))
    )


_DATED_PERIOD = re.compile(r"(\d{4})([a-z]{1,2}\d{1,2})")  # "2025q1": a quarter (or half) of a year


# the stems whose l doubles before a suffix in British spelling and not in American
_DOUBLED_L = re.compile(
    r"(cancel|travel|label|model|signal|total|fuel|channel|level|dial|equal)(l?)(ed|ing|ers?)"
)


EXTENSIONS = _vocabulary("md csv json jsonl txt log eml yaml yml html")


def _path_in(word: str, allowed: frozenset[str]) -> bool:
    """Whether a path names only allowed words and ids ("ops/incident-inc-2042.md" beside the
    asked INC-2042; "ops/incident-inc-2041.md" names another incident and is no framing)."""
    if "/" not in word:
        return False
    rest = word
    for known in sorted((a for a in allowed if any(c.isdigit() for c in a)), key=len, reverse=True):
        rest = rest.replace(known, " ")
    parts = [p for p in re.split(r"[-_/.\s]", rest) if p]
    return all(p in allowed or p in EXTENSIONS or _plural_of(p, allowed) for p in parts)


def _parts_in(word: str, allowed: frozenset[str]) -> bool:
    """Whether a word joined by hyphens or underscores is allowed words throughout ("follow-up",
    "new_message"), a number among them one ``allowed`` holds as a number of its own
    ("payments-2" of partition 2 of payments; round 31, I2: 0.75); an id ("msg-0001") is no such
    word: its number is zero-padded, or one no record's field holds."""
    parts = [p for p in re.split(r"[-_]", word) if p]
    numbers = [p for p in parts if p.isdigit()]
    return (
        len(numbers) < len(parts)
        and all(p in allowed for p in parts)
        and not any(n.startswith("0") for n in numbers)
    )


def _salutations(
    text: str,
    spans: list[Span],
    used: list[bool],
    greeted: frozenset[str] | None = None,
    others: frozenset[str] = frozenset(),
) -> list[range]:
    """A greeting that opens a composed text and a sign-off that ends it, each set apart by a
    break ("Hi Ravi, ...", "... Thanks, Felix"): a person's courtesies, whatever the note says.
    Only the longest such run at each end, of words no value or dictated phrase took. A greeting
    names one of ``greeted`` (where given: who the call's records are for) and none of
    ``others``: "Hi Ines," on a message to Daniel Brennan is a message to someone else."""
    found: list[range] = []
    first = next((i for i, u in enumerate(used) if u), len(spans))
    for end in range(first, 0, -1):
        head = range(0, end)
        if (
            end < len(spans)
            and _set_apart(text, spans, end)
            and _polite(text, spans, head, greeted, others - (greeted or frozenset()))[0]
        ):
            found.append(head)
            break
    for start in range(1, first):  # the note's own sign-off before what it carries (a forward)
        tail = range(start, first)
        if (
            first < len(spans)
            and _set_apart(text, spans, start)
            and _set_apart(text, spans, first)
            and _polite(text, spans, tail)[0]
            and any(spans[i][0].lower() in POLITE for i in tail)
        ):
            found.append(tail)
            break
    last = max((i for i, u in enumerate(used) if u), default=-1)
    for start in range(last + 1, len(spans)):
        tail = range(start, len(spans))
        if start > 0 and _set_apart(text, spans, start) and _polite(text, spans, tail)[0]:
            found.append(tail)
            break
    return found


def _set_apart(text: str, spans: list[Span], i: int) -> bool:
    """Whether a break stands between word ``i - 1`` and word ``i``."""
    return bool(_BREAK.search(text[spans[i - 1][2] : spans[i][1]]))


def _context(spec: dict[str, Any]) -> frozenset[str]:
    """What the world says about the records a composed text carries (never a negation or a
    retraction)."""
    return frozenset(spec.get("context", ())) - NEGATIONS - RETRACTIONS


def _framing(word: str, allowed: frozenset[str] | None) -> bool:
    """Whether a word of a composed text outside its values and dictated words is framing (a
    possessive reads as its noun: "the traveler's reply")."""
    base = word[:-2] if word.endswith("'s") else word
    if allowed is None:
        return base not in NEGATIONS | RETRACTIONS
    return base in allowed


def _clause(
    text: str, spans: list[Span], first: int, end: int, pointing: frozenset[str] = frozenset()
) -> bool:
    """Whether words ``first``..``end`` stand as a clause of their own: at the start or after a
    break (a full stop, a colon, a line end, a bracket, a comma), or after a greeting alone, or
    after the record it carries named first ("DS-007 Onboarding checklist": ``pointing`` words
    with an id); and
    at the end or before a break, or before a sign-off alone ("Hi, MSG-1: agreed Thanks!", where
    the env flattened the agent's lines to one), or before words of ``pointing`` that end the
    clause ("Lower the alert threshold for DS-009": the record it carries, named after it)."""
    before = text[spans[first - 1][2] : spans[first][1]] if first > 0 else "."
    leading = spans[:first]
    if not (
        _BREAK.search(before)
        or all(w.lower() in POLITE for w, _, _ in leading)
        or (
            any(_ID.fullmatch(w) for w, _, _ in leading) and all(w.lower() in pointing for w, _, _ in leading)
        )
    ):
        return False
    return _ends(text, spans, end) or _ends(text, spans, _past(spans, end, pointing))


def _past(spans: list[Span], start: int, vocabulary: frozenset[str]) -> int:
    """The first word from ``start`` on that is not of ``vocabulary``."""
    while start < len(spans) and spans[start][0].lower() in vocabulary:
        start += 1
    return start


def _ends(text: str, spans: list[Span], end: int) -> bool:
    """Whether a clause ends before word ``end``: the text's end, a break, or a sign-off alone."""
    after = text[spans[end - 1][2] : spans[end][1]] if end < len(spans) else "."
    return bool(_BREAK.search(after)) or all(w.lower() in POLITE for w, _, _ in spans[end:])


_ADDRESS = re.compile(r"[^\s<>@,;\"()]+@[^\s<>@,;\"()]+\.[^\s<>@,;\"()]+")
_NAMED_ADDRESS = re.compile(r"\s*(?:\"[^\"]*\"|[^<>@\":;,]*)\s*<\s*(" + _ADDRESS.pattern + r")\s*>\s*")


def address(text: str) -> str | None:
    """The e-mail address a string is (``Name <addr>`` or a bare ``addr``), lower-cased; None for
    any other string."""
    named = _NAMED_ADDRESS.fullmatch(text)
    if named is not None:
        return named.group(1).lower()
    bare = text.strip()
    return bare.lower() if _ADDRESS.fullmatch(bare) else None


def addresses(text: str) -> list[str]:
    """The e-mail addresses a header lists, lower-cased and sorted (display names dropped)."""
    return sorted(a.lower() for a in _ADDRESS.findall(text))


def framed(value: Any, parts: Any) -> bool:
    """``parts`` = ``[text, pattern, text, pattern, ..., text]``: the value is the texts as written
    with each pattern matched between them (one dictated text the env renders twice: two to-dos
    with the same words)."""
    if not isinstance(value, str):
        return False
    optional = [w for p in parts[1::2] if isinstance(p, dict) for a in p.values() for w in _optional(a)]
    if optional:  # what the env renders of a field nobody named, in the frames too (a to-do's due date)
        value = rendered_options(value, optional)
        parts = [rendered_options(p, optional) if i % 2 == 0 else p for i, p in enumerate(parts)]
    return value.startswith(parts[0]) and _framed_from(value, len(parts[0]), parts[1:])


def _framed_from(value: str, start: int, parts: list[Any]) -> bool:
    pattern, text = parts[0], parts[1]
    if len(parts) == 2:
        end = len(value) - len(text)
        return end >= start and value.endswith(text) and _fills(value, start, end, pattern)
    at = value.find(text, start)
    while at != -1:  # each place the next text stands: the pattern before it, the rest after
        if _fills(value, start, at, pattern) and _framed_from(value, at + len(text), parts[2:]):
            return True
        at = value.find(text, at + 1) if text else -1
    return False


def _fills(value: str, start: int, end: int, pattern: Any) -> bool:
    """Whether ``value[start:end]`` fills a slot of a frame: it matches ``pattern``, and where
    the slot opens inside a line of the rendering ("- [x] TODO-01 "), no line of it starts as
    that line does (a new item of the list): "- [ ] Call back about the order" added by hand
    under the ticked to-do is no part of its text (round 54, R1: 1.0), where a to-do written
    with a greeting on lines of its own ("Hi,\n\npriority for this week") still is."""
    text = value[start:end]
    line = value[value.rfind("\n", 0, start) + 1 : start]
    marker = re.match(r"[^\w]*", line)
    lead = marker[0].strip() if marker and line else ""
    if lead and any(part.strip().startswith(lead) for part in text.split("\n")[1:]):
        return False
    return matches(text, pattern)


def matches(value: Any, pattern: Any) -> bool:
    """Whether ``value`` matches ``pattern`` (see the module docstring)."""
    if value is MISSING:
        return False
    if isinstance(pattern, dict) and len(pattern) == 1:
        ((op, arg),) = pattern.items()
        if op == "$any":
            return kind_of(value) == arg
        if op == "$one_of":
            return any(matches(value, p) for p in arg)
        if op in ("$text", "$says"):  # dictated words, read within reason
            return dictated_fault(value, op, arg) is None
        if op == "$composed":
            return composed(value, arg)
        if op == "$framed":
            return framed(value, arg)
        if op == "$json":
            return isinstance(value, str) and matches(_json_or_missing(value), arg)
        if op == "$addresses":
            return isinstance(value, str) and addresses(value) == addresses(" ".join(arg))
        if op == "$ids":  # text naming ids the environment numbered: ["Message-ID: <", "MSG-", "@x>"]
            return isinstance(value, str) and _id_shape(tuple(arg)).fullmatch(value) is not None
        if op == "$contains":
            return isinstance(value, str) and all(str(a).lower() in value.lower() for a in arg)
        if op == "$members":  # a list holding these members and not those, and none but ``within``
            within = arg.get("within")
            return (
                isinstance(value, list)
                and all(_member(value, v) for v in arg.get("has", []))
                and not any(_member(value, v) for v in arg.get("lacks", []))
                and (within is None or all(any(_member([v], w) for w in within) for v in value))
            )
        if op == "$items":
            rows, in_order = (arg["rows"], arg.get("in_order", [])) if isinstance(arg, dict) else (arg, [])
            return isinstance(value, list) and rows_match(value, rows, True, in_order)
        if op == "$holds":
            return isinstance(value, list) and rows_match(value, arg, False)
        if op == "$fields":
            return isinstance(value, dict) and all(matches(get(value, "/" + k), p) for k, p in arg.items())
    if isinstance(pattern, dict):
        return (
            isinstance(value, dict)
            and set(value) == set(pattern)
            and all(matches(value[key], sub) for key, sub in pattern.items())
        )
    if isinstance(pattern, list):
        wanted = [address(p) if isinstance(p, str) else None for p in pattern]
        if isinstance(value, list) and wanted and None not in wanted:  # recipients: in any order
            mails = [address(v) if isinstance(v, str) else None for v in value]
            return None not in mails and sorted(map(str, mails)) == sorted(map(str, wanted))
        return (
            isinstance(value, list)
            and len(value) == len(pattern)
            and all(matches(v, p) for v, p in zip(value, pattern, strict=True))
        )
    if isinstance(pattern, str) and isinstance(value, str) and value != pattern and "@" in pattern:
        mail = address(pattern)
        return mail is not None and address(value) == mail
    return kind_of(value) == kind_of(pattern) and value == pattern


def _said(op: str, arg: Any) -> tuple[Any, ...]:
    """A ``$text`` / ``$says`` pattern's arguments to :func:`said_fault`: the words, the names a
    greeting may hold and those none may (when given), whether an attribution may follow, and
    whether a greeting and a sign-off may stand around: a message, a note or a reason (``$says``,
    ``$text`` with ``attributed``) takes both; a title or a name (any other ``$text`` with
    names) only an attribution; a pattern without names (a verifier from before) as it did."""
    if not isinstance(arg, dict):
        none: frozenset[str] = frozenset()
        return arg, None, none, op == "$says", True, none, None, None, none, none, none, none
    message = op == "$says" or bool(arg.get("attributed"))
    aside = frozenset(arg.get("aside", ()))
    label = frozenset(arg["label"]) if "label" in arg else None
    titles = frozenset(arg["titles"]) if "titles" in arg else None
    names, others = frozenset(arg["names"]), frozenset(arg.get("others", ()))
    acted, things = frozenset(arg.get("acted", ())), frozenset(arg.get("things", ()))
    subjects, done = frozenset(arg.get("subjects", ())), frozenset(arg.get("done", ()))
    return arg["text"], names, others, True, message, aside, label, titles, acted, things, subjects, done


def dictated_fault(value: Any, op: str, arg: Any) -> str | None:
    """Why ``value`` is not the dictated text of a ``$text`` / ``$says`` pattern, or None: it
    must say the words (:func:`said_fault`, or once what the environment rendered beside them is
    left out), and what it says around them of the call's records must be true of them
    (:func:`aside_claim`)."""
    fault = said_fault(value, *_said(op, arg))
    if fault is not None and not _says_rendered(value, op, arg):
        return fault
    return aside_claim(value, arg) if isinstance(arg, dict) and isinstance(value, str) else None


def aside_claim(text: str, arg: dict[str, Any]) -> str | None:
    """What the words around a dictated text say of the call's records that is untrue, or None.
    An aside is read by its words (:func:`_aside`), which a route reversed, two names mixed or
    another record's number pass: "(Columbus DC to Reno Overflow)" of a transfer out of Reno
    Overflow (``route``, :func:`reversed_route`); "(Reno DC)" of Reno Overflow beside Columbus
    DC (``phrases``, the names of several words the records have, :func:`mixed_name`);
    "(partition 2)" of a pause on partition 1 (``numbered``, the numbers the call passes by
    their parameter's name, :func:`misnumbered`). Round 58, R1 and R2: each paid 1.0. What the
    dictated words say themselves is the user's: a check they fail is not applied."""
    dictated = str(arg.get("text", ""))
    route, numbered = arg.get("route") or {}, arg.get("numbered") or {}
    phrases = list(arg.get("phrases") or ())
    for check in (
        lambda t: reversed_route(t, route),
        lambda t: mixed_name(t, phrases),
        lambda t: misnumbered(t, numbered),
    ):
        if check(dictated) is None:
            fault = check(text)
            if fault is not None:
                return fault
    return None


def mixed_name(text: str, phrases: list[str]) -> str | None:
    """Two capitalised words side by side that are words of the records' names of several words
    (``phrases``) but stand side by side in none of them ("Reno DC" of Reno Overflow and
    Columbus DC): a name of no record. None where every such pair is part of a name."""
    named = [words(p) for p in phrases]
    pairs = {(n[i], n[i + 1]) for n in named for i in range(len(n) - 1)}
    parts = {w for n in named for w in n}
    folded = _folded(text)
    spans = _spans(folded)
    for (a, _, a_end), (b, b_start, _) in itertools.pairwise(spans):
        if not (a[:1].isupper() and b[:1].isupper()) or folded[a_end:b_start].strip():
            continue
        pair = (a.lower(), b.lower())
        if pair[0] in parts and pair[1] in parts and pair not in pairs:
            return f"'{a} {b}' mixes the words of two names"
    return None


def _says_rendered(value: Any, op: str, arg: Any) -> bool:
    """Whether ``value`` says the words once what the environment rendered of optional fields
    beside them is left out (:func:`rendered_options`)."""
    plain = rendered_options(value, _optional(arg))
    return plain != value and said_fault(plain, *_said(op, arg)) is None


def _optional(arg: Any) -> list[str]:
    """The words of the optional fields a dictated text's environment may render beside it."""
    return list(arg.get("optional", ())) if isinstance(arg, dict) else []


def rendered_options(value: Any, optional: list[str]) -> Any:
    """``value`` less what an environment renders beside dictated words of an optional field the
    user never named: a word of the field's name and its date, time or number ("Book the room
    (due 2026-01-15)" of a to-do given a due date). The record's own check leaves such a field
    free, so the file the environment renders from the record does too (round 30, H2: 0.714).
    ``optional``: the words of those fields' names (``$says`` in a file the environment renders)."""
    if not optional or not isinstance(value, str):
        return value
    names = "|".join(re.escape(w) for w in optional)
    field = rf"(?i)(?:,\s*)?\b(?:{names})\s+(?:{_DATE.pattern}|\d+)(?![\w:-])"
    plain = re.sub(field, "", value)
    return re.sub(r"\s*\(\s*\)", "", re.sub(r"\(\s*,\s*", "(", plain))


def text_fault(value: Any, pattern: Any) -> str | None:
    """Why ``value`` is not the free text ``pattern`` reads (``$text``, ``$says``, ``$composed``),
    or None when it is, or when ``pattern`` is no such pattern (``tasks score --explain``)."""
    if not isinstance(pattern, dict) or len(pattern) != 1:
        return None
    ((op, arg),) = pattern.items()
    if op in ("$text", "$says"):
        return dictated_fault(value, op, arg)
    if op == "$composed":
        return composed_fault(value, arg)
    return None


def _json_or_missing(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return MISSING


def _member(values: list[Any], pattern: Any) -> bool:
    """Whether a list holds ``pattern``: a member as written, or one matching an ``$ids`` pattern."""
    if isinstance(pattern, dict):
        return any(matches(v, pattern) for v in values)
    return pattern in values


@functools.lru_cache(maxsize=1024)
def _id_shape(parts: tuple[str, ...]) -> "re.Pattern[str]":
    """An ``$ids`` pattern as a regular expression: text as written, each id prefix followed by
    digits (``["mail/drafts/", "MSG-", ".eml"]`` is ``mail/drafts/MSG-<digits>.eml``)."""
    return re.compile("".join(re.escape(p) + (r"\d+" if i % 2 else "") for i, p in enumerate(parts)))


def same(a: Any, b: Any) -> bool:
    """Identical JSON values (MISSING only equals MISSING): equal, and of one type at every leaf
    (``1`` is not ``1.0`` nor ``True``; ``0.0`` is not ``-0.0``), as their JSON texts would say."""
    if a is MISSING or b is MISSING or a is b:
        return a is b
    return a == b and _same_types(a, b)


def _same_types(a: Any, b: Any) -> bool:
    """For two equal values: the same type at every leaf (and the same sign of every float).
    Leaves are checked in the loops (most of a state is strings): one call per container."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        pairs: Any = ((value, b[key]) for key, value in a.items())
    elif isinstance(a, list):
        pairs = zip(a, b, strict=True)
    else:
        return not isinstance(a, float) or math.copysign(1.0, a) == math.copysign(1.0, b)
    for x, y in pairs:
        kind = type(x)
        if kind is not type(y):
            return False
        if kind is float:
            if math.copysign(1.0, x) != math.copysign(1.0, y):
                return False
        elif isinstance(x, (dict, list, float)) and not _same_types(x, y):
            return False
    return True


_REMOVED = object()  # a path's end in a trie of removed paths (same_without)


def same_without(a: Any, b: Any, paths: list[str]) -> bool:
    """``same(without(a, paths), without(b, paths))``, without copying either value."""
    trie = _removal_trie(tuple(paths)) if paths and a is not MISSING and b is not MISSING else None
    if trie is None:
        return same(without(a, paths), without(b, paths))
    return _same_except(a, b, trie)


@functools.lru_cache(maxsize=1024)
def _removal_trie(paths: tuple[str, ...]) -> dict[str, Any] | None:
    """The paths as nested dicts ending in ``_REMOVED`` (shared: never changed once made); None
    for a path ``without`` reads in a way a trie cannot say (no leading slash, digits that are
    not a plain list index). A guard lists the same paths for every record it covers."""
    trie: dict[str, Any] = {}
    for path in paths:
        parent, _, last = path.rpartition("/")
        if parent and not parent.startswith("/"):
            return None
        parts = [*(parent[1:].split("/") if parent else []), last]
        keys = [p.replace("~1", "/").replace("~0", "~") for p in parts]
        if any(k.isdigit() and not (k.isascii() and (k == "0" or not k.startswith("0"))) for k in keys):
            return None
        node = trie
        for key in keys[:-1]:
            child = node.setdefault(key, {})
            if child is _REMOVED:
                break  # a path above is removed already: nothing left to remove below it
            node = child
        else:
            node[keys[-1]] = _REMOVED
    return trie


def _same_except(a: Any, b: Any, trie: dict[str, Any]) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        for key, value in a.items():
            sub = trie.get(key) if isinstance(key, str) else None
            if sub is _REMOVED:
                continue
            if key not in b or not (_same_except(value, b[key], sub) if sub else same(value, b[key])):
                return False
        return all(key in a or (isinstance(key, str) and trie.get(key) is _REMOVED) for key in b)
    if isinstance(a, list):
        if len(a) != len(b):
            return False
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            sub = trie.get(str(index))
            if sub is _REMOVED:
                continue  # blanked on both sides
            if not (_same_except(x, y, sub) if sub else same(x, y)):
                return False
        return True
    return same(a, b)


def without(value: Any, paths: list[str]) -> Any:
    """A copy of value with the given paths removed (list items blanked, so indices hold)."""
    if value is MISSING or not paths:
        return value
    value = json.loads(json.dumps(value))
    for path in paths:
        parent_path, _, raw = path.rpartition("/")
        parent = get(value, parent_path)
        last = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(parent, dict):
            parent.pop(last, None)
        elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
            parent[int(last)] = None
    return value


def _same_unlooked(after: Any, before: Any, looked: dict[str, Any], ignore: list[str]) -> bool:
    """Whether a record is as it was but for the ``ignore`` paths and what looking at it changes.
    Most records of a guarded collection are untouched: an identical pair needs no copies."""
    if same(after, before):
        return True
    return same_without(unlooked(after, looked), unlooked(before, looked), ignore)


def unlooked(record: Any, looked: dict[str, Any]) -> Any:
    """A copy of ``record`` without what looking at it changes (``looked``: a field path -> the
    members a list field gains when the record is read, or None for a value reading changes)."""
    if not looked or not isinstance(record, dict):
        return record
    record = json.loads(json.dumps(record))
    for path, members in looked.items():
        parent_path, _, raw = path.rpartition("/")
        parent = get(record, parent_path)
        key = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(parent, dict) or key not in parent:
            continue
        if members is None:
            del parent[key]
        elif isinstance(parent[key], list):
            parent[key] = [v for v in parent[key] if v not in members]
    return record


_MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")


def in_time_order(content: str, before: str | None, until: str | None = None) -> bool:
    """Whether a file's dated lines keep time: each dated line no earlier than the dated line
    above it, and each line added since ``before`` no earlier than the latest one there and, with
    ``until`` (``YYYY-MM-DDTHH:MM:SS``), no later than that (a timeline or a log is appended to,
    now: an entry back-dated, dated years ahead, or put above the entries it follows, is not the
    asked entry). Times in another zone than UTC are not compared."""
    old = set(norm_text(before or "").split("\n"))
    latest = max((utc_moment(line) or "" for line in old), default="")
    previous = ""
    for line in norm_text(content).split("\n"):
        moment = utc_moment(line)
        if moment is None:
            continue
        added = line not in old
        if moment < previous or (added and (moment < latest or (until is not None and moment > until))):
            return False
        previous = moment
    return True


def utc_moment(line: str) -> str | None:
    """The first timestamp of a line as ``YYYY-MM-DDTHH:MM:SS`` (UTC), or None."""
    found = _MOMENT.search(line)
    if found is None or (found.group(3) or "Z") not in ("Z", "+00:00", "+0000"):
        return None
    text = found.group(0)
    day, clock = text[:10], text[11:16]
    seconds = found.group(1) or ":00"
    return f"{day}T{clock}{seconds}"


def untimed(line: str) -> str:
    """A line with every ISO timestamp replaced by ``<time>`` (log lines say *when*; a check on
    a line pins *what*)."""
    return _MOMENT.sub("<time>", line)


def norm_text(text: str) -> str:
    """Text up to line endings, trailing spaces and blank lines at either end."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def norm_cell(cell: str) -> str:
    """A CSV cell up to surrounding spaces and number formatting ("3", "3.0", " 3 ")."""
    cell = cell.strip()
    try:
        number = float(cell)
    except ValueError:
        return cell
    return repr(number) if math.isfinite(number) else cell


def csv_table(text: str, delimiter: str) -> dict[str, Any]:
    rows = [
        [norm_cell(cell) for cell in row]
        for row in csv.reader(io.StringIO(text), delimiter=delimiter)
        if any(cell.strip() for cell in row)
    ]
    return {"header": rows[0] if rows else [], "rows": rows[1:]}


def markdown_sections(text: str) -> dict[str, str]:
    """``## Heading`` (lower-cased) -> the section's text, normalized."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in norm_text(text).split("\n"):
        if line.startswith("#"):
            current = line.lstrip("#").strip().lower()
            found[current] = []
        elif current is not None:
            found[current].append(line)
    return {name: norm_text("\n".join(body)) for name, body in found.items()}


def _singular(heading: str) -> list[str]:
    """A heading's words up to a plural: "## Results" names the asked "## Result"."""
    return [w.removesuffix("s") for w in words(heading)]


def section(sections: dict[str, str], name: str) -> str | None:
    """The body of the section ``name`` (lower-cased) of :func:`markdown_sections`, its heading
    read by its words up to a plural ("## Results" is the asked "## Result"), or None."""
    if name in sections:
        return sections[name]
    return next((body for heading, body in sections.items() if _singular(heading) == _singular(name)), None)


def misleveled(content: str, levels: dict[str, int]) -> str | None:
    """Why a Markdown file heads an asked section at another level than the user wrote it, or
    None: "# Result" for the asked "## Result" is another outline than the one asked for (round
    29: it paid 1.0). A section the file lacks is the section check's fault, not this one's."""
    found: dict[tuple[str, ...], set[int]] = {}
    for line in norm_text(content).split("\n"):
        level = len(line) - len(line.lstrip("#"))
        if 0 < level <= 6:
            found.setdefault(tuple(_singular(line[level:])), set()).add(level)
    for name, level in levels.items():
        at = found.get(tuple(_singular(name)), set())
        if at and level not in at:
            return f"“{'#' * min(at)} {name}” where the user asked for “{'#' * level} {name}”"
    return None


def parse_file(text: str, fmt: str) -> Any:
    """A file's content in the form its check compares (raises ValueError if it does not parse)."""
    if len(text) > _LIMIT:
        raise ValueError("file too large to check")
    if fmt == "json":
        return json.loads(text, object_pairs_hook=_unique_keys)
    if fmt == "csv":
        return csv_table(text, ",")
    if fmt == "tsv":
        return csv_table(text, "\t")
    if fmt == "lines":
        return [untimed(line) for line in norm_text(text).split("\n")]
    if fmt == "markdown":
        return markdown_sections(text)
    return norm_text(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys stand once: ``{"new_incident": "INC-2041", "new_incident":
    "INC-2042"}`` says two things, and a parser keeps either (round 46, R3: 1.0)."""
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key stands twice in a JSON object")
    return dict(pairs)


def rows_match(
    rows: list[Any], patterns: list[Any], exact: bool, in_order: "list[int] | None" = None
) -> bool:
    """Every expected row matched by a distinct actual row, in any order (``exact``: nothing
    extra) but for the patterns at ``in_order``, whose rows stand in that order."""
    if exact and len(rows) != len(patterns):
        return False
    unused = list(range(len(rows)))
    placed: dict[int, int] = {}
    for n, pattern in enumerate(patterns):
        hit = next((i for i in unused if matches(rows[i], pattern)), None)
        if hit is None:
            return False
        unused.remove(hit)
        placed[n] = hit
    kept = [placed[n] for n in in_order or () if n in placed]
    return kept == sorted(kept)


def _named_rows(table: dict[str, Any], expected: dict[str, Any]) -> list[list[Any]] | None:
    """A parsed table's rows with each cell that names an expected id read as that id
    (:func:`_as_named`), or None when its header is not the expected one."""
    if [norm_words(h) for h in table["header"]] != [norm_words(h) for h in expected["header"]]:
        return None
    return [[_as_named(cell, expected["rows"]) for cell in row] for row in table["rows"]]


def _as_named(cell: Any, rows: list[Any]) -> Any:
    """A cell that is an expected id but for case ("ai-006" of AI-006) as the id: an id is a name,
    and case says nothing of which record it names (round 53, R1: 0.833). Only ids (letters and
    digits, as "AI-006" or "paygw-a1"), never a word, where case may be a claim, but for a word
    capitalised as a cell's first letter."""
    if isinstance(cell, str) and cell[:1].isupper() and cell[1:].islower():
        # ... and a word with a capital only to start it ("Cancelled" of the status cancelled),
        # as a person heads a cell (round 61, R2: 0.875)
        lowered = cell.lower()
        if any(isinstance(row, list) and lowered in row for row in rows):
            return lowered
    if (
        not isinstance(cell, str)
        or not any(ch.isdigit() for ch in cell)
        or not any(ch.isalpha() for ch in cell)
    ):
        return cell
    folded = cell.casefold()
    named = {
        v
        for row in rows
        if isinstance(row, list)
        for v in row
        if isinstance(v, str) and v.casefold() == folded
    }
    return next(iter(named)) if len(named) == 1 else cell


def content_matches(
    content: str,
    fmt: str,
    expected: Any,
    known: list[str] | None = None,
    note: Any = None,
    denied: "list[str] | tuple[str, ...]" = (),
) -> bool:
    """Whether a file's content holds what ``expected`` asks in its format (``known``, ``note``:
    :func:`lines_match`; ``denied``: what an asked section may say did not happen, the claims of
    :func:`section_fault`)."""
    try:
        parsed = parse_file(content, fmt)
    except ValueError:
        return False
    if fmt in ("csv", "tsv"):
        rows = _named_rows(parsed, expected)
        return rows is not None and rows_match(rows, expected["rows"], expected.get("exact", True))
    if fmt == "lines":
        return lines_match(parsed, expected, known, note)
    if fmt == "markdown":  # each asked section holds its texts, and no line is written twice
        said = [line for line in norm_text(content).split("\n") if _WORD.search(line)]
        bodies = {name: section(parsed, name) for name in expected}
        return len(set(said)) == len(said) and all(
            (body := bodies[name]) is not None
            and _holds_each(body, texts)
            and not _unsaid(body, texts, frozenset(denied))
            for name, texts in expected.items()
        )
    return matches(parsed, expected)


REPORTING = _vocabulary(  # the words a short report uses around the values it gives
    "summary report handover result results status update updated details detail notes note item items"
    " value values record records id ids new created made set changed now afterwards after final current"
    " is was are were has have been of just already still yet before previously utc gmt applied"
    " successfully as requested asked contains holds includes field fields key row column table path file"
    " metric metrics change changes one"  # a table's "| metric | value |"; "(one duplicate dropped)"
    " list lists"  # "marked urgent in the message review list" (round 45, R2: 0.6)
    # when the report says a value held: "empty at first, now 2 rules" (round 55, R4: 0.909)
    " first initially originally earlier prior"
    # a quantity with its unit and how it moved: "9 units of SKU-17680", "went from 60 to 51"
    " x units unit pcs pieces qty went down up dropped rose increased decreased reduced"
)
# what a report may say the asked work came to, unless a record's empty field makes it a claim
# ("Booking confirmed: BKG-50066", round 44, R1: 0.667; never of a trip whose confirmed_at is empty)
CONCLUDED = _vocabulary("confirmed")
_PLAIN_WORDS = (PLAIN | MONTHS | WEEKDAYS) - NEGATIONS - RETRACTIONS
_MONTH = {
    name: number
    for number, names in enumerate(
        (
            "jan january",
            "feb february",
            "mar march",
            "apr april",
            "may",
            "jun june",
            "jul july",
            "aug august",
            "sep sept september",
            "oct october",
            "nov november",
            "dec december",
        ),
        start=1,
    )
    for name in names.split()
}
_DAY = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?")
_ISO_DATE_PARTS = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def said_dates(said: list[str]) -> list[tuple[int, int | None]]:
    """The days a text names, as (month, day): an ISO date, or a month with its day beside it
    ("March 14", "14 March", "Mar 14th"); a month alone has no day ("in March"), and "may" is a
    month only with one."""
    found: list[tuple[int, int | None]] = []
    for i, word in enumerate(said):
        iso = _ISO_DATE_PARTS.match(word)
        if iso:
            found.append((int(iso[2]), int(iso[3])))
            continue
        month = _MONTH.get(word)
        if month is None:
            continue
        beside = [said[k] for k in (i + 1, i - 1) if 0 <= k < len(said)]
        day = next((int(m[1]) for w in beside if (m := _DAY.fullmatch(w)) and 1 <= int(m[1]) <= 31), None)
        if day is not None or word != "may":
            found.append((month, day))
    return found


def _known_days(known: Any) -> set[tuple[int, int, int]]:
    """The days (year, month, day) the ISO dates among ``known`` hold."""
    return {(int(m[1]), int(m[2]), int(m[3])) for w in known for m in _ISO_DATE_PARTS.finditer(str(w))}


def wrong_dates(said: list[str], known: Any) -> list[str]:
    """The days ``said`` names that no value of ``known`` holds: a pickup "on March 14" of a
    transfer on March 13 (round 44, R4: 1.0, where any number beside a month passed), or a
    weekday none of them falls on ("on Friday" of a class on Saturday, January 10); nothing
    where no value holds a date to hold it against."""
    held = _known_days(known)
    if not held:
        return []
    days = {(month, day) for _, month, day in held}
    months = {month for month, _ in days}
    weekdays = {WEEKDAY_NAMES[date(*d).weekday()] for d in held if _real_day(*d)}
    wrong = [
        f"{month:02d}-{day:02d}" if day is not None else f"month {month}"
        for month, day in said_dates(said)
        if ((month, day) not in days if day is not None else month not in months)
    ]
    return wrong + [w for w in said if w in _WEEKDAY_OF and _WEEKDAY_OF[w] not in weekdays]


def known_day_numbers(said: list[str], known: Any) -> set[int]:
    """The positions in ``said`` of day numbers beside a month that name a day of ``known``
    ("10" of "January 10" beside a class on 2026-01-10): a date, not a number of its own."""
    days = {(month, day) for _, month, day in _known_days(known)}
    found: set[int] = set()
    for i, word in enumerate(said):
        month = _MONTH.get(word)
        for k in (i + 1, i - 1):
            hit = _DAY.fullmatch(said[k]) if month is not None and 0 <= k < len(said) else None
            if hit and (month, int(hit[1])) in days:
                found.add(k)
    return found


def _real_day(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


# the words a text the agent composes may frame the values it carries with, whatever the task
_GENERIC_FRAMING = POLITE | MENTION | POINTING | POSSESSIVES | REPORTING | HANDING_ON


def section_fault(content: str, check: dict[str, Any]) -> str | None:
    """Why a Markdown file the user asked for says more than the asked values, or None: every
    word of it outside the asked texts is framing, as in a composed text (:func:`composed_fault`):
    a heading or a label ("## Result", "- new_return:"), a word that points at a record, a word
    of ``framing`` (what the world says about the records the values come from: their kinds, ids
    and short values; the fields asked for), or a date. "AI-006 (already done and closed by
    bruno)" beside an open action item, or "incident resolved" beside a restart, are claims the
    user did not ask for and the world does not make; so is any word of ``claims`` ("sent"
    beside a draft's id), and so is a value labelled with the words only another asked value's
    description holds (``labels``, :func:`mislabelled`: the two ids given for each other). A line
    naming another record the run made or changed may say what the world says of it and of the
    acts on it (``about``, per id: "Opened incident INC-2042 for inventory-sync", "Removed rule 12
    from RCP-01"), on that line only; a heading is the file's own title. Where the run left a
    draft unsent, ``sent`` holds the ids of the records it did send: a sentence that says
    something was sent names one of them ("SMS sent to the traveler: MSG-0001"), else it claims
    the drafts went out ("Both forwards have been sent."). ``route``: where the records start
    and end (:func:`reversed_route`). ``numbers``: a whole-number field of the asked records by
    its label, with what it held before and after the run: a number a report gives that label is
    one of them ("committed 23" of a partition whose committed offset is 21 is untrue, though 23
    is the asked position; :func:`misnumbered`), and one it held only before the run
    (``numbers_before``) is said as what it was ("from 7 to 12", "was 7"), not as what it is
    ("Current position: 7").
    ``states``: per asked record id, the states its kind can be in and it is not, which a line
    naming it and no other record may not give it ("Return RMA-00001 (refunded)" of a return
    received), unless it denies them ("not refunded yet"); a line naming no id, the one asked
    record of the kind it names (``kinds``: per asked id, its kind's words). ``foreign``: per asked record id,
    what the world says only of other records the run changed, which a clause naming it may not
    give it (:func:`foreign_words`)."""
    expected, framing, claims = check["expected"], check["framing"], check.get("claims", ())
    about, states, kinds = check.get("about") or {}, check.get("states") or {}, check.get("kinds") or {}
    acts = check.get("acts") or {}
    turned = reversed_route(content, check.get("route") or {})
    if turned is not None:
        return turned
    wrong = misnumbered(content, check.get("numbers") or {}, check.get("numbers_before") or {})
    if wrong is not None:
        return wrong
    asked = [str(t) for texts in expected.values() for t in texts]
    swapped = mislabelled(content, asked, check.get("labels") or {})
    if swapped is not None:
        return swapped
    own = {w for texts in expected.values() for t in texts for w in words(t)}
    plain = POLITE | MENTION | POINTING | REPORTING | CONCLUDED | _PLAIN_WORDS
    allowed = (plain | frozenset(framing) | own) - frozenset(claims)
    # (a day, not a time of day: the time a record was made moves with the clock an agent's
    # reads move; "sent 05:40" of a message the reference sent at 05:30 is true)
    undated = wrong_dates(words(content), [*framing, *own])
    if undated:
        return "a date the records do not hold: " + ", ".join(undated[:4])
    odd: list[str] = []
    sent = check.get("sent")
    # a number the asked records held only earlier, on a line that says it was: "rewound from 27"
    earlier = frozenset(n for held in (check.get("numbers_before") or {}).values() for n in held)
    for line in content.splitlines():
        line = _DONE.sub(" ", line)  # "Done." alone: the asked work reported done, of no record
        line = to_come(_NOTHING_ELSE.sub(" ", line), acts)
        untrue = _states_of(words(line), states, kinds)  # what the one record it names is not
        said = _denied(words(line), frozenset(claims) | _state_words(untrue))
        if line.lstrip().startswith("#") and not set(said) & (NEGATIONS | RETRACTIONS | set(claims)):
            continue  # the file's title or a section's name: "# Quarterly review prep"
        # what the world says of a record the line names is true of it, though a claim of an
        # asked record: "Health check HC-0001 failed" beside an incident whose health check
        # field is empty (round 59, R2: 0.889)
        near = {w for t in said for w in about.get(t, ()) if t not in own or w not in claims}
        here = allowed | frozenset(near) | (earlier if set(said) & _PAST else frozenset())
        # words told by their neighbour: a day's number beside its month, a word written apart
        paired = known_day_numbers(said, [*framing, *own]) | _split_compounds(said, here)
        odd += [w for k, w in enumerate(said) if not _told(w, here) and k not in paired]
        odd += [w for w in said if w in untrue and w not in odd]
        odd += [s for s in untrue if " " in s and _find(said, s.split()) and s not in odd]  # "store credit"
        foreign = foreign_words(line, check.get("foreign") or {}, about, plain | own)
        odd += [w for w in foreign if w not in odd]
        if sent is not None:
            odd += [w for w in _unsent_claims(line, frozenset(sent)) if w not in odd]
    return "words that are no framing: " + ", ".join(repr(w) for w in odd[:4]) if odd else None


# where a line parts into clauses, each about the records it names: "Return RMA-00001 received;
# the look-alike order was cancelled" says "cancelled" of no return
_CLAUSE_BREAK = re.compile(r"[.;!?](?=\s|$)|\s(?:and|but|while|whereas|then)\s", re.IGNORECASE)
LINKING = _vocabulary("for of on against from to")  # what ties one record to another
_LINK_GAP = 3  # the most words between two ids a linking word ties: "RF-00002 for the HM-3001 return"


def foreign_words(
    line: str, foreign: dict[str, list[str]], about: dict[str, list[str]], plain: frozenset[str]
) -> list[str]:
    """The words of ``line`` that give an asked record it names what the world says only of
    another record the run changed (``foreign``, per asked id; round 46, R2: each paid 1.0):
    "Return RMA-00001 (reason: found a better price elsewhere)" of a return opened as wrong_item,
    when that is why another order was cancelled; "Refund RF-00002 for the HM-3001 return" of a
    refund of that cancelled order. A clause that names the other record too may say what the
    world says of both ("Refund RF-00002 issued, ORD-100007 cancelled": ``about``), but a linking
    word may not tie the two where the world ties them nowhere ("Refund RF-00002 for return
    RMA-00001"; "Return RMA-00001 for ORD-100007"). A denied word claims nothing ("not
    cancelled"); ``plain`` words say nothing of a record."""
    odd: list[str] = []
    for clause in _CLAUSE_BREAK.split(line):
        tokens = words(clause)
        named = [w for w in tokens if w in about]
        asked = [w for w in named if w in foreign]
        if not asked:
            continue
        theirs = frozenset(w for a in asked for w in foreign[a])
        mine = plain | frozenset(w for k in named for w in about[k])
        said = _denied(tokens, theirs)
        odd += [w for w in said if w not in named and _among(w, theirs) and not _told(w, mine)]
        ids = [k for k, w in enumerate(tokens) if _ID.fullmatch(w)]
        for i, j in itertools.pairwise(ids):
            gap = set(tokens[i + 1 : j])
            if j - i - 1 > _LINK_GAP or not gap & LINKING or gap & NEGATIONS:
                continue
            x, y = tokens[i], tokens[j]
            if _among(y, frozenset(foreign.get(x, ()))) or _among(x, frozenset(foreign.get(y, ()))):
                odd += [f"{x} {' '.join(tokens[i + 1 : j])} {y}"]
    return odd


def _split_compounds(said: list[str], allowed: frozenset[str]) -> set[int]:
    """The positions of two words in a row that are an allowed word written apart ("pick up"
    of a trip's ``pickup_eta_at``: "is en route to pick up Wei Silva"; round 49, R2: 0.833)."""
    found: set[int] = set()
    for k in range(len(said) - 1):
        if _told(said[k] + said[k + 1], allowed):
            found |= {k, k + 1}
    return found


def _states_of(said: list[str], states: dict[str, list[str]], kinds: dict[str, list[str]]) -> frozenset[str]:
    """The states the one record a line names is not in (``states``, per asked id), which the
    line may deny ("RMA-00001 received, not refunded yet") and may not give it; none where the
    line names several records. A line naming no id names the one asked record of the kind it
    names (``kinds``, per asked id: "Note: refund was issued as store credit" is about the
    asked refund; round 64, R1: 1.0)."""
    ids = [w for w in said if _ID.fullmatch(w)]
    if not ids:
        ids = [key for key, kind in kinds.items() if any(_among(w, frozenset(kind)) for w in said)]
    return frozenset(states.get(ids[0], ())) if len(ids) == 1 else frozenset()


def _state_words(states: frozenset[str]) -> frozenset[str]:
    """The words a negation before them denies of ``states``: each state's own, but those of a
    state that is itself a denial ("not as described" is claimed, never denied)."""
    return frozenset(w for s in states if s.split()[0] not in DENIALS for w in s.split())


DENIALS = _vocabulary("no not never without")  # what says a claim did not come true: "no due date"


def _denied(said: list[str], claims: frozenset[str]) -> list[str]:
    """``said`` less each negation right before one or two words of ``claims`` and those words:
    a claim denied is what the world says ("TODO-01 (open, no due date)" of a to-do whose due
    date is empty; "draft not sent"; round 33, K1: 0.75)."""
    kept: list[str] = []
    i = 0
    while i < len(said):
        claimed = 0
        while said[i] in DENIALS and claimed < 2 and i + 1 + claimed < len(said):
            if said[i + 1 + claimed] not in claims:
                break
            claimed += 1
        if claimed:
            i += 1 + claimed
            continue
        kept.append(said[i])
        i += 1
    return kept


_LINKS = r"(?:\s*[:=]\s*|\s+(?:is|was|now|still|at|of|to|are|were)\b|\s+)*"  # "is now", ": "
# the record a label's number is said of, between them, by its name: "on-hand at Atlanta is now 51"
# (capitalised even where the label is read in any case: "position of payments partition 2: 38"
# gives the position 38, not 2; round 31, I2: 0.75)
_WHERE = r"(?:(?:at|of|in|for)(?:\s+(?-i:[A-Z])[\w-]*){1,3}" + _LINKS + r")?"


_PAST = _vocabulary("was were before previously from earlier had initially originally first prior old")


# a number before a plural noun counts things ("processed 5 records"), never a field's value
# (round 59, R3: "Processed 5 records of payments/p2" read as the processed offset 5: 0.909)
_NOT_COUNTED = r"(?!\s+(?!(?:was|is|has|as|its|this|thus|plus|us|yes)\b)[a-z]+s\b)"


def misnumbered(
    content: str, numbers: dict[str, list[str]], before: dict[str, list[str]] | None = None
) -> str | None:
    """The first number a text gives a field's label that the field never held ("committed 23"
    of a committed offset that was and is 21), or held only ``before`` the run on a line that
    says it as what the field is ("Current position: 7" of a position moved from 7 to 12: on a
    line with a word of :data:`_PAST` or the field's number now, it is what it was), or None."""
    before = before or {}
    for label, held in numbers.items():
        said_label = r"[\s_-]+".join(re.escape(w) for w in label.split())  # "on hand", "on-hand"
        pattern = rf"(?<![\w-]){said_label}{_LINKS}{_WHERE}(\d[\d,]*(?:\.\d+)?)(?![\w-]|\.\d){_NOT_COUNTED}"
        # a label that ends in another is also that one named by its record's kind: "Recipe
        # version: 14" of a recipe at version 14 beside datasets' recipe_version (round 34, L2: 0.875)
        shorter = [other for other in numbers if label.endswith(" " + other)]
        for hit in re.finditer(pattern, content, flags=re.IGNORECASE):
            said = hit.group(1).replace(",", "")
            owner = next((name for name in (label, *shorter) if said in numbers[name]), None)
            if owner is None:
                return f"{label} {said}: the world holds {label} {' or '.join(held)}"
            if said in before.get(owner, ()):
                start = content.rfind("\n", 0, hit.start()) + 1
                end = content.find("\n", hit.end())
                line = content[start : end if end >= 0 else len(content)]
                now = set(numbers[owner]) - set(before[owner])
                if not (set(words(line)) & _PAST or set(re.findall(r"\d+", line)) & now):
                    return f"{owner} {said}: {owner} was {said} before, and is {' or '.join(sorted(now))}"
    return None


_ARROW = re.compile(r"\s*(?:->|=>|→|⇒|⟶)\s*")


def reversed_route(content: str, route: dict[str, list[str]]) -> str | None:
    """Which end of a route a text gives as the other, or None: "from" before a place the
    records only end at, or "to" before one they only start at ("to Z-DTN from Z-HBR" of a ride
    from Z-DTN to Z-HBR); an arrow says "to" ("Columbus DC -> Reno Overflow"). Word order is all
    it reads; a text that names the places without these words says nothing about their order."""
    ends = {side: [words(place) for place in places] for side, places in route.items()}
    for line in _ARROW.sub(" to ", content).splitlines():
        tokens = words(line)
        for side, other in (("from", "to"), ("to", "from")):
            for i in _find(tokens, [side]):
                for place in ends.get(other, []):
                    if tokens[i + 1 : i + 1 + len(place)] == place and place not in ends.get(side, []):
                        end = "starts" if side == "from" else "ends"
                        return f"{' '.join(place)} is said as where the route {end}"
    return None


def _unsent_claims(line: str, sent: frozenset[str]) -> list[str]:
    """The sending words of the sentences of ``line`` that name no record of ``sent``."""
    found: list[str] = []
    for sentence in re.split(r"(?<=[.!?;])\s+", line):
        said = words(sentence)
        if not set(said) & sent:
            found += [w for w in said if w in SENDING]
    return found


_DONE = re.compile(r"(?:^|(?<=[.!?]))\s*(?:all\s+)?done\s*[.!,;:]+", re.IGNORECASE)
# what opens an act still to come, the rest of its sentence: "frozen until the count is
# reconciled", "CC-0002 (awaiting count)"; "please" and "to" only before the act's own verb
_PENDING = re.compile(r"\b(until|till|once|awaiting|pending|please|to)\s+((?:be\s+)?[\w-]+)", re.IGNORECASE)
_LEADS_ON = _vocabulary("until till once awaiting pending please to")
_CAME = _vocabulary("was were had already did")  # what says the act came after all: "until it was reconciled"
_SENTENCE = re.compile(r"[^.;!?]+[.;!?]*")


def to_come(line: str, acts: dict[str, list[str]]) -> str:
    """``line`` without the acts it says are still to come: after "until", "once", "awaiting",
    "pending", or "please" and "to" before an act's verb ("please reconcile", "to be
    reconciled", never "set to cancelled"), each word of ``acts`` (the verbs of the
    environments' tools with their forms: "reconcile", "reconciled") and of what is done
    ("done", "finished") to the end of the sentence, unless it says the act came ("was",
    "already"). A handover tells the next shift what is left ("please count SKU-17643 and
    reconcile CC-0002", "frozen until the count is reconciled"; round 64, R2: 0.875 each); none
    of it claims the act happened, which "CC-0002 reconciled" still does."""
    if not acts:
        return line
    forms = frozenset(acts) | frozenset(f for said in acts.values() for f in said)
    pending = forms | _DONE_ACTS | _LEADS_ON  # what a sentence of an act to come may say
    kept: list[str] = []
    for sentence in _SENTENCE.findall(line):
        lead = next((m for m in _PENDING.finditer(sentence) if _opens(m, acts, forms)), None)
        if lead is None or set(words(sentence[lead.start() :])) & _CAME:
            kept.append(sentence)
            continue
        rest = re.sub(
            r"[\w-]+",
            lambda w: "" if _among(w[0].lower(), pending) else w[0],
            sentence[lead.start(1) :],
        )
        kept.append(sentence[: lead.start(1)] + rest)
    return "".join(kept)


def _opens(lead: re.Match[str], acts: dict[str, list[str]], forms: frozenset[str]) -> bool:
    """Whether a match of :data:`_PENDING` opens an act still to come: "until", "awaiting" and
    the like always; "please" and "to" before an act's own verb, or "to be" before its form."""
    if lead[1].lower() not in ("please", "to"):
        return True
    then = lead[2].lower().split()
    return then[-1] in forms if len(then) == 2 else then[0] in acts


# "nothing else" of a report closing: no more work, which no negation of what it reports
_NOTHING_ELSE = re.compile(r"\b(?:nothing|no)\s+(?:else|further|more)\b", re.IGNORECASE)


def mislabelled(content: str, values: list[str], labels: dict[str, list[str]]) -> str | None:
    """Which asked value a report labels with another's words, or None. ``labels`` holds, per
    asked value (lower-cased), the words only its own description holds. A value's label is the
    words before it on its line back to the previous asked value (or, when none stand there,
    the words after it up to the next): "- New message to the traveler: MSG-0010" gives the
    forward's id as the traveler's message when "traveler" is the other value's word alone."""
    if not labels:
        return None
    asked = {v.lower(): words(v) for v in values}
    for line in content.splitlines():
        tokens = words(line)
        hits = sorted((i, i + len(told), v) for v, told in asked.items() for i in _find(tokens, told))
        for n, (start, end, value) in enumerate(hits):
            before = tokens[hits[n - 1][1] if n else 0 : start]
            near = before or tokens[end : hits[n + 1][0] if n + 1 < len(hits) else len(tokens)]
            label = {part for w in near for part in w.split("_") if part}  # "new_message_to_the_traveler"
            own = set(labels.get(value, ()))
            theirs = {w for other, told in labels.items() if other != value for w in told} - own
            # a record's number and a field's words tell apart on their own: "partition 1:
            # 24" labels partition 0's committed offset with partition 1 (round 43, R1: 1.0)
            for kind in (str.isdigit, lambda w: not w.isdigit()):
                mine, other = {w for w in own if kind(w)}, {w for w in theirs if kind(w)}
                if label & other and not label & mine:
                    return f"{value} is labelled as another asked value ({', '.join(sorted(label & other))})"
    return None


def _holds_each(body: str, texts: list[Any]) -> bool:
    """Whether a section names each asked text as words of its own, as often as it was asked:
    two versions that are both "2" are said twice ("- dataset version: 2" alone paid 1.0 for
    two asked; round 43, R2), and "2" inside "2026" is not said at all."""
    wanted = Counter(str(text).lower() for text in texts)
    return all(
        (times_said(body, text) if words(text) else body.lower().count(text)) >= count
        for text, count in wanted.items()
    )


def _unsaid(section: str, texts: list[Any], denied: frozenset[str] = frozenset()) -> bool:
    """Whether an asked section takes back what it reports: a negation or retraction word the
    asked texts do not hold ("INC-2042 was not opened, ignore this"), other than one denying a
    word of ``denied`` (what did not happen: "no due date", :func:`_denied`)."""
    own = {w for t in texts for w in words(t)}
    said = words(_NOTHING_ELSE.sub(" ", section))  # "Nothing else pending." denies no work done
    return any(w in NEGATIONS | RETRACTIONS and w not in own for w in _denied(said, denied))


def lines_match(
    lines: list[str], expected: list[Any], known: list[str] | None = None, note: Any = None
) -> bool:
    """Whether a file's lines hold every expected entry: a string is a line as written; a pattern
    (dictated words in an env's own line: a to-do, a mail header) matches one line; a
    ``{"$block": pattern}`` (a dictated text of several lines: a mail's body) matches a whole
    run of the lines no other entry holds, so a line added inside it counts ("Correction: ...").
    A line of no words (a quoted blank, ">") need only be there: it keeps no run apart. A line
    that begins as a pattern's line does (``- <time> `` on a timeline) and no entry holds is a
    second one of its kind nobody asked for ("Correction: ignore the line above"). With
    ``known`` (the lines the correct runs' files hold), a line no entry or block holds must be
    one of them, or a header they have too (a "Date:" of another minute), or a courtesy alone:
    anything else is someone's unasked line (a note on a timeline, a "Cc:" added to a draft),
    unless ``note`` is given and the line reads as a note of its words (:func:`noted`: the cover
    note of a forward nobody dictated one for)."""
    read = _read_lines(lines, expected)
    if read is None:
        return False
    claimed, runs = read
    if known is not None and any(_unknown(line, known, note) for run in runs for line in run.split("\n")):
        return False  # a line no correct run writes: an unasked note, a "Cc:" header added to a draft
    heads = {e["$framed"][0] for e in expected if isinstance(e, dict) and "$framed" in e and e["$framed"][0]}
    if any(
        not claimed[i]
        and head
        and line.startswith(head)
        and _WORD.search(line)  # (a quoted blank, "> >", is no line of words: it says nothing)
        and not _courtesy(line[len(head) :])
        for i, line in enumerate(lines)
        for head in heads
    ):
        return False  # another line of the kind the asked text took: a second timeline note (a
        # quoted greeting or sign-off around a quoted message is a courtesy: "> Hi,", "> Thanks!")
    written = [e for e in expected if isinstance(e, str) and _WORD.search(e) and not _courtesy(e)]
    # no line written twice; a courtesy ("Thanks,") may sign a note above an original holding it
    return all(lines.count(e) <= written.count(e) for e in set(written))


def unasked_lines(lines: list[str], expected: list[Any], known: list[str], note: Any = None) -> list[str]:
    """The lines :func:`lines_match` reads as someone's unasked ones (``tasks score --explain``)."""
    read = _read_lines(lines, expected)
    return [] if read is None else [x for run in read[1] for x in run.split("\n") if _unknown(x, known, note)]


def _read_lines(lines: list[str], expected: list[Any]) -> tuple[list[bool], list[str]] | None:
    """Each line claimed by an entry or not, and the runs of unclaimed lines no ``$block`` took;
    None when an entry finds no line (or a block no run)."""
    claimed = [False] * len(lines)
    where: dict[str, list[int]] = {}
    for i in reversed(range(len(lines))):
        where.setdefault(lines[i], []).append(i)
    for entry in expected:
        if isinstance(entry, str):
            free = where.get(entry)
            if not free:
                return None
            if _WORD.search(entry):  # a line of no words (">") holds no run apart
                claimed[free.pop()] = True
    for n, entry in enumerate(expected):
        if not isinstance(entry, str) and not _is_block(entry):
            held = _lines_holding(lines, claimed, entry)
            if held is None or _heading_before(lines, held.start) != _heading_before(expected, n):
                return None  # (an asked line under another heading: a timeline note in "## Resolution")
            claimed[held.start : held.stop] = [True] * len(held)
    runs: list[str] = []
    start = None
    for i in range(len(lines) + 1):
        if i < len(lines) and not claimed[i]:
            start = i if start is None else start
        elif start is not None:
            runs.append("\n".join(lines[start:i]))
            start = None
    for entry in expected:
        if _is_block(entry):
            hit = next((i for i, run in enumerate(runs) if matches(run, entry["$block"])), None)
            if hit is None:
                return None
            runs.pop(hit)
    return claimed, runs


def _heading_before(lines: list[Any], at: int) -> str | None:
    """The last Markdown heading line ("## Timeline") before ``lines[at]``: the section an asked
    line belongs to."""
    return next((x for x in reversed(lines[:at]) if isinstance(x, str) and x.startswith("#")), None)


_COMPOSED_LINES = 3  # a composed note may run over a few lines: the note, a blank, the reference


def _lines_holding(lines: list[str], claimed: list[bool], entry: Any) -> range | None:
    """The unclaimed line that matches a pattern entry, or for a composed text (the agent's own
    wording) the first run of up to :data:`_COMPOSED_LINES` unclaimed lines that does: "Running
    late." then "See the new message: MSG-0001" on the next line is one note."""
    longest = _COMPOSED_LINES if isinstance(entry, dict) and set(entry) == {"$composed"} else 1
    for size in range(1, longest + 1):
        for i in range(len(lines) - size + 1):
            run = range(i, i + size)
            ends = size == 1 or bool(lines[i].strip() and lines[run[-1]].strip())  # no blank edge
            if ends and not any(claimed[j] for j in run) and matches("\n".join(lines[i : i + size]), entry):
                return run
    return None


def _is_block(entry: Any) -> bool:
    return isinstance(entry, dict) and set(entry) == {"$block"}


_TOKEN = re.compile(r"[^A-Za-z0-9_-]+")


def only_ids(content: str, fmt: str, expected: Any, spec: dict[str, Any]) -> bool:
    """No id shaped like the asked ones but other than ``spec["allowed"]`` in the answer (the
    asked section, or the table), and in a table one row per asked item: a report that lists
    every candidate, or several rows for one item, is no answer."""
    try:
        parsed = parse_file(content, fmt)
    except ValueError:
        return False
    if fmt in ("csv", "tsv"):
        named = [row[0] for row in parsed["rows"] if row]
        if any(named.count(row[0]) != 1 for row in expected["rows"] if row and isinstance(row[0], str)):
            return False
        text = " ".join(cell for row in parsed["rows"] for cell in row)
    elif fmt == "markdown":
        text = " ".join(parsed.get(name, "") for name in expected)
    else:
        return True
    allowed = {str(a).lower() for a in spec["allowed"]}
    for token in _TOKEN.split(text.lower()):
        for prefix in spec["prefixes"]:
            rest = token[len(prefix) :] if token.startswith(prefix.lower()) else ""
            if rest.isdigit() and token not in allowed:
                return False
    # "new cleaning recipes: RCP-03, RCP-01": another id of the asked shape listed with the asked
    # one is a second answer, not a record it points at ("the forward of MSG-0003: MSG-0010")
    asked = {str(v).lower() for v in asked_texts(expected, fmt)}
    shape = "|".join(re.escape(p) + r"\d+" for p in spec["prefixes"])
    listed = re.compile(rf"(?<![\w-])({shape})\s*(?:,|/|&|\band\b|\bor\b)\s*({shape})(?![\w-])")
    return not any((a in asked) != (b in asked) for a, b in _overlapping(listed, text.lower()))


def _overlapping(pattern: "re.Pattern[str]", text: str) -> list[tuple[str, str]]:
    """Every pair of a two-group pattern, the second of one pair free to start the next."""
    found, at = [], 0
    while (hit := pattern.search(text, at)) is not None:
        found.append((hit.group(1), hit.group(2)))
        at = hit.start(2)
    return found


def asked_texts(expected: Any, fmt: str) -> list[str]:
    """The values an asked table or section gives (a table's second column)."""
    if fmt in ("csv", "tsv"):
        return [str(row[1]) for row in expected["rows"] if len(row) > 1]
    return [str(t) for texts in expected.values() for t in texts]


def snapshot(ctx: dict[str, Any], turn: int | None) -> tuple[dict[str, Any], dict[str, str]]:
    """(states, files) after a turn; turn None is the end of the run, -1 is S0."""
    if turn is None:
        return ctx["final"], ctx["files"]
    if turn < 0:
        return ctx["initial"], ctx["initial_files"]
    return ctx["turns"][turn]["final"], ctx["turns"][turn]["files"]


def _state_check(kind: str, check: dict[str, Any], after: Any, before: Any) -> float:
    if kind == "value":  # set to the expected value (and so changed from before)
        return float(matches(after, check["expected"]) and not same(after, before))
    if kind == "matches":  # as expected, whether or not it changed (a consequence of the work)
        if after is MISSING and before is MISSING and check.get("unmade"):
            return 1.0  # a record the world makes in time: this run ended before it was made
        return float(matches(after, check["expected"]))
    if kind == "absent":  # deleted
        return float(after is MISSING and before is not MISSING)
    if kind == "unchanged":  # left as it was, apart from the fields listed in ignore
        rest = _same_unlooked(after, before, check.get("looked", {}), check.get("ignore", []))
        unsaid = check.get("unsaid")
        return float(
            rest
            and not _took_back(unsaid, after, before)
            and not claimed(unsaid, after, before)
            and not _misplaced(unsaid, after, before)
        )
    if kind == "others_unchanged":  # every other member of a collection left as it was
        ignore = check.get("ignore", [])
        by_key = check.get("ignore_by_key", {})
        looked = check.get("looked", {})
        keep = [k for k in (before if isinstance(before, dict) else {}) if k not in check.get("except", [])]
        if not keep:
            return 1.0
        now = after if isinstance(after, dict) else {}
        bounds = check.get("may_become", {})
        kept = [
            k in now
            and _same_unlooked(
                now[k], before[k], looked, ignore + by_key.get(k, []) + _moved(now[k], before[k], check)
            )
            and within(now[k], before[k], bounds.get(k, {}))
            for k in keep
        ]
        return sum(kept) / len(kept)
    if kind == "no_extra":  # at most `count` members that were not there before
        now = after if isinstance(after, dict) else {}
        old = before if isinstance(before, dict) else {}
        arrived = check.get("arrivals", ())  # ... besides what the world brought in (a reply fetched)
        made = [k for k, v in now.items() if k not in old and not any(matches(v, p) for p in arrived)]
        return float(len(made) <= check["count"])
    if kind == "only_asked":  # every new member is one of the asked records (none for someone else)
        old = before if isinstance(before, dict) else {}
        made = sorted((k for k in after if k not in old), key=made_order) if isinstance(after, dict) else []
        new = [after[k] for k in made]
        # ... but for what the world brought in once the work was done (a reply fetched)
        new = [m for m in new if not any(matches(m, p) for p in check.get("arrivals", ()))]
        # ... and, in a log, the asked act made again after an asked entry (a check to confirm)
        firsts = [n for n, m in enumerate(new) if any(matches(m, p) for p in check["expected"])]
        new = [
            m
            for n, m in enumerate(new)
            if not (firsts and n > firsts[0] and any(matches(m, p) for p in check.get("repeats", ())))
        ]
        unsaid = check.get("unsaid")  # ... and no free note of one takes it back or names another
        return float(
            all(any(matches(member, p) for p in check["expected"]) for member in new)
            and not any(
                _took_back(_own_acts(unsaid, m), m, {})
                or claimed(unsaid, m, {})
                or _misplaced(unsaid, m, {}, _dictated_elsewhere(unsaid, m, check["expected"]))
                for m in new
            )
        )
    if kind == "created_in":  # a distinct new member per expected record
        new = [v for k, v in after.items() if k not in before] if isinstance(after, dict) else []
        if not isinstance(before, dict):
            before = {}
        found = 0
        for pattern in check["expected"]:
            hit = next((i for i, member in enumerate(new) if matches(member, pattern)), None)
            if hit is not None:
                found += 1
                new.pop(hit)
        return found / len(check["expected"])
    raise ValueError("unknown check kind " + repr(kind))


def _moved(record: Any, before: Any, check: dict[str, Any]) -> list[str]:
    """The fields of a record that made one of the moves the world's clock makes to records of
    its collection (``check["may_move"]``: a driver "available" -> "offline" when a shift ends)."""
    return [
        field
        for field, moves in check.get("may_move", {}).items()
        if any(same(get(before, field), old) and same(get(record, field), new) for old, new in moves)
    ]


def within(record: Any, before: Any, bounds: "dict[str, list[Any]]") -> bool:
    """Whether each field of ``bounds`` (a path -> the values the world's own moves give it)
    holds its value from before or one of those: the clock expires a request, it never cancels
    one (``may_become`` of an ``others_unchanged`` guard)."""
    return all(
        same(get(record, path), get(before, path)) or any(same(get(record, path), v) for v in values)
        for path, values in bounds.items()
    )


TAKEBACKS = _vocabulary(  # a note that says these takes the work back ("Disregard, reopened")
    "ignore disregard scratch retract retracted withdraw withdrawn void nevermind oops"
    " accidentally mistakenly erroneously wrongly"
)
# the same said in two words: "Closed by mistake", "Reassigned in error" (round 50, R3: 1.0)
_TAKEBACK_PAIRS = frozenset({("by", "mistake"), ("in", "error"), ("by", "error"), ("by", "accident")})
_DENIALS = _vocabulary("not never no")


_DONE_ACTS = _vocabulary("done do did does doing complete completed finish finished")  # "done", said as acts
# what says a piece of work goes on: of a record the run completed, its note says it is not done
# ("Still in progress" on an item marked done; round 50, R3: 1.0)
_UNFINISHED = _vocabulary("still progress pending ongoing unfinished incomplete underway wip")


def _took_back(spec: Any, after: Any, before: Any) -> bool:
    """Whether a free note of an edited record (``spec["fields"]``) says the record's own change
    is not so: a take-back word ("by mistake" too), "not"/"never" within two words of a word of
    ``spec["acts"]`` (the new values: "Not done yet - blocked" on an item completed), or of a
    record completed, that the work goes on ("Still in progress"). A note the record held before
    that already says so is none of the run's doing."""
    if not isinstance(spec, dict):
        return False
    acts = frozenset(spec.get("acts", ()))
    done = bool(acts & _DONE_ACTS)
    if done:  # "Amara did not do it." of an item completed (round 42, R4: 1.0)
        acts |= _DONE_ACTS

    def denies(text: Any) -> bool:
        if not isinstance(text, str):
            return False
        said = words(text)
        if any(w in TAKEBACKS or (done and w in _UNFINISHED) for w in said):
            return True
        if any(pair in _TAKEBACK_PAIRS for pair in itertools.pairwise(said)):
            return True
        return any(
            w in _DENIALS and any(_labels(x, acts) for x in said[i + 1 : i + 3]) for i, w in enumerate(said)
        )

    return any(denies(now) and not denies(was) for now, was in _free_notes(spec, after, before))


def _free_notes(spec: dict[str, Any], after: Any, before: Any) -> list[tuple[Any, Any]]:
    """(now, before) of each free note ``spec["fields"]`` names on a record; ``/LIST/*/FIELD``
    names that field of each item of the list (a journal's lines' notes)."""
    pairs = []
    for field in spec.get("fields", ()):
        head, star, tail = field.partition("/*/")
        if not star:
            pairs.append((get(after, field), get(before, field)))
            continue
        items = get(after, head)
        for i in range(len(items) if isinstance(items, list) else 0):
            pairs.append((get(after, f"{head}/{i}/{tail}"), get(before, f"{head}/{i}/{tail}")))
    return pairs


def _own_acts(spec: Any, record: Any) -> Any:
    """``spec`` with only the acts a new record's own values say: of several records made, what
    one of them is (done) says nothing of another (open)."""
    if not isinstance(spec, dict):
        return spec
    own = {w for v in _leaves(record) if isinstance(v, str) for w in words(v)}
    return {**spec, "acts": [w for w in spec.get("acts", ()) if w in own]}


def _dictated_elsewhere(spec: Any, record: Any, patterns: list[Any]) -> list[list[str]]:
    """The texts the user dictated for records other than a new ``record``: for the other new
    ones (``spec["dictated"]``, one list of texts per pattern of ``patterns``; none that one
    ``record`` matches was dictated for) and for records the run did not make (``elsewhere``)."""
    if not isinstance(spec, dict):
        return []
    lists = spec.get("dictated") or []
    mine = [text for texts, p in zip(lists, patterns, strict=False) if matches(record, p) for text in texts]
    return [text for texts in lists for text in texts if text not in mine] + list(spec.get("elsewhere", []))


def _misplaced(spec: Any, after: Any, before: Any, texts: list[list[str]] | None = None) -> bool:
    """Whether a free note the run wrote on a record (``spec["fields"]``) carries a text the user
    dictated for another record (``texts``, else ``spec["elsewhere"]``: each as its own words):
    half or more of its words, two at least ("Agreed with finance on Tuesday." on the item it
    was not dictated for; round 50, R3: 1.0). One word in common is a note's own ("Done as agreed")."""
    if not isinstance(spec, dict):
        return False
    texts = spec.get("elsewhere", []) if texts is None else texts
    if not texts:
        return False
    for text, was in _free_notes(spec, after, before):
        if not isinstance(text, str) or same(text, was):
            continue
        said = set(words(text))
        if any(len(said & set(t)) >= max(2, math.ceil(len(t) / 2)) for t in texts):
            return True
    return False


def claimed(spec: Any, after: Any, before: Any) -> list[str]:
    """The words of a free note the run wrote on an edited record (``spec["fields"]``) that name
    someone or something else of the world, or a state the record is not in (``spec["others"]``:
    "Done by amara" of an item emil did, "Cancelled" of one done, "Duplicate of AI-659"; round
    30, all paid 1.0). A verifier from before (no ``others``) claims nothing."""
    if not isinstance(spec, dict) or not spec.get("others"):
        return []
    others = frozenset(spec["others"])
    found: list[str] = []
    for text, was in _free_notes(spec, after, before):
        if isinstance(text, str) and not same(text, was):
            found += [w for w in words(text) if w in others and w not in found]
    return found


def run_check(ctx: dict[str, Any], check: dict[str, Any]) -> float:
    """One check's score in [0, 1]. "Before" is S0 for end-of-run checks, else the previous turn.
    An ``on_time`` guard (a turn's goal the end still shows) asks whether the work was done by
    the turn's end, not whether it is right (its goal at the end asks that): it passes as its
    goal would, or when the turn changed its subject to what the run ends with."""
    value = _run_check(ctx, check)
    if value < 1.0 and check.get("on_time") and _done_then(ctx, check):
        return 1.0
    return value


def _done_then(ctx: dict[str, Any], check: dict[str, Any]) -> bool:
    """Whether the turn of ``check`` changed its subject to what the end of the run shows (a
    draft's file by its shape: discarded and written again, it is ``MSG-0012.eml``, not the
    reference's ``MSG-0011.eml``)."""
    turn = check["turn"]
    states, files = snapshot(ctx, turn)
    before_states, before_files = snapshot(ctx, turn - 1)
    if check["kind"] == "file":  # a file the env names by an id it numbered: any such file
        like = check.get("path_like")
        paths = [check["path"]] if like is None else sorted(p for p in files if matches(p, like))
        return any(
            files.get(p) is not None and files[p] != before_files.get(p) and files[p] == ctx["files"].get(p)
            for p in paths
        )
    if "env" not in check:
        return False
    env, path = check["env"], check["path"]
    then, before, end = (get(s.get(env, MISSING), path) for s in (states, before_states, ctx["final"]))
    if check["kind"] == "created_in":
        then, before, end = (live(ctx, check, v) for v in (then, before, end))
        made = (
            [k for k in then if k not in before]
            if isinstance(then, dict) and isinstance(before, dict)
            else []
        )
        return len(made) >= len(check["expected"]) and all(k in end and same(then[k], end[k]) for k in made)
    return then is not MISSING and not same(then, before) and same(then, end)


def _run_check(ctx: dict[str, Any], check: dict[str, Any]) -> float:
    turn = check.get("turn")
    states, files = snapshot(ctx, turn)
    before_states, before_files = snapshot(ctx, -1 if turn is None else turn - 1)
    kind = check["kind"]
    if kind == "file":  # written with the expected content (and so changed from before)
        like = check.get("path_like")  # a file the env names by an id it numbered: any such file
        paths = [check["path"]] if like is None else sorted(p for p in files if matches(p, like))
        return max(
            (_file_check(ctx, check, renamed(ctx, check, files.get(p)), before_files.get(p)) for p in paths),
            default=0.0,
        )
    if kind == "file_absent":
        like = check.get("path_like")
        if like is not None:
            return float(any(p not in files for p in before_files if matches(p, like)))
        return float(check["path"] not in files and check["path"] in before_files)
    if kind == "files_unchanged":  # guard: every listed file exactly as before
        kept = [files.get(p) == before_files.get(p) for p in check["paths"]]
        return sum(kept) / len(kept)
    if kind == "files_either":  # guard: each file as one of the correct runs leaves it (its times aside)
        held = [untimed(files.get(p) or "") in allowed for p, allowed in check["paths"].items()]
        return sum(held) / len(held)
    if kind == "repeats":  # guard: an asked write made no more often than the work makes it
        return float(times_made(ctx, check) <= check["count"])
    if kind == "no_new_files":  # guard: no file created but those a correct run creates
        like = check.get("allowed_like", [])
        return float(
            all(p in before_files or p in check["allowed"] or any(matches(p, a) for a in like) for p in files)
        )
    names = renaming(ctx, check)
    path = path_in_run(check["path"], names)
    after = get(states.get(check["env"], MISSING), path)
    before = get(before_states.get(check["env"], MISSING), path)
    if kind in ("no_extra", "created_in", "only_asked"):
        after = live(ctx, check, after)
    if names:
        after, before = _rename(after, names), _rename(before, names)
    return _state_check(kind, check, after, before)


def path_in_run(path: str, names: dict[str, str]) -> str:
    """A check's path with the golden run's ids of new records as this run has them."""
    inverse = {gold: mine for mine, gold in names.items() if not gold.endswith(" voided>")}
    if not inverse:
        return path
    return "/".join(inverse.get(part, part) for part in path.split("/"))


def read_back(ctx: dict[str, Any], check: dict[str, Any]) -> dict[str, Any]:
    """``check`` with each asked value that a field of the world holds after the work as this run
    left that field (``check["read_back"]``: ``[index, env, path]`` per such value). A recipe's
    version after the asked rules is what this run's edits made it: a rule added, removed and
    added again is version 17, and a report of 17 is true where the reference's 15 would be
    false (round 44, R2); whether the edits were right is the state goals' question. A value
    that is the id of a record the run made is read as the file is, under the golden run's id:
    the trip proposed again after the first lapsed (round 61, R3: 0.833)."""
    spec = check.get("read_back")
    if not spec:
        return check
    expected = json.loads(json.dumps(check["expected"]))
    numbers = json.loads(json.dumps(check.get("numbers") or {}))
    names = renaming(ctx, check)  # the file is read with the run's new ids as the golden run's
    for index, env, path in spec:
        value = _rename(get(ctx["final"].get(env, MISSING), path), names)
        if isinstance(value, bool) or not isinstance(value, int | str):
            continue
        try:
            if check["format"] == "csv":
                old, expected["rows"][index][1] = expected["rows"][index][1], norm_cell(str(value))
            elif check["format"] == "json":
                key = list(expected)[index]
                old, expected[key] = expected[key], value
            else:
                old, expected["result"][index] = expected["result"][index], str(value)
        except (IndexError, KeyError, TypeError):
            continue  # a check of another shape: its values as written
        for held in numbers.values():  # the number the report may give the field's label
            held[:] = [str(value) if norm_cell(str(n)) == norm_cell(str(old)) else n for n in held]
    return {**check, "expected": expected, **({"numbers": numbers} if numbers else {})}


def _file_check(ctx: dict[str, Any], check: dict[str, Any], content: Any, before: Any) -> float:
    """A ``file`` check on one file's content (None: no such file) and its content before."""
    check = read_back(ctx, check)
    logs = check.get("by_products")
    if logs:
        made = by_product_ids(ctx, logs)
        asked = sum(entry[2] for entry in logs if len(entry) > 2)  # the log records the user asked for
        content, before = (without_by_products(c, made, asked) for c in (content, before))
    if content is None or content == before:
        return 0.0
    spec = check.get("only_ids")
    if spec is not None and not only_ids(content, check["format"], check["expected"], spec):
        return 0.0
    if check.get("chronological") and not in_time_order(content, before, check.get("dated_until")):
        return 0.0  # a dated entry back-dated, dated ahead, or put above the entries it follows
    later = check.get("later_lines")  # a turn's file: nothing a later turn asks for yet
    if later and any(line in later for line in parse_file(content, "lines")):
        return 0.0
    count = check.get("line_count")  # a text file: no line added, none repeated
    if count is not None and len(counted_lines(content)) != count:
        return 0.0
    if check["format"] == "markdown" and misleveled(content, check.get("levels") or {}):
        return 0.0
    if check["format"] == "markdown" and check.get("framing") is not None:
        return float(
            content_matches(content, "markdown", check["expected"], denied=_deniable(check))
            and section_fault(content, check) is None
        )
    if check.get("extra_keys") == "facts" and check["format"] in ("json", "csv"):
        try:
            parsed = parse_file(content, "json") if check["format"] == "json" else item_values(content, check)
        except ValueError:
            return 0.0
        if parsed is None:  # a table of another shape: its rows as asked
            return float(content_matches(content, "csv", check["expected"]))
        # (read once, whichever of the reads below asks first: the asked records and what the
        # run made also tell which records the asked ones lead to)
        records = functools.cache(lambda: asked_records(ctx, check))
        acted = functools.cache(lambda: made_ids(ctx))
        return float(
            object_matches(
                parsed,
                check["expected"] if check["format"] == "json" else dict(check["expected"]["rows"]),
                records,
                acted,
                lambda: acts_naming(ctx),
                frozenset(check.get("verbs", ())),
                lambda: kind_ids(ctx),
                lambda: timed_acts(ctx),
                lambda: linked_by_kind(ctx, records(), acted()),
            )
        )
    return float(
        content_matches(
            content, check["format"], check["expected"], check.get("known_lines"), check.get("free_note")
        )
    )


def item_values(content: str, check: dict[str, Any]) -> dict[str, Any] | None:
    """An asked table of items and their values ("item,value" / "new_incident,INC-2042") as the
    object it tells, each item a key: a row beside the asked ones is an extra key, held to what
    an extra key of a JSON report may say (:func:`object_matches`: "restarted_host,notify-a1" of
    the host the run restarted is true; round 65, R2: 0.909). None where the table is of another
    shape (more columns, an item twice, asked rows that are patterns). Raises ValueError on a
    file that is no table."""
    expected = check["expected"]
    two = [row for row in expected["rows"] if isinstance(row, list) and len(row) == 2]
    if (
        len(expected["header"]) != 2
        or len(two) != len(expected["rows"])
        or not all(isinstance(cell, str) for row in two for cell in row)
    ):
        return None
    rows = _named_rows(parse_file(content, "csv"), expected)
    if rows is None:
        return None
    if any(len(row) != 2 for row in rows) or len({row[0] for row in rows}) != len(rows):
        raise ValueError("not one value per item")
    return dict(rows)


def _deniable(check: dict[str, Any]) -> list[str]:
    """What an asked section may say did not happen: the claims of the check and the states its
    records are not in ("not refunded yet" of a return received)."""
    states = check.get("states") or {}
    return [*check.get("claims", ()), *(w for held in states.values() for w in _state_words(frozenset(held)))]


def by_product_ids(ctx: dict[str, Any], logs: list[list[str]]) -> set[str]:
    """The ids of the records the run made in the log collections ``logs`` (``[env, collection]``,
    and how many the user asked for: health checks), which an agent may add to by looking."""
    found: set[str] = set()
    for env, collection, *_ in logs:
        final = (ctx["final"].get(env) or {}).get(collection)
        initial = (ctx["initial"].get(env) or {}).get(collection) or {}
        if isinstance(final, dict):
            found |= {key for key in final if key not in initial}
    return found


def without_by_products(content: Any, ids: set[str], asked: int = 0) -> Any:
    """A text file without the environment's own entry about each record of ``ids``, a record
    made by looking (a health check in an incident's timeline): the first line naming it, one
    per record, but for the first ``asked`` such lines (the health check the user asked for).
    Any other line naming one is someone's: a note "Health check HC-0001 FAILED" appended to
    the timeline of a check that passed was taken for the environment's entry and paid 1.0
    (round 36)."""
    if not isinstance(content, str) or not ids:
        return content
    named = re.compile("|".join(rf"(?<![\w-]){re.escape(i)}(?![\w-])" for i in sorted(ids)))
    entries = set(ids)  # the records whose entry has not been met yet
    kept: list[str] = []
    for line in content.split("\n"):
        met = [m.group(0) for m in named.finditer(line) if m.group(0) in entries]
        if met:
            entries.discard(met[0])
            if asked <= 0:
                continue
            asked -= 1
        kept.append(line)
    return "\n".join(kept)


def counted_lines(content: str) -> list[str]:
    """The lines of a text that say something: not blank, not a courtesy alone ("FYI, see
    below.", "Forwarding as requested.", "Thanks!"), which an agent may add to a message or a
    file it writes without adding a claim."""
    return [line for line in norm_text(content).split("\n") if line.strip() and not _courtesy(line)]


_HEADING = re.compile(r"^#{1,6} ")  # a Markdown heading


def _courtesy(line: str) -> bool:
    """Whether a line is a courtesy alone: its words are courtesies, pointing words or names
    ("FYI, see Greta's note below.")."""
    if _HEADING.match(line):
        return False  # a heading is the file's structure ("## Timeline note"), never a courtesy
    spans = _spans(_folded(line))
    vocabulary = POLITE | MENTION | POINTING | COURTESY_LINES
    return bool(spans) and all(
        (base := w[:-2] if w.lower().endswith("'s") else w).lower() in vocabulary or _name(base)
        for w, _, _ in spans
    )


_HEADER = re.compile(r"^([A-Za-z][A-Za-z-]*): ")


def _unknown(line: str, known: list[str], note: Any = None) -> bool:
    """Whether a line says something that no line of ``known`` says, nor a header of theirs,
    nor (with ``note``) a note of the agent's own words about the record (:func:`noted`)."""
    if not _WORD.search(line) or _courtesy(line) or line in known:
        return False
    if note is not None and noted(line, note):
        return False
    head = _HEADER.match(line)
    return head is None or not any(k.startswith(head.group(0)) for k in known)


def noted(line: str, note: Any) -> bool:
    """Whether a line the agent wrote where it may write what it likes (the body of a forward
    nobody dictated one for) says only what ``note`` allows (the words the world and the user say
    of the record and its acts: "FYI - forwarding the escalated message from the follow-up log";
    a list, or ``{"words": [...], "quoted": [...]}`` with the words of the forwarded mail's body,
    which a sentence pointing at it may use, :func:`_quoting`), courtesies, pointing words and
    the words that hand work on ("Passing this on, please handle."; round 32, J1: 0.8), or a
    date; never a negation or a retraction ("Please ignore this, sent by mistake")."""
    told, quoted = (note, []) if isinstance(note, list) else (note.get("words", []), note.get("quoted", []))
    allowed = (_GENERIC_FRAMING | frozenset(told)) - NEGATIONS - RETRACTIONS
    folded = _folded(line)
    spans = _spans(folded)
    quoting = _quoting(folded, spans, frozenset(quoted))
    return all(
        _DATE.fullmatch(w)
        or all(part in allowed or _plural_of(part, allowed) for part in re.split(r"[-_/.]", w) if part)
        or _framing(w, allowed)
        or n in quoting
        for n, w in enumerate(s[0].lower() for s in spans)
    )


def _plural_of(word: str, allowed: frozenset[str]) -> bool:
    """Whether ``word`` is the singular or the plural of an allowed word ("escalation" of
    "escalations")."""
    return len(word) > 3 and (word + "s" in allowed or (word.endswith("s") and word[:-1] in allowed))


_ID = re.compile(r"([A-Za-z]+[-_]?)\d+")


def object_matches(
    value: Any,
    expected: Any,
    known: Any,
    made: Any = dict,
    acts: Any = dict,
    verbs: frozenset[str] = frozenset(),
    kinds: Any = dict,
    timed: Any = frozenset,
    linked: Any = dict,
) -> bool:
    """Whether an asked JSON object holds the asked keys with the asked values, and every other
    key only repeats what the asked records say (``known()``: :func:`asked_records`; a field
    several of them have, as one of them holds it: a draft's thread's subject) or names a record
    the run made, changed or acted on under its kind (``made()``: :func:`made_ids`; ``"health_check":
    "HC-0001"`` beside the asked new incident). An extra key may say
    which purchase order a receipt is for; it may not name another id of an asked id's shape (a
    second answer for the asked thing), carry a value the asked records do not hold (a claim:
    ``"urgent_service"`` naming another service, ``"health_check": "passed"`` for a failed one),
    a flag or a number under a key no asked record has, but for a state one of them is in
    (``"sent": true`` of a sent message; round 59, R3: 0.75; of a draft, a claim), nor give a field of an
    asked record another value than the record has (``"status": "posted"`` beside a draft
    receipt's id contradicts the answer). A key that names an act and a kind holds the id of a
    record of that kind a call of that act named (``acts()``: :func:`acts_naming`):
    ``"forwarded_message": "MSG-0001"`` beside the asked forward's id, when the run forwarded
    MSG-0001; never an id only read or another act's. A key that names one of ``verbs`` (the
    acts of the task's environments) says what that act did, so only that holds it:
    ``"booked_sessions"`` of the four sessions of a series whose first alone the member got is
    a claim, though the series holds all four (round 30, H3: 1.0). A key named for a kind the
    run acted on names the records it acted on, never another of that kind (``kinds()``:
    :func:`kind_ids`): ``"host": "auth-b1"`` beside the new incident, when the run drained
    auth-a1, though the incident's service holds both (round 50, R4: 1.0). A key naming what
    the world times (``timed()``: :func:`timed_acts`, "closed" of a ``closed_at``) claims that act
    too, in the user's words: ``"closed_action_item"`` holds an item the run closed, never the
    new one. A key named for the kind of a record the asked ones lead to holds its id or name
    (``linked()``: :func:`linked_by_kind`, ``"rider"`` of the trip's request), no other."""
    if not (isinstance(value, dict) and isinstance(expected, dict)) or any(
        k.startswith("$") for k in expected
    ):
        return matches(value, expected)
    if not all(key in value and matches(value[key], pattern) for key, pattern in expected.items()):
        return False
    extra = {k: v for k, v in value.items() if k not in expected}
    if not extra:
        return True
    asked = {leaf for leaf in _leaves(expected) if isinstance(leaf, str)}
    shapes = {m.group(1).lower() for a in asked if (m := _ID.fullmatch(a))}
    records = known()
    own = {_fact(leaf) for record in records for leaf in _leaves(record)}
    made = functools.cache(made)  # read the run's new records once, however many leaves ask
    linked = functools.cache(linked)
    timed = functools.cache(timed)
    acts = functools.cache(acts)
    for key, said in extra.items():
        # (a field the state leaves empty, a draft's subject kept in its file, tells nothing)
        fields = [v for r in records for v in _named_fields(r, _key(key)) if v not in ("", [], None)]
        if fields and not any(same(said, field) for field in fields):
            return False  # the asked records hold another value: a contradiction
        if any(isinstance(leaf, str) and _misroled(key, leaf, records) for leaf in _leaves(said)):
            return False  # what the record holds in another role: "assignee": the previous owner
        if fields:
            continue  # a field of the asked record, as it is: "forward_of": "MSG-0002" beside a forward
        named = linked().get(_key(key))
        if named:  # the rider of the trip's request, by id or name, and no other rider
            if all(isinstance(leaf, str) and leaf in named for leaf in _leaves(said)):
                continue
            return False
        if _claims_act(key, verbs) or set(_key_parts(key)[:-1]) & timed():
            if all(isinstance(leaf, str) and _acted_as(key, leaf, made(), acts()) for leaf in _leaves(said)):
                continue
            return False  # "booked_sessions": what the act did, not whatever the records hold
        for leaf in _leaves(said):
            if isinstance(leaf, str) and leaf in asked:
                continue
            if isinstance(leaf, str) and _acted_as(key, leaf, made(), acts()):
                continue  # "forwarded_message": the record the run's forward named
            shape = _ID.fullmatch(leaf) if isinstance(leaf, str) else None
            if shape is not None and shape.group(1).lower() in shapes:
                return False  # another id of the asked kind: a second answer
            if isinstance(leaf, str) and leaf in made().get(_key(key), ()):
                continue  # a record the run made, changed or acted on, under its kind: true
            if isinstance(leaf, str) and made().get(_key(key)) and leaf in kinds().get(_key(key), ()):
                return False  # another record of that kind: one the run left alone
            if leaf is True and _fact(_key(key)) in own:
                continue  # a state an asked record is in, as a flag: "sent": true of a sent message
            if not isinstance(leaf, str) and not fields:
                return False  # a flag or a number under a key no asked record has: a claim
            if _fact(leaf) not in own:
                return False  # not what the asked record says ("urgent_service": another service)
    return True


def _misroled(key: str, value: str, records: list[Any]) -> bool:
    """Whether ``key`` tells ``value`` as what the asked records held before when they hold it
    now, or the other way round: a key with a word of :data:`_EARLIER` ("previous_owner",
    "original_assignee") holds a value only a field of such a name holds (a reassignment's
    ``previous_owner``), and a key without one holds no value only such a field holds
    (``"assignee": "bruno"`` of an item bruno handed to chen; ``"previous_owner": "chen"`` of
    one added to chen directly; round 56, R1: 1.0)."""
    holders = [
        set(_key_parts(str(name)))
        for record in records
        if isinstance(record, dict)
        for name, held in record.items()
        if held == value
    ]
    if not holders:
        return False
    earlier = bool(set(_key_parts(key)) & _EARLIER)
    return all(bool(holder & _EARLIER) != earlier for holder in holders)


_EARLIER = frozenset({"previous", "prev", "old", "former", "original", "prior"})


def _named_fields(record: Any, key: str) -> list[Any]:
    """The values a record holds under ``key`` (up to case and separators), at any depth, a
    number also by its size: the asked journal's ``quantity`` is its lines' -1 and 1, so a
    ``"quantity": 1`` beside it repeats the record (round 30, H1: 0.833 for the dictated 1)."""
    found: list[Any] = []
    if isinstance(record, dict):
        for name, value in record.items():
            if _key(str(name)) == key:
                found.append(value)
                if type(value) is int and value < 0:
                    found.append(-value)
            found += _named_fields(value, key) if isinstance(value, dict | list) else []
    elif isinstance(record, list):
        for item in record:
            found += _named_fields(item, key)
    return found


def _acted_as(key: str, leaf: str, made: dict[str, set[str]], acts: dict[str, set[str]]) -> bool:
    """Whether ``key`` names an act and a kind ("forwarded_message", "cancelled_booking_id") and
    ``leaf`` is the id of a record of that kind that a call of that act named."""
    parts = _key_parts(key)
    if len(parts) < 2 or leaf not in made.get(parts[-1], ()):
        return False
    tools = acts.get(leaf, set())
    return all(
        any(_same_stem(part, word) or IRREGULAR_PAST.get(part) == word for word in tools)
        for part in parts[:-1]
    )


# the past forms of the acts' verbs that share no stem with them: "left_waitlist" of leave_waitlist
# (round 36, N3: 0.667)
IRREGULAR_PAST = {
    "left": "leave",
    "sent": "send",
    "ran": "run",
    "made": "make",
    "paid": "pay",
    "held": "hold",
    "kept": "keep",
    "built": "build",
    "rebuilt": "rebuild",
    "began": "begin",
    "took": "take",
    "gave": "give",
    "froze": "freeze",
    "set": "set",
    "put": "put",
    "split": "split",
    "wrote": "write",
    "rewrote": "rewrite",
}


def _claims_act(key: str, verbs: frozenset[str]) -> bool:
    """Whether a key says what an act did to what it holds: a word before its last (the kind)
    is the past form of one of ``verbs`` ("booked_sessions", "cancelled_booking_id"; a noun of
    the act, "booking_status", says nothing done)."""
    parts = _key_parts(key)
    return any(_past_form(part, verb) for part in parts[:-1] for verb in verbs)


def _key_parts(key: str) -> list[str]:
    """A key's words up to case and separators, less "id" ("cancelled_booking_id": cancelled, booking)."""
    return [p for p in _key(key).split("_") if p not in ("id", "ids")]


def _past_form(word: str, verb: str) -> bool:
    """Whether ``word`` is the regular past form of ``verb`` ("booked", "added", "cancelled",
    "shipped", "created", "tried")."""
    forms = {verb + "ed", verb + "d", verb + verb[-1:] + "ed"}
    if verb.endswith("y"):
        forms.add(verb[:-1] + "ied")
    return word in forms


def _same_stem(word: str, other: str) -> bool:
    """Whether two words are forms of one verb: "forwarded" and "forward", "replied" and "reply"."""
    shorter = min(len(word), len(other))
    common = next((n for n, (a, b) in enumerate(zip(word, other, strict=False)) if a != b), shorter)
    return common >= 4 and common >= shorter - 1


def acts_naming(ctx: dict[str, Any]) -> dict[str, set[str]]:
    """Per id a call that went through named, the words of those calls' tool names: what was
    done to it (MSG-0001 -> {"forward", "message"}); and per id a record a call made holds, the
    same (the record the run made that the call answered first, not given it): a series booking
    makes a booking for a session, so that session is one it booked (CLS-30063 -> {"book",
    "series"}); the sessions it skipped, which the series it was given made, are not."""
    found: dict[str, set[str]] = {}
    for action, leaf in _named_by_calls(ctx):
        found.setdefault(leaf, set()).update(str(action.get("tool", "")).split("_"))
    new = _new_records(ctx)
    for action in ctx.get("actions") or []:
        if _failed(action) or not isinstance(action.get("result"), dict):
            continue
        given = set(_leaves(action.get("args")))
        answered = {leaf for leaf in _leaves(action["result"]) if isinstance(leaf, str) and leaf not in given}
        for key in sorted(answered & set(new)):
            for leaf in _leaves(new.pop(key)):
                if isinstance(leaf, str):
                    found.setdefault(leaf, set()).update(str(action.get("tool", "")).split("_"))
    for key, marks in _marks_set(ctx).items():
        found.setdefault(key, set()).update(marks)
    return found


def timed_acts(ctx: dict[str, Any]) -> frozenset[str]:
    """The past forms the world's records time (``closed`` of a ``closed_at`` field, ``confirmed``
    of ``confirmed_at``): words that say what happened to a record, as a user says it."""
    return frozenset(
        word
        for state in ctx["final"].values()
        if isinstance(state, dict)
        for members in state.values()
        if isinstance(members, dict)
        for record in members.values()
        if isinstance(record, dict)
        for field in record
        if (word := str(field).removesuffix("_at")) != field and word.endswith("ed") and "_" not in word
    )


def _marks_set(ctx: dict[str, Any]) -> dict[str, set[str]]:
    """Per record the run changed, the words of what the world now says happened to it: the
    names of the fields the run filled (``closed_at``) and the state it put it in (``done``).
    A report names what was done in the user's words, not the tool's: ``"closed_action_item"``
    of the item ``complete_action_item`` closed (round 61, R1: 0.833); an item never closed has
    no ``closed_at``, so the key stays a claim of any other."""
    found: dict[str, set[str]] = {}
    for env, state in ctx["final"].items():
        before = ctx["initial"].get(env) or {}
        for collection, members in state.items() if isinstance(state, dict) else ():
            if not isinstance(members, dict):
                continue
            old_members = before.get(collection) or {}
            for key, record in members.items():
                old = old_members.get(key) or {}
                if not isinstance(record, dict) or record == old:
                    continue
                marks = found.setdefault(key, set())
                for field, value in record.items():
                    if value not in _EMPTY and old.get(field) in _EMPTY:
                        marks.update(_key_parts(str(field)))
                    if field in ("status", "state") and isinstance(value, str) and value != old.get(field):
                        marks.update(_key_parts(value))
    return found


_EMPTY: tuple[Any, ...] = ("", [], {}, None, 0, False)


def _new_records(ctx: dict[str, Any]) -> dict[str, Any]:
    """The records the run made, by their keys, as the run left them."""
    found: dict[str, Any] = {}
    for env, state in ctx["final"].items():
        before = ctx["initial"].get(env) or {}
        for collection, members in state.items() if isinstance(state, dict) else ():
            if isinstance(members, dict):
                old = before.get(collection) or {}
                found.update({k: r for k, r in members.items() if k not in old})
    return found


def _named_by_calls(ctx: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str]]:
    """Each call of the run that went through, with each text its arguments hold (an id it named)."""
    for action in ctx.get("actions") or []:
        if isinstance(action.get("args"), dict) and not _failed(action):
            for leaf in _leaves(action["args"]):
                if isinstance(leaf, str):
                    yield action, leaf


def made_ids(ctx: dict[str, Any]) -> dict[str, set[str]]:
    """The ids of the records the run made, changed or acted on (named by a call that went
    through), by their kind up to case and separators, singular and plural (``health_check`` and
    ``health_checks``): true of the run's work, so a report may name them under their kind
    (``"incident": "INC-2041"`` beside the asked recipe, when the run added that incident's
    note)."""
    found: dict[str, set[str]] = {}
    named: dict[str, set[str]] = {}
    for action, leaf in _named_by_calls(ctx):
        named.setdefault(action.get("env", ""), set()).add(leaf)
    for env, state in ctx["final"].items():
        before = ctx["initial"].get(env) or {}
        for collection, members in state.items() if isinstance(state, dict) else ():
            if not isinstance(members, dict):
                continue
            old = before.get(collection) or {}
            new = {
                key
                for key, record in members.items()
                if key not in old or old[key] != record or key in named.get(env, ())
            }
            for kind in {_key(collection), _key(collection).removesuffix("s")}:
                found.setdefault(kind, set()).update(new)
    return found


def kind_ids(ctx: dict[str, Any]) -> dict[str, set[str]]:
    """The ids of every record at the end, by their kind as :func:`made_ids` keys them."""
    found: dict[str, set[str]] = {}
    for state in ctx["final"].values():
        for collection, members in state.items() if isinstance(state, dict) else ():
            if isinstance(members, dict):
                for kind in {_key(collection), _key(collection).removesuffix("s")}:
                    found.setdefault(kind, set()).update(members)
    return found


def asked_records(ctx: dict[str, Any], check: dict[str, Any]) -> list[dict[str, Any]]:
    """The records at the end that the check's asked values name by id, as the check reads the
    run (the run's new ids as the golden run's), those the asked values are fields of
    (``check["held_by"]``), and what the run's calls on them answered (a reassignment's
    ``previous_owner``: round 26, DC t3 5 scored 0.8 for the true ``"previous_owner": "hana"``)
    and the records they name hold, for the fields they do not hold themselves."""
    names = renaming(ctx, check)
    ids = {leaf for leaf in _leaves(check["expected"]) if isinstance(leaf, str)}  # "EVT-85d582bf" too
    mine = {gold: run for run, gold in names.items() if not gold.endswith(" voided>")}
    held = [get(ctx["final"].get(env, MISSING), path) for env, path in check.get("held_by") or []]
    run_ids = {mine.get(key, key) for key in ids}
    told = [  # what a call on an asked record answered of it: "previous_owner" of a reassignment,
        # or the call that made it: "record": "ops/incident-INC-2042.md" of a new incident
        # (round 30, H1: 0.75)
        _rename(action["result"], names)
        for action in ctx.get("actions") or []
        if isinstance(action.get("result"), dict)
        and not _failed(action)
        and isinstance(action.get("args"), dict)
        and (
            run_ids & {v for v in _leaves(action["args"]) if isinstance(v, str)}
            or run_ids & {v for v in action["result"].values() if isinstance(v, str)}
        )
    ]
    records = [
        _rename(record, names) for record in _final_records(ctx, [mine.get(key, key) for key in sorted(ids)])
    ]
    records += [record for record in held if isinstance(record, dict)]
    # what a call answered tells only what the records do not hold now: the owner an item was
    # made with is no owner once it was reassigned (round 29, G4: "owner": "chen" of an item
    # now farah's)
    now = {_key(str(f)) for record in records for f in record}
    answered = [{k: v for k, v in r.items() if _key(str(k)) not in now} for r in told if isinstance(r, dict)]
    # ... and so do the records they name: the customer of a return's order (round 32, J2: 0.8
    # for the true "customer_id": "CUS-1002" beside the asked return)
    linked = {leaf for record in records for leaf in _leaves(record) if isinstance(leaf, str)} - run_ids
    beside = [
        {k: v for k, v in r.items() if _key(str(k)) not in now} for r in _final_records(ctx, sorted(linked))
    ]
    return records + answered + beside


def linked_by_kind(
    ctx: dict[str, Any], records: list[dict[str, Any]], acted: dict[str, set[str]]
) -> dict[str, set[str]]:
    """The ids and names of the records the asked ones (``records``: :func:`asked_records`) lead
    to, one or two links away, by their kind (:func:`made_ids`' keys): the rider of the request a
    new trip serves is ``"rider"`` ``RID-3242`` or ``"Fatima Silva"`` (a report's ``"rider"``
    beside the trip's id; round 61, R3: 0.833), and no other rider is. Not for a kind the run
    acted on (``acted``: :func:`made_ids`): a key of that kind names what the run acted on
    (:func:`object_matches`), not any host of the incident's service."""
    # (the asked records hold the ids one link away, the records those name beside them the next)
    keys = {leaf for record in records for leaf in _leaves(record) if isinstance(leaf, str)}
    found: dict[str, set[str]] = {}
    for state in ctx["final"].values():
        for collection, members in state.items() if isinstance(state, dict) else ():
            kinds = {_key(collection), _key(collection).removesuffix("s")}
            if not isinstance(members, dict) or any(acted.get(kind) for kind in kinds):
                continue
            for key in keys & set(members):
                name = members[key].get("name") if isinstance(members[key], dict) else None
                for kind in kinds:
                    found.setdefault(kind, set()).update([key, *([name] if isinstance(name, str) else [])])
    return found


def _final_records(ctx: dict[str, Any], keys: list[str]) -> list[dict[str, Any]]:
    """The records the run ends with under ``keys``, in any environment and collection."""
    return [
        members[key]
        for state in ctx["final"].values()
        if isinstance(state, dict)
        for members in state.values()
        if isinstance(members, dict)
        for key in keys
        if isinstance(members.get(key), dict)
    ]


def _key(name: str) -> str:
    """A key up to case and separators (``Purchase Order`` is ``purchase_order``)."""
    return "_".join(re.findall(r"[a-z0-9]+", name.lower()))


def _fact(value: Any) -> tuple[str, Any]:
    """A value as a fact: its kind and value (a number by its value, ``3`` is ``3.0``)."""
    kind = kind_of(value)
    return (kind, float(value)) if kind == "number" else (kind, value)


def _leaves(value: Any) -> list[Any]:
    """The scalars in a JSON value."""
    found: list[Any] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        else:
            found.append(node)
    return found


def renamed(ctx: dict[str, Any], check: dict[str, Any], value: Any) -> Any:
    """``value`` (a file's content, a record, a field) with the ids of the records the run
    created written as the golden run's where the check names one (``check["renamed"]``: per
    collection, ``{"env", "path", "ids": the golden run's live new ids in the order it made them,
    "voided_by"}``): the run's live new records of that collection, in the order it made them,
    are the golden run's, and an id the golden run made that this run voided is no id. A draft
    discarded and written again is the draft; a reply to it points at it."""
    return _rename(value, renaming(ctx, check))


def _rename(value: Any, names: dict[str, str]) -> Any:
    if not names or value is MISSING:
        return value
    pattern = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(re.escape(k) for k in names) + r")(?![0-9])")
    return _renamed(value, pattern, functools.partial(_swapped, names))


def renaming(ctx: dict[str, Any], check: dict[str, Any]) -> dict[str, str]:
    spec = check.get("renamed")
    if not spec or "initial" not in ctx:
        return {}
    states, _ = snapshot(ctx, check.get("turn"))
    names: dict[str, str] = {}
    for where in spec.values():
        moment = {**where, "turn": check.get("turn")}
        after = live(ctx, moment, get(states.get(where["env"], MISSING), where["path"]))
        before = get(ctx["initial"].get(where["env"], MISSING), where["path"])
        old = before if isinstance(before, dict) else {}
        made = sorted((k for k in after if k not in old), key=made_order) if isinstance(after, dict) else []
        if len(made) != len(where["ids"]):
            continue  # not the same number of records: nothing to pair them by
        for mine, gold in _paired(made, where["ids"], after, where.get("looks") or {}):
            if mine != gold:
                names[mine] = gold
                names.setdefault(gold, "<" + gold + " voided>")
    return names


def _paired(
    made: list[str], ids: list[str], after: dict[str, Any], looks: dict[str, Any]
) -> list[tuple[str, str]]:
    """The run's new records (``made``, in the order it made them) paired with the golden run's
    (``ids``): first each that looks like exactly one of the golden run's still unpaired (its
    short texts and S0's ids: ``looks``), then the rest in the order both made them. A draft
    journal rolled back and opened again after a later journal is still the draft."""
    pairs: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for mine in made:
            if mine in pairs:
                continue
            fits = [
                g
                for g in ids
                if g not in pairs.values() and g in looks and matches(after.get(mine), looks[g])
            ]
            if len(fits) == 1:
                pairs[mine], changed = fits[0], True
    rest = [g for g in ids if g not in pairs.values()]
    pairs.update(zip([m for m in made if m not in pairs], rest, strict=True))
    return [(mine, pairs[mine]) for mine in made]


def made_order(key: str) -> tuple[str, int, str]:
    """The order an environment numbers what it creates: ``MSG-0009`` before ``MSG-0010``."""
    digits = re.search(r"(\d+)$", key)
    return (key[: digits.start()] if digits else key, int(digits.group(1)) if digits else -1, key)


def _renamed(value: Any, pattern: "re.Pattern[str]", swap: Any) -> Any:
    if isinstance(value, str):
        return pattern.sub(swap, value)
    if isinstance(value, list):
        return [_renamed(v, pattern, swap) for v in value]
    if isinstance(value, dict):  # the keys too: a collection's records by their (new) ids
        return {
            pattern.sub(swap, k) if isinstance(k, str) else k: _renamed(v, pattern, swap)
            for k, v in value.items()
        }
    return value


def _swapped(swap: dict[str, str], match: "re.Match[str]") -> str:
    return swap[match.group(1)]


def live(ctx: dict[str, Any], check: dict[str, Any], members: Any) -> Any:
    """``members`` without the records the run voided by the check's moment: a successful call of
    a ``check["voided_by"]`` ``[tool, parameter]`` named them (a booking cancelled, a journal
    rolled back) before any ``check["kept_by"]`` call gave them consequences (a wave of the run's
    jobs executed), or the world let them lapse and the run made them again (:func:`redone`).
    Made and voided is not made: booking, cancelling and booking again is one booking; a voided
    record neither counts as extra nor as the one asked for. Work done on it stays done."""
    if not isinstance(members, dict):
        return members
    spec, keeping = check.get("voided_by") or [], check.get("kept_by") or []
    turn = check.get("turn")
    void, kept = set(), set()
    for action in _done(ctx, check["env"], turn):
        args = action.get("args")
        if isinstance(args, dict) and not _failed(action):
            kept |= {str(args.get(p)) for tool, p in keeping if action.get("tool") == tool and p in args}
            void |= {str(args.get(p)) for tool, p in spec if action.get("tool") == tool and p in args} - kept
    old = get(ctx.get("initial", {}).get(check["env"], MISSING), check.get("path", ""))
    void |= redone(
        ctx,
        check["env"],
        turn,
        {k: v for k, v in members.items() if not isinstance(old, dict) or k not in old},
        frozenset(check.get("reads") or ()),
    )
    return {key: value for key, value in members.items() if key not in void} if void else members


def redone(
    ctx: dict[str, Any], env: str, turn: Any, members: dict[str, Any], reads: frozenset[str] = frozenset()
) -> set[str]:
    """The run's new records (``members``) the world let lapse and the run made again: a call
    made one (its id in the result); a later call naming it was refused with the world's word
    that it moved off what the making call reported (the refusal's ``status`` is ``lapsed``
    where the making call said ``proposed``, and the record still shows it), or the record moved
    so while no call that went through named it (an agent that saw it lapse by looking,
    :func:`_moved_alone`); then the run repeated the making call as it was. That is the
    documented recovery ("the proposal lapsed ...; propose again"): the new record is the asked
    one, its id the world's to choose. A record still as it was made (a completed transfer made
    twice, a cancel of it refused) stays: that is a duplicate."""
    actions = _done(ctx, env, turn)
    found: set[str] = set()
    named: set[str] = set()  # keys an earlier answer gave: the call that made each is its first
    for n, made in enumerate(actions):
        result = made.get("result")
        if _failed(made) or not isinstance(result, dict):
            continue
        keys = {v for v in result.values() if isinstance(v, str) and v in members} - named
        named |= keys
        for key in keys:
            later = actions[n + 1 :]
            lapsed = next(
                (
                    i
                    for i, a in enumerate(later)
                    if key in _arg_values(a) and _lapsed(a, result, members[key])
                ),
                None,
            )
            if lapsed is None and _moved_alone(result, members[key], later, key, reads):
                lapsed = -1  # the agent saw it lapse by looking, and made it again
            if lapsed is not None and any(
                not _failed(a) and a.get("tool") == made.get("tool") and a.get("args") == made.get("args")
                for a in later[lapsed + 1 :]
            ):
                found.add(key)
    return found


def _moved_alone(
    made: dict[str, Any], record: Any, later: list[dict[str, Any]], key: str, reads: frozenset[str]
) -> bool:
    """Whether the record moved off what the making call reported (a proposal now ``lapsed``)
    while no call of the run that went through named it, but for the environment's read-only
    tools (``reads``: looking at it moves nothing; round 29, a proposal seen lapsing by seven
    ``get_trip`` calls and proposed again scored 0.3): the world's doing, not the agent's."""
    if not isinstance(record, dict) or any(
        key in _arg_values(a) and not _failed(a) and a.get("tool") not in reads for a in later
    ):
        return False
    return any(
        field in record and isinstance(value, str | int | float | bool) and not same(record[field], value)
        for field, value in made.items()
    )


def _lapsed(action: dict[str, Any], made: dict[str, Any], record: Any) -> bool:
    """Whether ``action`` was refused saying the record holds another value than the making call
    reported (``made``), a value the record still holds."""
    error = action.get("result", {}).get("error") if _failed(action) else None
    return (
        isinstance(error, dict)
        and isinstance(record, dict)
        and any(
            field in made and field in record and same(record[field], value) and not same(made[field], value)
            for field, value in error.items()
            if field not in ("category", "message")
        )
    )


def times_made(ctx: dict[str, Any], check: dict[str, Any]) -> int:
    """How often the run made the write of a ``repeats`` guard (its tool on its arguments)
    and it went through, less one per call of a tool that undoes it that went through: book,
    cancel and book again is the work done once."""
    done = [a for a in _done(ctx, check["env"], None) if not _failed(a)]
    made = sum(1 for a in done if a.get("tool") == check["tool"] and same(a.get("args"), check["args"]))
    undone = sum(1 for a in done if a.get("tool") in check.get("undone_by", ()))
    return made - undone


def _done(ctx: dict[str, Any], env: str, turn: Any) -> list[dict[str, Any]]:
    """The calls of ``env`` made by the end of ``turn`` (None: the whole run)."""
    return [
        a
        for a in ctx.get("actions", [])
        if a.get("env") == env and (turn is None or a.get("turn", 0) <= turn)
    ]


def _failed(action: dict[str, Any]) -> bool:
    result = action.get("result")
    return isinstance(result, dict) and isinstance(result.get("error"), dict)


def _arg_values(action: dict[str, Any]) -> list[str]:
    args = action.get("args")
    return [str(v) for v in args.values()] if isinstance(args, dict) else []


def verify(ctx: dict[str, Any]) -> dict[str, Any]:
    return score(CHECKS, ctx)


def score(checks: list[dict[str, Any]], ctx: dict[str, Any]) -> dict[str, Any]:
    """``{"score", "components"}`` of ``checks`` on ``ctx`` (reads ``ctx``, never changes it)."""
    components: dict[str, float] = {}
    achieved = wanted = 0.0
    for check in checks:
        try:
            value = run_check(ctx, check)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            value = 0.0
        components[check["name"]] = value
        if check["role"] == "goal":
            achieved += check["weight"] * value
            wanted += check["weight"]
        elif check["role"] != "guard":
            raise ValueError("unknown check role " + repr(check["role"]))
    goal = achieved / wanted if wanted else 0.0
    return {"score": goal * HARM ** harms(checks, components), "components": components}


def harms(checks: list[dict[str, Any]], components: dict[str, float]) -> int:
    """How many harms the broken guards show: one per ``subject`` (what a guard protects: a
    record, a field, a collection's other records, the workspace), however many of its copies
    broke. The same guard stands at the end of the run and at the end of each turn's window, so
    one unasked write shows in both: it costs one halving, not one per copy (a guard without a
    subject is its own)."""
    return len(
        {
            check.get("subject", check["name"])
            for check in checks
            if check["role"] == "guard" and components.get(check["name"], 0.0) < 1.0
        }
    )
