"""Where in the candidate's own files an exception happened, as a model can act on it."""

from __future__ import annotations

import linecache
import logging
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MAX_FRAMES = 4
MAX_MESSAGE = 400


@dataclass(frozen=True)
class Cause:
    """An exception located in the package: ``rules.py:12 in price(): KeyError: 'x'``."""

    kind: str
    message: str
    file: str = ""
    line: int = 0
    frames: tuple[str, ...] = ()

    def describe(self) -> str:
        where = f" at {self.file}:{self.line}" if self.file else ""
        return f"{self.kind}: {self.message}{where}"


def locate(exc: BaseException, root: Path) -> Cause:
    """The innermost frames of ``exc`` inside ``root`` (the candidate package)."""
    base = str(root.resolve())
    own = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(base + "/")]
    frames = tuple(
        f"{Path(f.filename).name}:{f.lineno} in {f.name}(): "
        f"{(f.line or linecache.getline(f.filename, f.lineno or 0)).strip()}"
        for f in own[-MAX_FRAMES:]
    )
    text = str(exc)[:MAX_MESSAGE]
    if own:
        last = own[-1]
        return Cause(type(exc).__name__, text, Path(last.filename).name, last.lineno or 0, frames)
    if isinstance(exc, SyntaxError) and exc.filename and exc.filename.startswith(base + "/"):
        return Cause("SyntaxError", exc.msg, Path(exc.filename).name, exc.lineno or 0)
    return Cause(type(exc).__name__, text)


class Recorder(logging.Handler):
    """Keeps the last exception the runtime logged (a tool that raised, a state it refused)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.last: BaseException | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.last = record.exc_info[1]

    def take(self) -> BaseException | None:
        last, self.last = self.last, None
        return last


@contextmanager
def recording() -> Iterator[Recorder]:
    """Capture what ``envcraft.tools`` and ``envcraft.session`` log while the block runs."""
    recorder = Recorder()
    loggers = [logging.getLogger("envcraft.tools"), logging.getLogger("envcraft.session")]
    saved = [(lg.propagate, lg.level) for lg in loggers]
    for logger in loggers:
        logger.addHandler(recorder)
        logger.propagate = False
        logger.setLevel(logging.ERROR)
    try:
        yield recorder
    finally:
        for logger, (propagate, level) in zip(loggers, saved, strict=True):
            logger.removeHandler(recorder)
            logger.propagate = propagate
            logger.setLevel(level)
