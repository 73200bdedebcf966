"""Self-play on a pool of workers: :class:`SelfPlay` (``play`` and ``stream``), and what it
is made of.

* :mod:`asp.selfplay.coordinator`: :class:`SelfPlay`, the front: options, life cycle, ``play``
  and ``stream``;
* :mod:`asp.selfplay.calls`: one call (a ``play`` or a ``stream``): cut into shards of game
  ids, its queue of shards, its results, and the ids checked on return;
* :mod:`asp.selfplay.dispatch`: the one loop that hands free workers the shards of every call,
  and keeps each running shard until it ends (settled, retried, stalled, timed out, cancelled);
* :mod:`asp.selfplay.offers`: how many more shards each running worker is offered;
* :mod:`asp.selfplay.sync`: the synchronous facade (:class:`~asp.selfplay.sync.SyncSelfPlay`,
  :func:`~asp.selfplay.sync.play_games_parallel`).

The workers themselves are a backend's (:mod:`asp.backends`).
"""

from __future__ import annotations

from asp.selfplay.coordinator import PlayFn, SelfPlay, ShardResult, default_shard_games

__all__ = ["PlayFn", "SelfPlay", "ShardResult", "default_shard_games"]
