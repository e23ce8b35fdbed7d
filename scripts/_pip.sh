# Sourced by _venv.sh: `pip_install ARGS...` is `pip install --quiet ARGS...` into .venv without
# one expected complaint. bfcl-eval is installed with --no-deps on purpose (its model SDKs are
# never imported), so after every later install pip's resolver prints "ERROR: pip's dependency
# resolver does not currently take into account ..." and a line per left-out SDK. Those lines
# are dropped (one note says so); any other line, and pip's exit status, pass through.
pip_install() {
    local log rc=0 kept
    log="$(mktemp)"
    .venv/bin/python -m pip install --quiet "$@" 2>"$log" || rc=$?
    kept="$(grep -v -E '^bfcl-eval [^ ]+ requires ' "$log" || true)"
    if ! grep -q -E ' requires | has requirement ' <<<"$kept"; then
        kept="$(grep -v "^ERROR: pip's dependency resolver does not currently take into account" <<<"$kept" || true)"
    fi
    if grep -q -E '^bfcl-eval [^ ]+ requires ' "$log"; then
        echo "note: bfcl-eval is installed without its model SDKs on purpose (--no-deps); pip's list of them is hidden" >&2
    fi
    if [ -n "$kept" ]; then
        printf '%s\n' "$kept" >&2
    fi
    rm -f "$log"
    return "$rc"
}
