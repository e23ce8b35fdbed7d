"""The library on disk: adding a synth run, checking every package against its answers, unpacking.

A library directory (the repository's ``library/``, or ``$ENVCRAFT_LIBRARY``) holds
``envs/<id>.tar.xz`` (one :mod:`~envcraft.synth.library.archive` per accepted environment),
``candidates.jsonl.xz`` (every final candidate ever added, accepted or rejected, one JSON line
each: the funnel is counted from it, so a rejection is never lost), the generated
``README.md`` and ``run.json`` (tasks per environment of an ``envcraft run`` over the library).

The provenance rule: a package is exactly what the model's recorded answers give when
re-parsed by the engine's own parser (:func:`replay`); :func:`add` refuses a run that breaks it
before it writes anything, and the test suite re-checks every stored archive. Packages are
used from a cache directory keyed by the archive's content (:func:`unpacked`), never unpacked
into the source tree.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcraft.core.workspace import atomic_write_bytes
from envcraft.llm import LLMError, ResponseCache
from envcraft.llm.batch import batch_answers
from envcraft.synth.engine import FINAL, files_hash, spec_key
from envcraft.synth.filemap import FileMapError, parse_file_map, write_files
from envcraft.synth.library.archive import SUFFIX, ArchiveError, Entry, pack, unpack
from envcraft.synth.library.readme import render_readme
from envcraft.synth.spec import SpecError, load_spec

LIBRARY_ENV = "ENVCRAFT_LIBRARY"
CACHE_ENV = "ENVCRAFT_CACHE"
ENVS_DIR = "envs"
CANDIDATES_FILE = "candidates.jsonl.xz"
README_FILE = "README.md"
RUN_FILE = "run.json"  # the tasks per environment of the last `envcraft run --envs library`
# src/envcraft/synth/library/store.py -> the checkout's library/ (an editable install's)
REPO_LIBRARY = Path(__file__).resolve().parents[4] / "library"


class LibraryError(ValueError):
    """A library or synth run that cannot be used as asked; the message is one line."""


def default_root() -> Path:
    """``$ENVCRAFT_LIBRARY``, else the checkout's ``library/``."""
    return Path(os.environ.get(LIBRARY_ENV) or REPO_LIBRARY)


def cache_root() -> Path:
    """Where packages are unpacked to run: ``$ENVCRAFT_CACHE``, else ``$XDG_CACHE_HOME/envcraft``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "envcraft"


# -- provenance ---------------------------------------------------------------------------------
def replay(record: Mapping[str, Any], answers: Mapping[int, str]) -> dict[str, str]:
    """The files the engine made of ``answers``: every answer it took (an attempt with a
    ``files_hash``) parsed by :func:`~envcraft.synth.filemap.parse_file_map` and applied over the
    files before it, as the repair loop does; each step must give the files its attempt records."""
    files: dict[str, str] = {}
    name = record.get("id", "?")
    for attempt in record.get("attempts", []):
        number, expected = attempt["number"], attempt.get("files_hash", "")
        if not expected:
            continue  # an answer the engine refused (not a file map, a required file missing)
        if number not in answers:
            raise LibraryError(f"{name}: no recorded answer for attempt {number}")
        try:
            files = parse_file_map(answers[number]).applied_to(files)
        except FileMapError as exc:
            raise LibraryError(f"{name}: attempt {number}'s answer is not a file map ({exc})") from None
        if files_hash(files) != expected:
            raise LibraryError(f"{name}: attempt {number}'s answer does not give the files its record says")
    return files


def check(entry: Entry) -> None:
    """:class:`LibraryError` unless ``entry`` is an accepted package whose every file is, byte for
    byte, what re-parsing its answers gives (and no file more or less)."""
    if entry.record.get("status") != "accepted":
        raise LibraryError(f"{entry.id}: not an accepted candidate ({entry.record.get('status')})")
    expected = {path: text.encode("utf-8") for path, text in replay(entry.record, entry.answers).items()}
    differ = sorted(p for p in expected.keys() | entry.files.keys() if expected.get(p) != entry.files.get(p))
    if differ:
        shown = ", ".join(differ[:3]) + (f" and {len(differ) - 3} more" if len(differ) > 3 else "")
        raise LibraryError(f"{entry.id}: {len(differ)} file(s) differ from what its answers give: {shown}")


# -- reading a synth run ---------------------------------------------------------------------------
@dataclass
class Run:
    """What a synth output directory gives the library: final candidates and accepted entries."""

    candidates: list[dict[str, Any]] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)  # waiting or error: not added


def read_run(out: Path, batch: Path | None = None) -> Run:
    """The run in ``out`` (``synth.json``, ``envs/``) with the answers from ``batch``'s responses,
    else from ``out/.cache/llm``; every accepted package checked (:func:`check`)."""
    try:
        summary = json.loads((out / "synth.json").read_text(encoding="utf-8"))
        model, options, listed = summary["model"], summary["options"], summary["candidates"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LibraryError(f"{out}: not a synth output directory (synth.json: {_why(exc)})") from None
    answer = _answer_source(out, batch)
    run = Run()
    for candidate in listed:
        if candidate.get("status") not in FINAL:
            run.unfinished.append(candidate["id"])
            continue
        record = {**candidate, "model": model, "options": options}
        run.candidates.append(record)
        if record["status"] != "accepted":
            continue
        answers = {}
        for attempt in record["attempts"]:
            text = answer(attempt["request_key"])
            if text is None:
                where = batch if batch is not None else out / ".cache" / "llm"
                raise LibraryError(f"{record['id']}: attempt {attempt['number']}'s answer is not in {where}")
            answers[attempt["number"]] = text
        files = _package_files(out / "envs" / record["id"])
        entry = Entry(record=record, spec=_spec(record, options), answers=answers, files=files)
        check(entry)
        run.entries.append(entry)
    return run


def _answer_source(out: Path, batch: Path | None) -> Callable[[str], str | None]:
    """The model's answer to a request key: Batch API output files, or the response cache."""
    if batch is not None:
        try:
            found = batch_answers(batch)
        except LLMError as exc:
            raise LibraryError(f"--batch {batch}: {exc.message}") from None

        def answered(key: str) -> str | None:
            return found[key].content or "" if key in found else None

        return answered
    cache = ResponseCache(out / ".cache" / "llm")

    def cached(key: str) -> str | None:
        hit = cache.get(key)
        return None if hit is None else hit.content or ""

    return cached


def _spec(record: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """The spec the candidate was written from, re-read from its source and proved by its hash."""
    source = str(record["source"])
    try:
        spec = load_spec(source.removeprefix("catalog:"))
    except SpecError as exc:
        raise LibraryError(f"{record['id']}: cannot read its spec: {exc}") from None
    if spec_key(spec, options) != record["spec_hash"]:
        raise LibraryError(f"{record['id']}: the spec {source} changed since it was synthesized")
    return spec.model_dump(mode="json")


def _package_files(root: Path) -> dict[str, bytes]:
    """Every file of a package as bytes (Python's byte-code caches aside: a run makes them)."""
    if not (root / "envcraft.toml").is_file():
        raise LibraryError(f"{root}: the accepted package is missing")
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.relative_to(root).parts
    }


# -- the library directory -------------------------------------------------------------------------
@dataclass
class Added:
    """What :func:`add` did (ids per outcome)."""

    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    new_candidates: int = 0
    unfinished: list[str] = field(default_factory=list)


def add(root: Path, out: Path, batch: Path | None = None) -> Added:
    """Add the run in ``out`` to the library at ``root``; everything is checked before anything is
    written. A candidate already there (same id, same requests) is not counted twice."""
    run = read_run(out, batch)
    result = Added(unfinished=run.unfinished)
    known = {_candidate_key(c): c for c in read_candidates(root)}
    for candidate in run.candidates:
        result.new_candidates += _candidate_key(candidate) not in known
        known[_candidate_key(candidate)] = candidate
    (root / ENVS_DIR).mkdir(parents=True, exist_ok=True)
    for entry in run.entries:
        path, data = archive_path(root, entry.id), pack(entry)
        if path.is_file() and path.read_bytes() == data:
            result.unchanged.append(entry.id)
            continue
        (result.replaced if path.is_file() else result.added).append(entry.id)
        atomic_write_bytes(path, data)
    lines = "".join(json.dumps(known[k], sort_keys=True, ensure_ascii=False) + "\n" for k in sorted(known))
    atomic_write_bytes(root / CANDIDATES_FILE, lzma.compress(lines.encode("utf-8"), preset=9))
    write_readme(root)
    return result


def write_readme(root: Path, run: Path | None = None) -> Path:
    """``root/README.md`` generated from the library's candidates and packages, and the tasks per
    environment of an ``envcraft run`` over it: ``run``'s (kept in ``root/run.json``) or the last kept."""
    root.mkdir(parents=True, exist_ok=True)
    if run is not None:
        try:
            summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
            kept = {
                "options": {k: v for k, v in summary["options"].items() if k != "workers"},  # any pace
                "tasks": summary["corpus"]["tasks"],
                "envs": {env: row["tasks"] for env, row in sorted(summary["corpus"]["envs"].items())},
            }
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LibraryError(f"{run}: not an envcraft run directory (summary.json: {_why(exc)})") from None
        atomic_write_bytes(root / RUN_FILE, (json.dumps(kept, indent=1) + "\n").encode("utf-8"))
    tasks = json.loads((root / RUN_FILE).read_text(encoding="utf-8")) if (root / RUN_FILE).is_file() else None
    text = render_readme(read_candidates(root), list(entries(root)), tasks)
    path = root / README_FILE
    atomic_write_bytes(path, text.encode("utf-8"))
    return path


def read_candidates(root: Path) -> list[dict[str, Any]]:
    """Every candidate ever added to the library at ``root`` (none for a new library)."""
    path = root / CANDIDATES_FILE
    if not path.is_file():
        return []
    try:
        text = lzma.decompress(path.read_bytes()).decode("utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except (lzma.LZMAError, ValueError) as exc:
        raise LibraryError(f"{path}: unreadable ({_why(exc)})") from None


def archive_path(root: Path, env_id: str) -> Path:
    return root / ENVS_DIR / f"{env_id}{SUFFIX}"


def archives(root: Path) -> list[Path]:
    """The library's package archives, by id."""
    return sorted((root / ENVS_DIR).glob(f"*{SUFFIX}"))


def read_entry(path: Path) -> Entry:
    try:
        return unpack(path.read_bytes())
    except (OSError, ArchiveError) as exc:
        raise LibraryError(f"{path}: {_why(exc)}") from None


def entries(root: Path) -> Iterator[Entry]:
    for path in archives(root):
        yield read_entry(path)


def unpacked(root: Path, cache: Path | None = None) -> list[Path]:
    """A directory per library package, ready to load: ``CACHE/library/<archive hash>/<id>``.

    Keyed by the archive's bytes, so an archive that changes gets a new directory and an
    unchanged one is unpacked once; the source tree is never written."""
    base = (cache or cache_root()) / "library"
    found = []
    for path in archives(root):
        data = path.read_bytes()
        target = base / hashlib.sha256(data).hexdigest()[:16] / path.name.removesuffix(SUFFIX)
        if not (target / "envcraft.toml").is_file():
            try:
                entry = unpack(data)
            except ArchiveError as exc:
                raise LibraryError(f"{path}: {exc}") from None
            _materialize(target, entry)
        found.append(target)
    return found


def _materialize(target: Path, entry: Entry) -> None:
    """The package's files as ``target``, in one rename (a reader never sees half a package)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        write_files(staging, {path: data.decode("utf-8") for path, data in entry.files.items()})
        os.replace(staging, target)
    except OSError:
        if not (target / "envcraft.toml").is_file():
            raise  # not another process that unpacked it first
    except (ValueError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{entry.id}: cannot unpack ({exc})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _candidate_key(candidate: Mapping[str, Any]) -> str:
    """One candidate run: its id and the requests it made (the same run added twice is one)."""
    requests = [a["request_key"] for a in candidate.get("attempts", [])]
    return f"{candidate['id']}/{hashlib.sha256(json.dumps(requests).encode()).hexdigest()[:16]}"


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
