"""The batched Gumbel search's contract, on tic-tac-toe with a network that knows nothing.

The game lives here: the search knows no game, so any game that implements the protocol is
enough to hold it to its promises (a winning move always played, exact terminal values,
improved-policy targets that sum to one over the legal moves, one network call per
round of sequential halving for the whole batch, determinism per random stream).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from asp.errors import ConfigError
from asp.search import SearchConfig, Searches, SearchResult, Status, gumbel, search
from asp.search.seq_halving import considered_visits, rounds

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


@dataclass(frozen=True)
class Board:
    cells: tuple[int, ...]  # 0 empty, 1 X, 2 O
    mover: int = 1

    @staticmethod
    def parse(text: str, mover: int) -> Board:
        return Board(tuple(" XO".index(c) for c in text.replace("|", "")), mover)


def won(cells: Sequence[int], player: int) -> bool:
    return any(all(cells[i] == player for i in line) for line in LINES)


class TicTacToe:
    """The search protocol for tic-tac-toe, with a flat prior and a value of 0 everywhere."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def status(self, state: Board) -> Status:
        if won(state.cells, 3 - state.mover):
            return Status(value=-1.0)
        actions = self.actions(state)
        if not actions:
            return Status(value=0.0)
        return Status(winning=tuple(a for a in actions if won(self.apply(state, a).cells, state.mover)))

    def actions(self, state: Board) -> tuple[int, ...]:
        return tuple(i for i, c in enumerate(state.cells) if c == 0)

    def apply(self, state: Board, action: int) -> Board:
        cells = list(state.cells)
        cells[action] = state.mover
        return Board(tuple(cells), 3 - state.mover)

    def evaluate(self, states: Sequence[Board]) -> tuple[list[list[float]], list[float]]:
        self.calls.append(len(states))
        return [[0.0] * 9 for _ in states], [0.0] * len(states)


def run(
    states: list[Board], cfg: SearchConfig, seed: int | str = 0, game: TicTacToe | None = None
) -> list[SearchResult]:
    """Search ``states``, root ``i`` with the stream ``"seed:i"`` (or ``seed`` itself for a string)."""
    rngs = [random.Random(seed if isinstance(seed, str) else f"{seed}:{i}") for i in range(len(states))]
    return search(game or TicTacToe(), states, cfg, rngs)


THREAT = Board.parse("OO |X  |X  ", mover=1)  # X to move must block at 2 (O threatens 0-1-2)
WIN = Board.parse("XX |OO |   ", mover=1)  # X wins at 2


def test_a_winning_move_is_played_at_once_with_a_one_hot_target() -> None:
    game = TicTacToe()
    (result,) = run([WIN], SearchConfig(simulations=8), game=game)
    assert result.action == 2 and result.simulations == 0 and result.value == 1.0
    assert result.policy == tuple(1.0 if a == 2 else 0.0 for a in result.actions)
    assert game.calls == []  # a proven win needs no network


@pytest.mark.parametrize("simulations", [6, 8, 32])
def test_a_threat_two_plies_deep_is_seen_through_exact_values(simulations: int) -> None:
    """Every reply but the block lets the opponent win at once: seen as lost (-1) on one visit."""
    (result,) = run([THREAT], SearchConfig(simulations=simulations, gumbel_scale=0.0))
    assert result.action == 2
    block = result.actions.index(2)
    assert result.policy[block] == max(result.policy)


@pytest.mark.parametrize("simulations", [1, 2, 5, 16, 40])
def test_improved_policy_is_a_distribution_over_the_legal_actions(simulations: int) -> None:
    states = [Board((0,) * 9), THREAT, Board.parse("X O| X |  O", mover=1)]
    for result in run(states, SearchConfig(simulations=simulations, considered=4)):
        assert len(result.policy) == len(result.actions)
        assert all(p >= 0 for p in result.policy)
        assert sum(result.policy) == pytest.approx(1.0)
        assert result.action in result.actions
        assert -1.0 <= result.value <= 1.0


def test_one_network_call_per_round_of_sequential_halving_for_the_whole_batch() -> None:
    """7 simulations over the 9 actions of an empty board: one round that visits the 7
    best-ranked once each, all trees' leaves in one call."""
    game = TicTacToe()
    states = [Board((0,) * 9)] * 5
    steps: list[None] = []
    search(
        game,
        states,
        SearchConfig(simulations=7),
        [random.Random(i) for i in range(5)],
        on_step=lambda: steps.append(None),
    )
    assert game.calls == [5, 5 * 7]  # the roots, then the one round's leaves
    assert len(steps) == 2  # a heartbeat per step


def test_a_long_search_takes_a_step_per_round() -> None:
    game = TicTacToe()
    cfg = SearchConfig(simulations=64, considered=8)
    steps: list[None] = []
    (result,) = search(game, [Board((0,) * 9)], cfg, [random.Random(0)], on_step=lambda: steps.append(None))
    planned = rounds(considered_visits(8, 64))
    assert len(game.calls) == 1 + len(planned) == len(steps)
    assert planned[:3] == [(0, 8), (1, 8), (2, 4)]  # 8 twice, then the best 4...
    assert sum(game.calls[1:]) <= 64  # every walk evaluates its new leaf (exact leaves need none)


@pytest.mark.parametrize("considered", range(1, 33))
def test_every_round_finds_as_many_actions_with_its_visit_count_as_it_visits(considered: int) -> None:
    """So a round never has to take an action off the schedule: whatever the scores, the
    actions with the round's count are at least its width."""
    for simulations in range(1, 201):
        visits, rng = [0] * considered, random.Random(simulations)
        for count, width in rounds(considered_visits(considered, simulations)):
            eligible = [i for i in range(considered) if visits[i] == count]
            rng.shuffle(eligible)  # any ranking: the scores change from round to round
            assert len(eligible) >= width, (simulations, count, width, visits)
            for i in eligible[:width]:
                visits[i] += 1
        assert sum(visits) == simulations


class Hashed(TicTacToe):
    """Tic-tac-toe with priors and values that differ from board to board (a fixed function
    of the board), so that the search's choices depend on what it has seen."""

    def evaluate(self, states: Sequence[Board]) -> tuple[list[list[float]], list[float]]:
        self.calls.append(len(states))
        draws = [random.Random(str(state)) for state in states]
        return [[d.gauss(0, 1) for _ in range(9)] for d in draws], [d.uniform(-1, 1) for d in draws]


def test_the_walks_of_a_step_share_no_node_below_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """So none waits for another's value: a tree grows as it would with the walks made one at a time."""
    descend = gumbel._descend
    widths: list[int] = []

    def checked(game: Hashed, walks: list[tuple[object, int]], cfg: SearchConfig) -> object:
        paths, leaves, fresh = descend(game, walks, cfg)  # type: ignore[arg-type]
        below = [
            id(node) for path, leaf in zip(paths, leaves, strict=True) for node in [n for n, _ in path[1:]] + [leaf]
        ]
        assert len(below) == len(set(below))
        widths.append(len(walks))
        return paths, leaves, fresh

    monkeypatch.setattr(gumbel, "_descend", checked)
    states = [Board((0,) * 9), THREAT, Board.parse("X O| X |  O", mover=1)]
    run(states, SearchConfig(simulations=40, considered=4), game=Hashed())
    assert max(widths) > 1  # several walks down one tree at once


def test_searches_started_at_different_steps_each_search_as_they_would_alone() -> None:
    cfg = SearchConfig(simulations=12, considered=4)
    game = Hashed()
    searches: Searches[Board, str] = Searches(game, cfg)
    done: dict[str, SearchResult] = {}
    searches.start("empty", Board((0,) * 9), random.Random("empty"))
    done.update(searches.step())  # its root
    searches.start("threat", THREAT, random.Random("threat"))
    searches.start("won", WIN, random.Random("won"))
    done.update(searches.step())  # a round of the first; the new roots
    assert list(done) == ["won"] and len(searches) == 2
    while searches:
        done.update(searches.step())
    assert done["empty"] == run([Board((0,) * 9)], cfg, game=Hashed(), seed="empty")[0]
    assert done["threat"] == run([THREAT], cfg, game=Hashed(), seed="threat")[0]
    assert game.calls[:2] == [1, 4 + 1]  # a root; then the first round of its tree and a new root


def test_a_forced_move_is_played_without_search() -> None:
    game = TicTacToe()
    forced = Board.parse("XOX|XOO|OX ", mover=1)  # X's only move, not a win
    (result,) = run([forced], SearchConfig(simulations=8), game=game)
    assert (result.action, result.actions, result.policy, result.simulations) == (8, (8,), (1.0,), 0)
    assert game.calls == [1]  # its value, no simulation


def test_the_same_random_stream_gives_the_same_search_in_any_batch() -> None:
    cfg = SearchConfig(simulations=12, considered=4)
    alone = search(TicTacToe(), [Board((0,) * 9)], cfg, [random.Random("game-7")])
    batched = search(TicTacToe(), [THREAT, Board((0,) * 9)], cfg, [random.Random("x"), random.Random("game-7")])
    assert alone[0] == batched[1]
    other = search(TicTacToe(), [Board((0,) * 9)], cfg, [random.Random("game-8")])
    assert other[0].actions == alone[0].actions


def test_a_finished_position_cannot_be_searched() -> None:
    with pytest.raises(ValueError, match="finished"):
        run([Board.parse("XXX|OO |   ", mover=2)], SearchConfig())


@pytest.mark.parametrize(
    ("field", "value"),
    [("simulations", 0), ("simulations", 1.5), ("considered", 0), ("gumbel_scale", -1.0), ("c_scale", "x")],
)
def test_bad_settings_are_config_errors_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"SearchConfig.{field}"):
        SearchConfig(**{field: value})  # type: ignore[arg-type]


def test_sequential_halving_gives_each_phase_its_share() -> None:
    assert considered_visits(16, 16) == (0,) * 16  # as many simulations as actions: one each
    schedule = considered_visits(16, 64)
    assert schedule[:16] == (0,) * 16 and len(schedule) == 64
    assert considered_visits(2, 4) == (0, 0, 1, 1)
