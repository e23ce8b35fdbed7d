"""Tell a Ctrl-C delivered to the process from an interrupt that tool code raised itself.

:meth:`envcraft.core.session.Session.call` lets ``KeyboardInterrupt`` and ``SystemExit`` out
(undoing the call) so that Ctrl-C stops a run instead of becoming a tool error. The exception
alone cannot say where it came from: Python's default SIGINT handler raises the same
``KeyboardInterrupt`` a tool's own ``raise KeyboardInterrupt`` does, and ``sys.exit(3)`` in a
tool is a ``SystemExit`` like any other. Only the process's signal handler knows that a signal
came, so :class:`SignalWatch` installs one for a scope: it records the delivery and then raises
as the handler it replaced would. An interrupt that leaves the scope with no signal recorded was
raised by code, and a one-shot door (``envcraft call``) may answer it as the tool's
``internal_error``.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any


class SignalWatch:
    """Within ``with SignalWatch() as watch:``, record whether SIGINT reached the process."""

    def __init__(self) -> None:
        self.received = False
        self._watching = False
        self._previous: Any = None

    def __enter__(self) -> SignalWatch:
        # Only the main thread may set handlers; an ignored SIGINT stays ignored. Unwatched,
        # every interrupt counts as delivered (the runtime's default: it propagates).
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if previous not in (signal.SIG_IGN, None):
                self._previous = previous
                signal.signal(signal.SIGINT, self._handle)
                self._watching = True
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._watching:
            signal.signal(signal.SIGINT, self._previous)
            self._watching = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        if callable(self._previous) and self._previous is not signal.default_int_handler:
            self._previous(signum, frame)
        else:
            raise KeyboardInterrupt

    def raised_by_code(self, exc: BaseException) -> bool:
        """Whether ``exc`` is an interrupt or exit that code raised, with no signal delivered."""
        return isinstance(exc, KeyboardInterrupt | SystemExit) and self._watching and not self.received
