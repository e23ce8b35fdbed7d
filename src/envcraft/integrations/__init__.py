"""Thin adapters to systems outside envcraft, each behind an optional extra (``envcraft[bfcl]``, ...)."""
