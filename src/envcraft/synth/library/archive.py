"""One library environment as one ``.tar.xz``: the package, its synth record, spec and answers.

An archive holds ``record.json`` (the candidate's entry of ``synth.json``: retrieval,
attempts with every stage's findings, tokens), ``spec.json`` (the spec it was written from),
``answers/attempt-<n>.txt`` (the model's raw answer to each attempt's request) and
``package/<path>`` (the files as the engine wrote them). The bytes depend on the content
alone (sorted members, no times, owners or modes of this machine, a fixed xz preset), so
adding the same package again gives the same file and git sees no change.
"""

from __future__ import annotations

import io
import json
import lzma
import re
import tarfile
from dataclasses import dataclass
from typing import Any

SUFFIX = ".tar.xz"
RECORD = "record.json"
SPEC = "spec.json"
ANSWERS = "answers/"
PACKAGE = "package/"
_ANSWER = re.compile(r"^answers/attempt-([1-9][0-9]*)\.txt$")
XZ_PRESET = 9  # the archives are written once and read often: the smallest is the best


class ArchiveError(ValueError):
    """An archive that is not one this module writes (torn, foreign members, bad JSON)."""


@dataclass(frozen=True)
class Entry:
    """A library environment: what the engine accepted and everything it came from."""

    record: dict[str, Any]
    spec: dict[str, Any]
    answers: dict[int, str]  # attempt number -> the model's raw answer
    files: dict[str, bytes]  # package path -> the file's bytes

    @property
    def id(self) -> str:
        return str(self.record["id"])


def pack(entry: Entry) -> bytes:
    """``entry`` as deterministic ``.tar.xz`` bytes."""
    members = {
        RECORD: _json(entry.record),
        SPEC: _json(entry.spec),
        **{f"{ANSWERS}attempt-{n}.txt": text.encode("utf-8") for n, text in entry.answers.items()},
        **{PACKAGE + path: data for path, data in entry.files.items()},
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(members[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(members[name]))
    return lzma.compress(buffer.getvalue(), format=lzma.FORMAT_XZ, preset=XZ_PRESET)


def unpack(data: bytes) -> Entry:
    """The entry in ``.tar.xz`` bytes; :class:`ArchiveError` for anything :func:`pack` never writes."""
    try:
        raw = lzma.decompress(data)
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
            members = {}
            for info in tar.getmembers():
                handle = tar.extractfile(info) if info.isfile() else None
                if handle is None:
                    raise ArchiveError(f"{info.name} is not a plain file")
                members[info.name] = handle.read()
    except (lzma.LZMAError, tarfile.TarError, EOFError) as exc:
        raise ArchiveError(f"not a library archive ({exc})") from None
    answers: dict[int, str] = {}
    files: dict[str, bytes] = {}
    for name, body in members.items():
        number = _ANSWER.match(name)
        if number:
            try:
                answers[int(number.group(1))] = body.decode("utf-8")
            except UnicodeDecodeError:
                raise ArchiveError(f"{name} is not UTF-8 text") from None
        elif name.startswith(PACKAGE) and len(name) > len(PACKAGE):
            files[name.removeprefix(PACKAGE)] = body
        elif name not in (RECORD, SPEC):
            raise ArchiveError(f"unexpected member {name!r}")
    if RECORD not in members or SPEC not in members:
        raise ArchiveError(f"an archive holds {RECORD} and {SPEC}")
    try:
        record, spec = json.loads(members[RECORD]), json.loads(members[SPEC])
    except ValueError as exc:
        raise ArchiveError(f"bad JSON ({exc})") from None
    return Entry(record=record, spec=spec, answers=dict(sorted(answers.items())), files=files)


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
