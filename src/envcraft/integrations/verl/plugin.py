"""VERL's ``verl.plugins`` entry point: registers envcraft's agent loop, loudly when it cannot.

``import verl`` imports every entry point of the group and logs a failure at debug level
only, so a broken import of the agent loop would surface much later as "agent loop
envcraft_agent not registered". This module logs it at error level, with the traceback,
before VERL swallows it.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

try:
    from envcraft.integrations.verl import agent_loop  # noqa: F401  (registers envcraft_agent)
except Exception:
    logger.error(
        "envcraft's VERL agent loop (envcraft_agent) could not be imported; VERL will not find it",
        exc_info=True,
    )
    raise
