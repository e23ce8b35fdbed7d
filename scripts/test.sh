#!/usr/bin/env bash
# The whole test suite: lint, type check, tests; then the adapters that need their own
# virtualenv (verifiers, openenv), each on its own test file.
ENVCRAFT_TRAINERS=1 source "$(dirname "$0")/_venv.sh"
ruff check src tests bench
mypy
python -m pytest -n 2 "$@"
if [ "$#" -eq 0 ]; then
    for extra in verifiers openenv; do
        extra_venv "$extra"
        ENVCRAFT_EXTRA="$extra" ".venv-$extra/bin/python" -m pytest -p no:cacheprovider "tests/integrations/test_$extra.py"
    done
fi
