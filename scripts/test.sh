#!/usr/bin/env bash
# The whole test suite: lint, type check, tests.
ENVCRAFT_TRAINERS=1 source "$(dirname "$0")/_venv.sh"
ruff check src tests bench
mypy
exec python -m pytest -n 2 "$@"
