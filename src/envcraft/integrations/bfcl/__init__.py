"""BFCL's multi-turn categories as envcraft environments and tasks, with BFCL's verdict.

Needs the ``bfcl`` extra (``pip install --no-deps bfcl-eval==2026.3.23 mpmath``). Modules:
``source`` (the installed BFCL), ``objgraph`` + ``state`` (an instance as state), ``shapes``
(functions as flat tools, calls both ways), ``wrapper`` (what generated env.py runs),
``envgen`` (the packages), ``checker`` + ``convert`` (tasks and their verifiers),
``importer`` and ``parity`` (agreement with BFCL's own checker).
"""
