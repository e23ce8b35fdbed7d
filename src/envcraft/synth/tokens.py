"""Token counts for prompt budgets: o200k BPE when ``bpe-openai`` is installed, else an estimate.

``bpe-openai`` carries its token tables in the wheel, so counting needs no download. Without
it, a count is ``ceil(characters / 4)``, the usual rule of thumb for English and code;
:data:`TOKENIZER` says which one is in use so every reported figure can name it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache


@cache
def _encoder() -> Callable[[str], int] | None:
    try:
        import bpe_openai
    except ImportError:
        return None
    encoding = bpe_openai.get_encoding("o200k_base")
    return lambda text: len(encoding.encode(text))


def count_tokens(text: str) -> int:
    """Tokens of ``text`` under :func:`tokenizer_name`."""
    encode = _encoder()
    return encode(text) if encode is not None else math.ceil(len(text) / 4)


def tokenizer_name() -> str:
    """``o200k_base`` or ``chars/4``: what :func:`count_tokens` measures with."""
    return "o200k_base" if _encoder() is not None else "chars/4"
