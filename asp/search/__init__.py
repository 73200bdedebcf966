"""Batched tree search over a small game protocol; it knows no chess and no orchestrator.

A game implements :class:`SearchGame` (status, actions, apply, evaluate); :func:`search` runs Gumbel
search over a batch of its positions, one network call per simulation step for all of them.
"""

from asp.search.gumbel import SearchConfig, SearchGame, SearchResult, Status, search

__all__ = ["SearchConfig", "SearchGame", "SearchResult", "Status", "search"]
