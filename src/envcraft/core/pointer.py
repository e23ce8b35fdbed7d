"""JSON Pointer reference tokens (RFC 6901): a key as one ``/``-separated step of a path.

State diffs, verifier checks, distractor and mutation paths all address values by JSON Pointer
(``/orders/o~1 7/status``), so a key holding ``/`` or ``~`` must be escaped the one way the
RFC says (``~`` first, then ``/``) and unescaped in the reverse order. The verifier runtime
(``envcraft.tasks.verifier.runtime``) keeps its own inline copy: it is stdlib-only text that
every generated verifier embeds.
"""

from __future__ import annotations


def escape_token(key: str) -> str:
    """``key`` as a pointer token: ``~`` -> ``~0``, ``/`` -> ``~1``."""
    return key.replace("~", "~0").replace("/", "~1")


def unescape_token(token: str) -> str:
    """The key a pointer token stands for (the inverse of :func:`escape_token`)."""
    return token.replace("~1", "/").replace("~0", "~")
