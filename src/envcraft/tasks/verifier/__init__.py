"""The verifier: runtime (stdlib-only interpreter), source text, isolated scoring, synthesis."""
