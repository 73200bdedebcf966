"""Batched Gumbel tree search over any two-player game that implements :class:`SearchGame`.

:func:`search` searches a batch of positions at once, one tree each: every simulation step
walks every tree to a leaf, evaluates all new leaves in one call of the game's
:meth:`~SearchGame.evaluate` (one network forward), and backs the values up. Across trees no
virtual loss is needed: each tree has one walk in flight.

At the root, Gumbel search (Danihelka et al., "Policy improvement by planning with Gumbel",
ICLR 2022): ``m`` actions sampled without replacement by Gumbel top-k on the prior logits,
sequential halving of the simulation budget among them (:mod:`asp.search.seq_halving`), and
the action of the best ``g + logits + sigma(q)`` among the survivors. Below the root, the
paper's deterministic selection: ``argmax(pi'(a) - N(a) / (1 + sum N))`` with ``pi'`` the
improved policy. The result's ``policy`` is the improved policy
``softmax(logits + sigma(completed Q))`` over the legal actions: the training target.

Values are exact where the game says so: a finished position's value, and a position where
the mover has a winning action (:attr:`Expansion.winning`) counts as won (+1) without being
searched further. At the root such an action is played at once.

Determinism: all randomness comes from the ``rng`` given for each root, so a game seeded by
its id searches the same way whichever batch it is in (up to floating-point differences of
the network between batch sizes).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar

from asp.errors import ConfigError, check_ints
from asp.search.qvalues import improved_logits, softmax
from asp.search.seq_halving import considered_visits

__all__ = ["Expansion", "SearchConfig", "SearchGame", "SearchResult", "search"]

State = TypeVar("State")


class Expansion(NamedTuple):
    """What the game says of a position when the search reaches it."""

    actions: tuple[int, ...]
    """The legal actions (the game's policy indices)."""
    value: float | None = None
    """The exact value for the side to move when the game is over here (-1 lost, 0 drawn), else None."""
    winning: tuple[int, ...] = ()
    """Legal actions that win at once (a mate in one): the position is won, value +1."""


class SearchGame(Protocol[State]):
    """What a game supplies to :func:`search`; it owns its states and its network."""

    def expand(self, state: State) -> Expansion:
        """The legal actions of ``state``, and its exact value if the game is over there."""
        ...

    def apply(self, state: State, action: int) -> State:
        """The state after ``action`` (a new object: ``state`` stays as it was)."""
        ...

    def evaluate(
        self, states: Sequence[State], actions: Sequence[Sequence[int]]
    ) -> tuple[list[list[float]], list[float]]:
        """For every state, the prior logits of its ``actions`` and its value for the side to
        move, in [-1, 1]: one network call for the whole batch."""
        ...


@dataclass(frozen=True)
class SearchConfig:
    """Settings of :func:`search`. Invalid values raise :class:`~asp.errors.ConfigError`."""

    simulations: int = 16
    """Simulations per search (1 to 10000)."""
    considered: int = 16
    """Root actions sampled by Gumbel top-k (m in the paper; 1 to 1024)."""
    gumbel_scale: float = 1.0
    """Scale of the Gumbel noise at the root: 1 samples (self-play), 0 plays the best action."""
    c_visit: float = 50.0
    """sigma's visit offset (mctx's ``maxvisit_init``)."""
    c_scale: float = 0.1
    """sigma's scale of the rescaled Q-values (mctx's ``value_scale``)."""

    def __post_init__(self) -> None:
        check_ints("SearchConfig", self, (("simulations", 1, 10_000), ("considered", 1, 1024)))
        for name in ("gumbel_scale", "c_visit", "c_scale"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1e6:
                raise ConfigError(f"SearchConfig.{name} must be a number in 0..1e6, got {value!r}")


@dataclass(frozen=True)
class SearchResult:
    """The search's answer for one root."""

    action: int
    """The action to play."""
    actions: tuple[int, ...]
    """The root's legal actions."""
    policy: tuple[float, ...]
    """The improved policy over ``actions`` (sums to one): the policy's training target."""
    value: float
    """The root's value after the search, for the side to move."""
    simulations: int
    """Simulations spent (0 when a winning action was played at once)."""


class _Node(Generic[State]):
    """A position in a tree: its prior, its value, and the visits and values of its children,
    in the order of ``expansion.actions``."""

    __slots__ = ("child_total", "child_visits", "children", "exact", "expansion", "logits", "prior", "state",
                 "total", "value", "visits")  # fmt: skip

    def __init__(self, state: State, expansion: Expansion) -> None:
        self.state = state
        self.expansion = expansion
        self.exact = expansion.value if expansion.value is not None else (1.0 if expansion.winning else None)
        self.logits: list[float] = []
        self.prior: list[float] = []
        self.value = 0.0
        """The network's value (or the exact one) for the side to move here."""
        self.visits = 0
        self.total = 0.0
        """Sum of the backed-up values, for the side to move here."""
        n = len(expansion.actions)
        self.children: list[_Node[State] | None] = [None] * n
        self.child_visits = [0] * n
        self.child_total = [0.0] * n
        """Sum of the children's backed-up values, for the side to move here."""

    def improved_logits(self, cfg: SearchConfig) -> Sequence[float]:
        return improved_logits(
            self.logits, self.prior, self.value, self.child_total, self.child_visits, c_visit=cfg.c_visit,
            c_scale=cfg.c_scale,
        )  # fmt: skip

    def interior_action(self, cfg: SearchConfig) -> int:
        """The position (in ``expansion.actions``) of the paper's deterministic selection below the root."""
        probs = softmax(self.improved_logits(cfg))
        total = 1 + sum(self.child_visits)
        scores = [p - n / total for p, n in zip(probs, self.child_visits, strict=True)]
        return max(range(len(scores)), key=scores.__getitem__)


class _Root(Generic[State]):
    """A root's Gumbel draw and sequential-halving schedule."""

    def __init__(self, node: _Node[State], cfg: SearchConfig, rng: random.Random) -> None:
        self.node = node
        n = len(node.expansion.actions)
        self.gumbel = [cfg.gumbel_scale * -math.log(-math.log(rng.random() or 1e-300)) for _ in range(n)]
        ranked = sorted(range(n), key=lambda i: self.gumbel[i] + node.logits[i], reverse=True)
        self.considered = ranked[: min(cfg.considered, n)]
        self.schedule = considered_visits(len(self.considered), cfg.simulations)

    def scores(self, logits: Sequence[float], visit_count: int | None) -> dict[int, float]:
        """``g + logits + sigma(q)`` of the considered actions (with ``visit_count`` visits, if given)."""
        visits = self.node.child_visits
        return {
            i: self.gumbel[i] + logits[i] for i in self.considered if visit_count is None or visits[i] == visit_count
        }

    def next_action(self, cfg: SearchConfig, simulation: int) -> int:
        """The position of the root action the next simulation goes to."""
        logits = self.node.improved_logits(cfg)
        scores = self.scores(logits, self.schedule[simulation])
        if not scores:  # the schedule's count is taken by none (fewer actions than planned)
            scores = self.scores(logits, None)
        return max(scores, key=scores.__getitem__)

    def result(self, cfg: SearchConfig, simulations: int) -> SearchResult:
        node = self.node
        logits = node.improved_logits(cfg)
        most = max(node.child_visits[i] for i in self.considered)
        scores = self.scores(logits, most)
        action = node.expansion.actions[max(scores, key=scores.__getitem__)]
        value = node.total / node.visits if node.visits else node.value
        return SearchResult(action, node.expansion.actions, tuple(softmax(logits)), value, simulations)


def search(
    game: SearchGame[State],
    states: Sequence[State],
    cfg: SearchConfig,
    rngs: Sequence[random.Random],
    *,
    on_step: Callable[[], None] | None = None,
) -> list[SearchResult]:
    """Search every state of ``states`` (positions where the game goes on) at once.

    ``rngs[i]`` draws root ``i``'s Gumbel noise. ``on_step`` is called after every simulation
    step (one network call over the leaves of every tree): a heartbeat, so that a long search
    is never taken for a stall.

    :raises ValueError: if a state is finished (it has no action to search).
    """
    if len(rngs) != len(states):
        raise ValueError(f"search: {len(states)} states but {len(rngs)} random streams")
    nodes = [_Node(state, game.expand(state)) for state in states]
    for node in nodes:
        if node.expansion.value is not None or not node.expansion.actions:
            raise ValueError("search: a root position is finished: there is nothing to search")
    _evaluate(game, nodes)
    results: list[SearchResult | None] = [None] * len(nodes)
    roots: list[tuple[int, _Root[State]]] = []
    for i, (node, rng) in enumerate(zip(nodes, rngs, strict=True)):
        if node.expansion.winning:  # a proven win: played at once, and the target says so
            action = node.expansion.winning[0]
            policy = tuple(1.0 if a == action else 0.0 for a in node.expansion.actions)
            results[i] = SearchResult(action, node.expansion.actions, policy, 1.0, 0)
        else:
            node.visits, node.total = 1, node.value
            roots.append((i, _Root(node, cfg, rng)))
    for simulation in range(cfg.simulations if roots else 0):
        _simulate(game, [(root, root.next_action(cfg, simulation)) for _, root in roots], cfg)
        if on_step is not None:
            on_step()
    for i, root in roots:
        results[i] = root.result(cfg, cfg.simulations)
    return [r for r in results if r is not None]


def _simulate(game: SearchGame[State], walks: list[tuple[_Root[State], int]], cfg: SearchConfig) -> None:
    """One simulation in every tree: descend, evaluate the new leaves together, back up."""
    paths: list[list[tuple[_Node[State], int]]] = []
    leaves: list[_Node[State]] = []
    fresh: list[_Node[State]] = []
    for root, k in walks:
        path = []
        node = root.node
        while True:
            path.append((node, k))
            child = node.children[k]
            if child is None:
                state = game.apply(node.state, node.expansion.actions[k])
                child = _Node(state, game.expand(state))
                node.children[k] = child
                if child.exact is None:
                    fresh.append(child)
                else:
                    child.value = child.exact
                break
            if child.exact is not None:
                break
            node, k = child, child.interior_action(cfg)
        paths.append(path)
        leaves.append(child)
    _evaluate(game, fresh)
    for path, leaf in zip(paths, leaves, strict=True):
        value = leaf.value
        leaf.visits += 1
        leaf.total += value
        for node, k in reversed(path):
            node.child_visits[k] += 1
            node.child_total[k] -= value  # the child's value, seen from this node's mover
            value = -value
            node.visits += 1
            node.total += value


def _evaluate(game: SearchGame[State], nodes: Sequence[_Node[State]]) -> None:
    """Fill the prior and value of every node whose position goes on, in one call of the game."""
    live = [node for node in nodes if node.exact is None]
    if not live:
        return
    logits, values = game.evaluate([n.state for n in live], [n.expansion.actions for n in live])
    for node, row, value in zip(live, logits, values, strict=True):
        node.logits, node.prior, node.value = row, softmax(row), value
    for node in nodes:
        if node.exact is not None:
            node.value = node.exact
