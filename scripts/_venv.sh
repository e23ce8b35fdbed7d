# Sourced by run.sh and test.sh: create or reuse .venv and install envcraft with its dev extras.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=.venv/.envcraft-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
    .venv/bin/python -m pip install --quiet -e '.[dev]'
    touch "$stamp"
fi
export PATH="$PWD/.venv/bin:$PATH"
