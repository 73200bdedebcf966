"""Batched tree search over a small game protocol; it knows no chess and no orchestrator.

A game implements :class:`SearchGame` (status, actions, apply, evaluate); :func:`search` runs Gumbel
search over a batch of its positions, one network call per step for all of them, and
:class:`Searches` runs searches that start and end at their own pace, sharing those calls.
"""

from asp.search.gumbel import SearchConfig, Searches, SearchGame, SearchResult, Status, search

__all__ = ["SearchConfig", "SearchGame", "SearchResult", "Searches", "Status", "search"]
