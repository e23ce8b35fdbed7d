"""The ``envcraft`` console script: ``--version`` at once, everything else through the full CLI.

Loading the command tree imports the whole library (pydantic, the data engine, ...), which
takes most of a second on a busy machine; printing the version needs none of it.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from envcraft import __version__

        sys.stdout.write(f"envcraft {__version__}\n")
        return
    from envcraft.cli.main import main as full

    full()
