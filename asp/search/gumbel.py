"""Batched Gumbel tree search over any two-player game that implements :class:`SearchGame`.

:func:`search` searches a batch of positions at once, one tree each, in rounds: a round of
sequential halving walks down each root action it visits, and the new leaves of every tree
are evaluated together, in calls of the game's :meth:`~SearchGame.evaluate` (one network
forward each). The walks of a round go down distinct root actions, so they share no node
below the root and none waits for another: no virtual loss is needed, within a tree or
across trees, and a tree grows as it would with the round's walks made one at a time. A
round gives every surviving action one more visit, so 8 simulations with 16 considered
actions take one round (the 8 best-ranked get a visit each), and 64 take 15 (16 + 8 x 2 +
4 x 4 + 2 x 8). :class:`Searches` runs searches that start and end at their own pace, the
nodes waiting for the network in one queue, taken ``batch`` at a time. A leaf's legal
actions are asked for (:meth:`~SearchGame.actions`) only when a walk goes through it: most
leaves of a small search are visited once, and listing their moves is the costliest part
of a game's rules.

At the root, Gumbel search (Danihelka et al., "Policy improvement by planning with Gumbel",
ICLR 2022): ``m`` actions sampled without replacement by Gumbel top-k on the prior logits,
sequential halving of the simulation budget among them (:mod:`asp.search.seq_halving`; a
round visits the best-scored survivors of its visit count, ranked when the round begins), and
the action of the best ``g + logits + sigma(q)`` among the survivors. Below the root, the
paper's deterministic selection: ``argmax(pi'(a) - N(a) / (1 + sum N))`` with ``pi'`` the
improved policy. The result's ``policy`` is the improved policy
``softmax(logits + sigma(completed Q))`` over the legal actions: the training target.

Values are exact where the game says so: a finished position's value, and a position where
the mover has a winning action (:attr:`Status.winning`) counts as won (+1) without being
searched further. At the root such an action is played at once, as is the only legal
action of a position (a forced move, with the network's value).

Determinism: all randomness comes from the ``rng`` given for each root, so a game seeded by
its id searches the same way whichever batch it is in (up to floating-point differences of
the network between batch sizes).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar

from asp.search.qvalues import improved_logits, softmax
from asp.search.seq_halving import considered_visits, rounds
from asp.util.checks import check_int, check_number

__all__ = ["SearchConfig", "SearchGame", "SearchResult", "Searches", "Status", "search"]

State = TypeVar("State")
Key = TypeVar("Key")


class Status(NamedTuple):
    """What the game says of a position when the search reaches it: whether it is decided."""

    value: float | None = None
    """The exact value for the side to move when the game is over here (-1 lost, 0 drawn), else None."""
    winning: tuple[int, ...] = ()
    """Legal actions that win at once (a mate in one): the position is won, value +1."""


class Logits(Protocol):
    """A position's prior logits over all of a game's actions, indexed by action (a list, a
    numpy row)."""

    def __getitem__(self, action: int, /) -> float: ...


class SearchGame(Protocol[State]):
    """What a game supplies to :func:`search`; it owns its states and its network."""

    def status(self, state: State) -> Status:
        """Whether the game is decided at ``state``: asked once of every position the search
        reaches. A position whose game goes on must have a legal action."""
        ...

    def actions(self, state: State) -> Sequence[int]:
        """The legal actions of ``state`` (a position whose game goes on), as indices into the
        rows of :meth:`evaluate`."""
        ...

    def apply(self, state: State, action: int) -> State:
        """The state after ``action`` (a new object: ``state`` stays as it was)."""
        ...

    def evaluate(self, states: Sequence[State]) -> tuple[Sequence[Logits], Sequence[float]]:
        """For every state, its prior logits over all actions (a row indexed by action) and
        its value for the side to move, in [-1, 1]: one network call for the whole batch."""
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
        check_int("SearchConfig.simulations", self.simulations, 1, 10_000)
        check_int("SearchConfig.considered", self.considered, 1, 1024)
        for name in ("gumbel_scale", "c_visit", "c_scale"):
            check_number(f"SearchConfig.{name}", getattr(self, name), 0, 1e6)


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
    """Simulations spent: walks from the root, whether their leaf needed the network or was
    exact (0 when a winning or forced action was played at once)."""


class _Node(Generic[State]):
    """A position in a tree: its value, and once expanded its actions, their prior, and the
    visits and values of its children, in the order of ``actions``."""

    __slots__ = ("actions", "child_total", "child_visits", "children", "exact", "logits", "prior", "row", "state",
                 "status", "total", "value", "visits")  # fmt: skip

    def __init__(self, state: State, status: Status) -> None:
        self.state = state
        self.status = status
        self.exact = status.value if status.value is not None else (1.0 if status.winning else None)
        self.row: Logits = ()
        """The network's logits over all actions (from :meth:`SearchGame.evaluate`)."""
        self.value = 0.0 if self.exact is None else self.exact
        """The network's value (or the exact one) for the side to move here."""
        self.visits = 0
        self.total = 0.0
        """Sum of the backed-up values, for the side to move here."""
        self.actions: Sequence[int] = ()
        """The legal actions, once expanded (empty before)."""
        self.logits: list[float] = []
        self.prior: list[float] = []
        self.children: list[_Node[State] | None] = []
        self.child_visits: list[int] = []
        self.child_total: list[float] = []
        """Sum of the children's backed-up values, for the side to move here."""

    def expand(self, game: SearchGame[State]) -> None:
        """List the actions and their prior: before the first walk goes through this node."""
        self.actions = game.actions(self.state)
        row = self.row
        self.logits = [float(row[a]) for a in self.actions]
        self.prior = softmax(self.logits)
        n = len(self.actions)
        self.children = [None] * n
        self.child_visits = [0] * n
        self.child_total = [0.0] * n

    def improved_logits(self, cfg: SearchConfig) -> Sequence[float]:
        return improved_logits(
            self.logits, self.prior, self.value, self.child_total, self.child_visits, c_visit=cfg.c_visit,
            c_scale=cfg.c_scale,
        )  # fmt: skip

    def interior_action(self, cfg: SearchConfig) -> int:
        """The position (in ``actions``) of the paper's deterministic selection below the root."""
        probs = softmax(self.improved_logits(cfg))
        total = 1 + sum(self.child_visits)
        scores = [p - n / total for p, n in zip(probs, self.child_visits, strict=True)]
        return max(range(len(scores)), key=scores.__getitem__)


class _Root(Generic[State]):
    """A root's Gumbel draw and sequential-halving schedule, cut into rounds."""

    def __init__(self, node: _Node[State], cfg: SearchConfig, rng: random.Random) -> None:
        self.node = node
        n = len(node.actions)
        self.gumbel = [cfg.gumbel_scale * -math.log(-math.log(rng.random() or 1e-300)) for _ in range(n)]
        ranked = sorted(range(n), key=lambda i: self.gumbel[i] + node.logits[i], reverse=True)
        self.considered = ranked[: min(cfg.considered, n)]
        self.rounds = rounds(considered_visits(len(self.considered), cfg.simulations))
        """(visit count, actions) of each round: that many actions with that many visits get one more."""
        self.round = 0
        """The rounds walked so far."""

    def scores(self, logits: Sequence[float], visit_count: int | None) -> dict[int, float]:
        """``g + logits + sigma(q)`` of the considered actions (with ``visit_count`` visits, if given)."""
        visits = self.node.child_visits
        return {
            i: self.gumbel[i] + logits[i] for i in self.considered if visit_count is None or visits[i] == visit_count
        }

    def next_round(self, cfg: SearchConfig) -> list[int]:
        """The positions of the root actions the next round visits (none once all are walked):
        the best-scored of those with the round's visit count, distinct, so that their walks
        share no node below the root."""
        if self.round == len(self.rounds):
            return []
        count, width = self.rounds[self.round]
        self.round += 1
        logits = self.node.improved_logits(cfg)
        scores = self.scores(logits, count)
        # the schedule leaves at least ``width`` actions with the round's count (test_search)
        assert len(scores) >= width, (count, width)
        return sorted(scores, key=scores.__getitem__, reverse=True)[:width]

    def result(self, cfg: SearchConfig, simulations: int) -> SearchResult:
        node = self.node
        logits = node.improved_logits(cfg)
        most = max(node.child_visits[i] for i in self.considered)
        scores = self.scores(logits, most)
        action = node.actions[max(scores, key=scores.__getitem__)]
        value = node.total / node.visits if node.visits else node.value
        return SearchResult(action, tuple(node.actions), tuple(softmax(logits)), value, simulations)


_Path = list[tuple[_Node[State], int]]


class _Search(Generic[State, Key]):
    """One search in a :class:`Searches`: its root, and the walks of its round in flight."""

    __slots__ = ("cfg", "key", "leaves", "node", "paths", "pending", "rng", "root")

    def __init__(self, key: Key, node: _Node[State], rng: random.Random, cfg: SearchConfig) -> None:
        self.key = key
        self.node = node
        self.rng = rng
        self.cfg = cfg
        self.root: _Root[State] | None = None
        """Its Gumbel draw and rounds, once its root is evaluated and needs a search."""
        self.paths: list[_Path[State]] = []
        self.leaves: list[_Node[State]] = []
        self.pending = 1 if node.exact is None else 0
        """Its nodes still waiting for the network: its root, then the new leaves of its round."""


class Searches(Generic[State, Key]):
    """Searches over one game that run side by side, each at its own pace, sharing full
    network calls.

    :meth:`start` adds a root at any time. The nodes waiting for the network (new roots, the
    new leaves of every search's current round) wait in one queue, first come first served;
    every :meth:`step` evaluates the first ``batch`` of them in one call of
    :meth:`SearchGame.evaluate` (all of them when ``batch`` is None), and every search whose
    round is then evaluated backs it up and walks its next round, or ends. So a call is full
    whenever the searches in flight have that many nodes waiting, games need not move in
    lockstep (a position with few legal moves takes more rounds than the others and holds
    none of them up), and a search grows the tree it would grow alone: its walks and their
    order do not depend on what else is in a call.
    """

    def __init__(
        self,
        game: SearchGame[State],
        cfg: SearchConfig,
        *,
        batch: int | None = None,
        on_step: Callable[[], None] | None = None,
    ) -> None:
        if batch is not None:
            check_int("Searches.batch", batch, 1, 10**6)
        self.game = game
        self.cfg = cfg
        self.batch = batch
        self.on_step = on_step
        self._searches: list[_Search[State, Key]] = []
        self._queue: deque[tuple[_Node[State], _Search[State, Key]]] = deque()

    def __len__(self) -> int:
        """Searches started and not yet returned by :meth:`step`."""
        return len(self._searches)

    def start(self, key: Key, state: State, rng: random.Random, cfg: SearchConfig | None = None) -> None:
        """Search ``state`` (a position where the game goes on); its result comes back from
        :meth:`step` with ``key``. ``rng`` draws its Gumbel noise; ``cfg``, where given, is
        this search's instead of the config of the searches (a search of fewer simulations
        shares the network calls of the others).

        :raises ValueError: if the game is over at ``state`` (there is nothing to search).
        """
        node = _Node(state, self.game.status(state))
        if node.status.value is not None:
            raise ValueError("search: a root position is finished: there is nothing to search")
        entry = _Search(key, node, rng, self.cfg if cfg is None else cfg)
        self._searches.append(entry)
        if entry.pending:
            self._queue.append((node, entry))

    def step(self) -> list[tuple[Key, SearchResult]]:
        """Evaluate the first ``batch`` waiting nodes in one call, move on every search that
        has nothing waiting any more, and return those that ended, with their keys."""
        count = len(self._queue) if self.batch is None else min(self.batch, len(self._queue))
        taken = [self._queue.popleft() for _ in range(count)]
        _evaluate(self.game, [node for node, _ in taken])
        for _, entry in taken:
            entry.pending -= 1
        done: list[tuple[Key, SearchResult]] = []
        running: list[_Search[State, Key]] = []
        for entry in self._searches:
            result = self._advance(entry) if entry.pending == 0 else None
            if result is not None:
                done.append((entry.key, result))
            else:
                running.append(entry)
        self._searches = running
        if self.on_step is not None:
            self.on_step()
        return done

    def _advance(self, entry: _Search[State, Key]) -> SearchResult | None:
        """Back up the evaluated round of ``entry`` and walk the next, until one waits for the
        network; its result once its rounds are all walked."""
        game, cfg = self.game, entry.cfg
        if entry.root is None:
            decided = _decided(game, entry.node)
            if decided is not None:
                return decided
            entry.root = _Root(entry.node, cfg, entry.rng)
        while entry.pending == 0:
            _back_up(entry.paths, entry.leaves)
            picks = entry.root.next_round(cfg)
            if not picks:
                return entry.root.result(cfg, cfg.simulations)
            entry.paths, entry.leaves, fresh = _descend(game, [(entry.root, k) for k in picks], cfg)
            entry.pending = len(fresh)
            self._queue.extend((node, entry) for node in fresh)
        return None


def _decided(game: SearchGame[State], node: _Node[State]) -> SearchResult | None:
    """The result of an evaluated root that needs no search: a proven win is played at once
    (and the target says so), as is a forced move; None for a root to search, which this
    expands."""
    if node.status.winning:
        actions = tuple(game.actions(node.state))
        action = node.status.winning[0]
        return SearchResult(action, actions, tuple(1.0 if a == action else 0.0 for a in actions), 1.0, 0)
    node.expand(game)
    if len(node.actions) == 1:
        return SearchResult(node.actions[0], tuple(node.actions), (1.0,), node.value, 0)
    node.visits, node.total = 1, node.value
    return None


def search(
    game: SearchGame[State],
    states: Sequence[State],
    cfg: SearchConfig,
    rngs: Sequence[random.Random],
    *,
    batch: int | None = None,
    on_step: Callable[[], None] | None = None,
) -> list[SearchResult]:
    """Search every state of ``states`` (positions where the game goes on) at once, with
    :class:`Searches`, and return their results in order.

    ``rngs[i]`` draws root ``i``'s Gumbel noise. ``batch`` caps the nodes of a network call
    (None: a call takes every node waiting, the new leaves of a round of every tree).
    ``on_step`` is called after every network call: a heartbeat, so that a long search is
    never taken for a stall.

    :raises ValueError: if a state is finished (it has no action to search).
    """
    if len(rngs) != len(states):
        raise ValueError(f"search: {len(states)} states but {len(rngs)} random streams")
    searches: Searches[State, int] = Searches(game, cfg, batch=batch, on_step=on_step)
    for i, (state, rng) in enumerate(zip(states, rngs, strict=True)):
        searches.start(i, state, rng)
    results: dict[int, SearchResult] = {}
    while searches:
        results.update(searches.step())
    return [results[i] for i in range(len(states))]


def _descend(
    game: SearchGame[State], walks: list[tuple[_Root[State], int]], cfg: SearchConfig
) -> tuple[list[_Path[State]], list[_Node[State]], list[_Node[State]]]:
    """A walk down each ``(root, root action)`` (a root's walks go down distinct actions, so
    they share no node below it): the paths, their leaves, and the new leaves to evaluate."""
    paths: list[_Path[State]] = []
    leaves: list[_Node[State]] = []
    fresh: list[_Node[State]] = []
    for root, k in walks:
        path: _Path[State] = []
        node = root.node
        while True:
            path.append((node, k))
            child = node.children[k]
            if child is None:
                state = game.apply(node.state, node.actions[k])
                child = _Node(state, game.status(state))
                node.children[k] = child
                if child.exact is None:
                    fresh.append(child)
                break
            if child.exact is not None:
                break
            if not child.actions:
                child.expand(game)
            node, k = child, child.interior_action(cfg)
        paths.append(path)
        leaves.append(child)
    return paths, leaves, fresh


def _back_up(paths: list[_Path[State]], leaves: list[_Node[State]]) -> None:
    """Back every leaf's value up its path, the sign flipping with the mover at each ply."""
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
    """Fill the logits and value of every node whose position goes on, in one call of the game."""
    live = [node for node in nodes if node.exact is None]
    if not live:
        return
    rows, values = game.evaluate([n.state for n in live])
    for node, row, value in zip(live, rows, values, strict=True):
        node.row, node.value = row, float(value)
