"""Batched tree search over a small game protocol; it knows no chess and no orchestrator.

A game implements :class:`SearchGame` (expand, apply, evaluate); :func:`search` runs Gumbel
search over a batch of its positions, one network call per simulation step for all of them.
"""

from asp.search.gumbel import Expansion, SearchConfig, SearchGame, SearchResult, search

__all__ = ["Expansion", "SearchConfig", "SearchGame", "SearchResult", "search"]
