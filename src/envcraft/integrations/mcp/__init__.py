"""MCP server for envcraft tasks and environments (optional extra ``envcraft[mcp]``).

See :mod:`envcraft.integrations.mcp.server` for the channels and what a connection is.
"""

from envcraft.integrations.mcp.episodes import EpisodeTable, Source
from envcraft.integrations.mcp.server import ControlServer, ModelServer, serve

__all__ = ["ControlServer", "EpisodeTable", "ModelServer", "Source", "serve"]
