"""VERL (0.9) integration: envcraft tasks as a multi-turn agent loop and a reward function.

* :mod:`.agent_loop`: :class:`~.agent_loop.EnvcraftAgentLoop`, an ``AgentLoopBase`` registered
  as ``envcraft_agent`` (the ``agent_name`` of every row ``envcraft export --format verl``
  writes). One task play per trajectory, keyed by its request id; model turns, tool calls and
  the task's later user turns alternate; tool and user tokens are masked out of
  ``response_mask``; ``reward_score`` is the task's verifier on the trajectory's final state.
* :mod:`.reward`: ``compute_score`` for reward-function setups: it re-plays the trajectory
  the loop recorded in fresh sessions from S0 and scores it with the verifier.

This package imports nothing heavy itself: ``.agent_loop`` needs ``verl`` (and torch),
``.reward`` only envcraft. Install with ``pip install 'envcraft[verl]'`` (see the README).
"""
