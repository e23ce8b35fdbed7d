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
        self._installed = False
        self._previous: Any = None

    def __enter__(self) -> SignalWatch:
        # Only the main thread may set handlers. An ignored SIGINT (a process started in the
        # background, or by a parent that ignores it: children inherit SIG_IGN) stays ignored,
        # and then no interrupt can come from a signal: every one was raised by code. Unwatched
        # (another thread), every interrupt counts as delivered (the runtime's default).
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if previous is signal.SIG_IGN:
                self._watching = True
            elif previous is not None:
                self._previous = previous
                signal.signal(signal.SIGINT, self._handle)
                self._watching = self._installed = True
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
        self._watching = self._installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        if callable(self._previous) and self._previous is not signal.default_int_handler:
            self._previous(signum, frame)
        else:
            raise KeyboardInterrupt

    def raised_by_code(self, exc: BaseException) -> bool:
        """Whether ``exc`` is an interrupt or exit that code raised, with no signal delivered."""
        return isinstance(exc, KeyboardInterrupt | SystemExit) and self._watching and not self.received
