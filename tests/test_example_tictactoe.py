"""The tic-tac-toe example (examples/tictactoe.py), a user's own game: its rules and notation,
its symmetries against its encoding, its network's rebuild, and that asp plays it, trains on it
and learns to beat the random mover."""

from __future__ import annotations

import itertools
import math
import pickle
import time

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from asp.errors import ConfigError
from asp.games import Game, PlayConfig, RandomMover, Symmetry, TrainConfig, Trainer, play_games
from asp.games.protocol import status
from asp.search import SearchConfig
from examples.tictactoe import LINES, Board, NetConfig, TicTacToe, TicTacToeNet

pytestmark = pytest.mark.usefixtures("one_torch_thread")

GAME: Game[Board] = TicTacToe()  # typed as the protocol: mypy checks that the example implements it
DRAWN = "123546879"
"""A full board without three in a row: X O X / X O O / O X X."""


def replay(actions: list[int]) -> Board:
    """The position after ``actions`` from the empty board, stopping where the game ends."""
    state = GAME.start()
    for action in actions:
        if status(GAME, state).value is not None:
            break
        state = GAME.apply(state, action)
    return state


positions = st.builds(lambda order, plies: replay(order[:plies]), st.permutations(range(9)), st.integers(0, 9))
"""Random legal positions, over or not."""


def all_positions() -> dict[tuple[int, ...], Board]:
    """Every position reachable from the empty board, one per arrangement of the cells."""
    seen = {GAME.start().cells: GAME.start()}
    frontier = [GAME.start()]
    while frontier:
        state = frontier.pop()
        if status(GAME, state).value is None:
            for action in GAME.actions(state):
                child = GAME.apply(state, action)
                if child.cells not in seen:
                    seen[child.cells] = child
                    frontier.append(child)
    return seen


@pytest.mark.parametrize("line", LINES)
def test_three_in_a_row_wins_for_either_player_in_every_row_column_and_diagonal(line: tuple[int, ...]) -> None:
    others = [cell for cell in range(9) if cell not in line]
    x_wins = replay([line[0], others[0], line[1], others[1], line[2]])
    assert GAME.to_move(x_wins) == 1 and status(GAME, x_wins).value == -1.0
    x_cells = next(c for c in itertools.combinations(others, 3) if c not in LINES)
    o_wins = replay([x_cells[0], line[0], x_cells[1], line[1], x_cells[2], line[2]])
    assert GAME.to_move(o_wins) == 0 and status(GAME, o_wins).value == -1.0
    assert len(o_wins.moves) == 6


def test_a_full_board_without_a_line_is_a_draw() -> None:
    state = GAME.parse_state(DRAWN)
    assert GAME.show(state) == "X O X\nX O O\nO X X"
    assert status(GAME, state).value == 0.0
    assert status(GAME, GAME.parse_state(DRAWN[:-1])).value is None


def test_winning_lists_exactly_the_cells_that_complete_a_line_for_the_side_to_move() -> None:
    assert status(GAME, GAME.parse_state("1425")).winning == (2,)  # X's 3, not O's 6
    assert status(GAME, GAME.parse_state("41528")).winning == (2,)  # O's 3, not X's 6
    assert status(GAME, GAME.parse_state("143658")).winning == (1, 6, 8)  # X's fork: 2, 7 and 9
    assert status(GAME, GAME.parse_state("1")).winning == ()
    for state in all_positions().values():
        if status(GAME, state).value is None:
            completing = [a for a in GAME.actions(state) if status(GAME, GAME.apply(state, a)).value == -1.0]
            assert status(GAME, state).winning == tuple(completing), GAME.state_text(state)


def test_apply_refuses_an_occupied_cell_and_leaves_the_position_as_it_was() -> None:
    state = GAME.parse_state("5")
    with pytest.raises(ValueError, match="action 4 is not a free cell"):
        GAME.apply(state, 4)
    assert state == Board((0, 0, 0, 0, 1, 0, 0, 0, 0), (4,))
    assert GAME.apply(state, 0).cells[0] == 2


@settings(max_examples=100, deadline=None)
@given(positions)
def test_state_text_and_parse_state_round_trip(state: Board) -> None:
    text = GAME.state_text(state)
    assert len(text) == len(state.moves)
    assert GAME.parse_state(text) == state
    assert GAME.state_text(GAME.start()) == "" and GAME.parse_state("") == GAME.start()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("12x", "move 3: 'x' is not a cell 1-9"),
        ("120", "move 3: '0' is not a cell 1-9"),
        ("151", "move 3: cell 1 is taken"),
        ("142536", "move 6: cell 6: the game is over"),
    ],
)
def test_parse_state_names_the_bad_character_or_the_illegal_move(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        GAME.parse_state(text)


def test_actions_are_cells_1_to_9_in_text() -> None:
    state = GAME.parse_state("5")
    assert GAME.action_text(state, 0) == "1" and GAME.parse_action(state, " 9 ") == 8
    for text, problem in (("5", "cell 5 is taken"), ("10", "not a cell 1-9"), ("", "not a cell 1-9")):
        with pytest.raises(ValueError, match=problem):
            GAME.parse_action(state, text)


def test_encode_puts_the_side_to_move_first() -> None:
    features = GAME.encode([GAME.start(), GAME.parse_state("5"), GAME.parse_state("51")])
    assert features.shape == (3, 18) and features.dtype == torch.float32
    assert features[0].sum() == 0
    assert features[1].nonzero().flatten().tolist() == [9 + 4]  # O to move: X's centre is the opponent's
    assert features[2].nonzero().flatten().tolist() == [4, 9 + 0]  # X to move: its centre, then O's corner
    assert GAME.encode([]).shape == (0, 18)


def test_there_are_seven_distinct_symmetries_each_a_permutation_of_the_cells() -> None:
    symmetries = GAME.symmetries()
    assert len(symmetries) == 7 and len({s.name for s in symmetries}) == 7
    images = {s.actions for s in symmetries}
    assert len(images) == 7 and tuple(range(9)) not in images
    assert all(sorted(s.actions) == list(range(9)) for s in symmetries)
    # They are pickled to the worker processes, with the game.
    assert [s.name for s in pickle.loads(pickle.dumps(symmetries))] == [s.name for s in symmetries]
    assert isinstance(pickle.loads(pickle.dumps(GAME)), TicTacToe)


@settings(max_examples=60, deadline=None)
@given(positions)
def test_every_symmetry_maps_a_position_to_its_image(state: Board) -> None:
    symmetry: Symmetry
    for symmetry in GAME.symmetries():
        image = replay([symmetry.actions[a] for a in state.moves])
        assert torch.equal(symmetry.features(GAME.encode([state])), GAME.encode([image])), symmetry.name
        assert status(GAME, image).value == status(GAME, state).value
        if status(GAME, state).value is None:
            assert sorted(symmetry.actions[a] for a in GAME.actions(state)) == GAME.actions(image)
            assert sorted(symmetry.actions[a] for a in status(GAME, state).winning) == list(status(GAME, image).winning)


def test_the_network_keeps_its_config_and_is_rebuilt_from_it() -> None:
    net = GAME.network(NetConfig(hidden=16))
    assert isinstance(net, TicTacToeNet) and net.cfg == NetConfig(hidden=16)
    rebuilt = type(net)(net.cfg)
    assert [p.shape for p in rebuilt.parameters()] == [p.shape for p in net.parameters()]
    assert TicTacToeNet().cfg == NetConfig() == GAME.network().cfg
    logits, value = net(GAME.encode([GAME.start()] * 5))
    assert logits.shape == (5, 9) and value.shape == (5,) and bool((value.abs() <= 1).all())
    with pytest.raises(ConfigError, match=r"NetConfig.hidden must be an int in 4..4096, got 3"):
        NetConfig(hidden=3)


def test_asp_plays_the_game_with_search_and_trains_on_its_records() -> None:
    torch.manual_seed(0)
    net = GAME.network()
    records, stats = play_games(net, None, PlayConfig(GAME, n_games=8, search=SearchConfig(8, 9)))
    assert len(records) == 8 and stats["games"] == 8
    assert {r.result for r in records} <= {0.0, 0.5, 1.0} and {r.termination for r in records} == {"rules"}
    assert all(5 <= len(r.actions) <= 9 for r in records)
    metrics = Trainer(net, GAME, TrainConfig(device="cpu")).train(records)
    assert metrics["train/samples"] == stats["plies"]
    assert all(math.isfinite(metrics[key]) for key in ("loss/total", "loss/policy", "loss/value"))


OPENINGS = ("", *(str(a) for a in range(1, 10)), *(f"{a}{b}" for a in range(1, 10) for b in range(1, 10) if a != b))
"""Every position of at most two plies, the self-play games' starts. From the empty board alone,
self-play with search soon draws every game: the value learns "drawn" everywhere, and the policy
learns much less of what to do with the positions a weak opponent gives away."""


def score_against_random(net: torch.nn.Module, search: SearchConfig | None) -> float:
    """The model's mean score in 100 games against the random mover, half of them first."""
    cfg = PlayConfig(GAME, n_games=100, seed=10**6, temperature=0, search=search, samples=False)
    score = play_games(net, RandomMover(), cfg)[1]["score"]
    assert isinstance(score, float)
    return score


def train_and_score(seed: int) -> tuple[float, float, float, float]:
    """Train a new network for 20 iterations of 64 self-play games with search, in this
    process; return the seconds it took and its scores against the random mover: untrained
    (policy alone), trained (policy alone), trained with search."""
    torch.manual_seed(seed)
    net = GAME.network()
    untrained = score_against_random(net, None)
    trainer = Trainer(net, GAME, TrainConfig(device="cpu", lr=5e-3, seed=seed))
    began = time.perf_counter()
    for iteration in range(20):
        cfg = PlayConfig(GAME, n_games=64, seed=seed, first_game=64 * iteration, openings=OPENINGS,
                         search=SearchConfig(16, 9), model_version=iteration)  # fmt: skip
        trainer.train(play_games(net, None, cfg)[0])
    seconds = time.perf_counter() - began
    return seconds, untrained, score_against_random(net, None), score_against_random(net, SearchConfig(16, 9, 0))


@pytest.mark.slow
def test_self_play_and_training_learn_to_beat_the_random_mover() -> None:
    # Search alone takes an untrained network to about 0.9 against the random mover, its policy
    # alone to about 0.5: the policy is what shows the learning.
    seconds, untrained, policy, searched = train_and_score(seed=0)
    figures = f"{seconds:.1f} s: policy {untrained:.3f} -> {policy:.3f}, with search {searched:.3f}"
    assert searched >= 0.9, figures
    assert policy >= 0.75 and policy >= untrained + 0.1, figures
