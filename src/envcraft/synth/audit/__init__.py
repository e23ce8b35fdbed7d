"""Audits of a synthesized environment package, in order: see :data:`findings.STAGES`."""
