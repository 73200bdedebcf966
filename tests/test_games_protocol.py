"""What asp checks of a user's game (asp.games.protocol): a game that breaks a rule of the
protocol, or a network whose output is not finite, stops play, search and training alike
with one line that names the game, the method and the rule, never an error from inside asp.
The games are tic-tac-toe with one thing broken each (tests/broken_games.py). Then what a game
may leave out: the optional members' defaults, and one ``outcome`` that play and the search
both ask (tests/plain_games.py)."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import broken_games
import plain_games
import pytest
import torch

from asp import SelfPlay
from asp.app.game_loader import load_game
from asp.errors import ConfigError, GameError, NonFiniteError, NotRetried, ShardFailed
from asp.games import BaseMover, Mover, PlayConfig, RandomMover, TrainConfig, Trainer, play_games
from asp.games.conformance import check_game
from asp.games.movers import movers_of
from asp.games.network_search import NetworkSearch
from asp.games.protocol import outcome, status, symmetries
from asp.search import SearchConfig, Status, search
from examples.tictactoe import TicTacToe

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MODES = ["policy", "search"]
"""Play without search (the network's policy), and with it."""


def play(game: Any, mode: str, **fields: Any) -> None:
    torch.manual_seed(0)
    search = SearchConfig(4) if mode == "search" else None
    play_games(game.network(), None, PlayConfig(game, n_games=4, batch_size=4, search=search, **fields))


def train(game: Any, net: torch.nn.Module) -> None:
    """Train ``net``, a network of ``game``, on sound games of tic-tac-toe."""
    good = TicTacToe()
    torch.manual_seed(0)
    records, _ = play_games(good.network(), None, PlayConfig(good, n_games=4, search=SearchConfig(4)))
    Trainer(net, game, TrainConfig(device="cpu")).train(records)


def parameters(net: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in net.named_parameters()}


def one_line(error: pytest.ExceptionInfo[BaseException], start: str, *parts: str) -> str:
    message = str(error.value)
    assert "\n" not in message and message.startswith(start), message
    for part in parts:
        assert part in message, message
    return message


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("game", "action"), [(broken_games.OutOfRange(), "9"), (broken_games.Negative(), "-1")])
def test_an_action_out_of_range_is_named_with_the_rule(game: Any, action: str, mode: str) -> None:
    with pytest.raises(GameError) as error:
        play(game, mode)
    one_line(error, "tictactoe: actions gave action ", action, "outside range(9)", "range(action_size)")


@pytest.mark.parametrize("mode", MODES)
def test_no_action_where_the_game_goes_on_is_named_with_the_rule(mode: str) -> None:
    with pytest.raises(GameError) as error:
        play(broken_games.NoActions(), mode)
    one_line(error, "tictactoe: actions gave no action at ", "outcome says the game goes on", "must be over")


def test_random_plies_and_the_random_mover_meet_the_same_check() -> None:
    game = broken_games.NoActions()
    with pytest.raises(GameError, match="^tictactoe: actions gave no action at "):
        play(game, "policy", random_plies=4)
    with pytest.raises(GameError, match="^tictactoe: actions gave no action at "):
        play_games(game.network(), movers_of(game)["random"], PlayConfig(game, n_games=2))


NETWORKS = {
    "wide logits": (broken_games.WideLogits(), "logits of shape (4, 10)"),
    "narrow logits": (broken_games.NarrowLogits(), "logits of shape (4, 8)"),
    "value (B, 1)": (broken_games.ColumnValue(), "a value of shape (4, 1)"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("broken", list(NETWORKS))
def test_a_network_output_of_the_wrong_shape_is_named_with_the_rule_in_play(broken: str, mode: str) -> None:
    game, gave = NETWORKS[broken]
    with pytest.raises(GameError) as error:
        play(game, mode)
    rule = "must give logits of shape (4, 9) (positions, action_size) and a value of shape (4,)"
    one_line(error, "tictactoe: network gave ", gave, rule)


@pytest.mark.parametrize("broken", list(NETWORKS))
def test_a_network_output_of_the_wrong_shape_is_named_with_the_rule_in_training(broken: str) -> None:
    game, _ = NETWORKS[broken]
    with pytest.raises(GameError) as error:
        train(game, game.network())
    one_line(error, "tictactoe: network gave ", "(positions, action_size)")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("game", "what"), [(broken_games.NaNOutputs(), "logits"), (broken_games.NaNValue(), "value")])
def test_a_network_that_outputs_nan_stops_play(game: Any, what: str, mode: str) -> None:
    with pytest.raises(NonFiniteError) as error:
        play(game, mode)
    one_line(error, "tictactoe: network (the model, version 0) gave ", f"NaN {what}", "outputs must be finite")


@pytest.mark.parametrize("game", [broken_games.NaNOutputs(), broken_games.NaNValue()])
def test_a_non_finite_loss_stops_training_before_its_step(game: Any) -> None:
    net = game.network()
    before = parameters(net)
    with pytest.raises(NonFiniteError) as error:
        train(game, net)
    one_line(error, "tictactoe: network: training gave a non-finite loss", "the step was not taken")
    after = parameters(net)  # the first step raised: the optimizer never stepped
    assert all(torch.equal(before[name], after[name]) for name in before)


def test_the_checks_leave_a_sound_game_alone() -> None:
    game = TicTacToe()
    for mode in MODES:
        play(game, mode, max_plies=9)
    net = game.network()
    before = parameters(net)
    train(game, net)
    after = parameters(net)
    assert any(not torch.equal(before[name], after[name]) for name in before)


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.asyncio
async def test_in_a_worker_a_broken_game_fails_the_call_at_once_not_retried() -> None:
    game = broken_games.OutOfRange()
    async with SelfPlay(workers=1, retries=2) as selfplay:
        with pytest.raises(ShardFailed, match="failed after 1 attempt") as error:
            await selfplay.play(game.network(), None, PlayConfig(game, n_games=2))
    assert isinstance(error.value.error, GameError) and isinstance(error.value.error, NotRetried)
    assert str(error.value.error).startswith("tictactoe: actions gave action 9 at ")


# The optional members and their defaults: a game that leaves them out (tests/plain_games.py).


class _Leftmost(BaseMover):
    opponent_name = "leftmost"

    def choose(self, game: Any, state: Any, rng: random.Random) -> int:
        return min(game.actions(state))


class _WithMovers(TicTacToe):
    """Tic-tac-toe with movers of its own: one besides ``random``, then a ``random`` of its own."""

    def movers(self) -> dict[str, Mover]:
        return {"leftmost": _Leftmost(), "random": _Leftmost()}


def test_a_game_with_the_required_members_alone_loads_plays_searches_and_trains() -> None:
    game = load_game("plain_games:Plain")
    assert isinstance(game, plain_games.Plain)
    check_game(game)
    assert symmetries(game) == () and list(movers_of(game)) == ["random"]
    assert isinstance(movers_of(game)["random"], RandomMover)
    torch.manual_seed(0)
    for searched in (None, SearchConfig(4)):
        records, _ = play_games(game.network(), None, PlayConfig(game, n_games=4, search=searched, take_wins=True))
        assert {r.termination for r in records} == {"rules"}
    net = game.network()
    metrics = Trainer(net, game, TrainConfig(device="cpu")).train(records)  # symmetries on: none to draw
    assert math.isfinite(metrics["loss/policy"])
    evaluated, _ = play_games(net, movers_of(game)["random"], PlayConfig(game, n_games=4))
    assert [r.opponent_name for r in evaluated] == ["random"] * 4


def test_random_is_every_game_s_first_mover_and_a_game_s_own_takes_its_place() -> None:
    assert list(movers_of(TicTacToe())) == ["random"]
    own = movers_of(_WithMovers())
    assert list(own) == ["random", "leftmost"] and isinstance(own["random"], _Leftmost)


def test_the_search_ends_a_game_where_its_outcome_does() -> None:
    # ShortTicTacToe changes outcome alone: play and the search both end its games there.
    game = plain_games.ShortTicTacToe()
    ended = game.parse_state("1234")
    assert outcome(game, ended) == 0.0 == status(game, ended).value
    net = game.network()
    assert NetworkSearch(game, net).status(ended) == Status(value=0.0)
    with pytest.raises(ValueError, match="a root position is finished"):
        search(NetworkSearch(game, net), [ended], SearchConfig(4), [random.Random(0)])
    torch.manual_seed(0)
    records, _ = play_games(net, None, PlayConfig(game, n_games=4, search=SearchConfig(4)))
    assert [len(r.actions) for r in records] == [plain_games.SHORT_PLIES] * 4
    assert {(r.termination, r.result) for r in records} == {("rules", 0.5)}


def _status(self: Any, state: Any) -> Status:
    return Status(None, ())


_OlderGame = type(
    "OlderGame",
    (),
    {
        **{k: v for k, v in vars(plain_games.Plain).items() if k != "outcome" and not k.startswith("__")},
        "status": _status,
    },
)
"""A game written for the protocol before outcome: it says the end by status."""


def test_a_game_written_for_status_is_told_what_the_protocol_asks_now(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    module = types.ModuleType("older_game")
    module.Game = _OlderGame  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "older_game", module)
    with pytest.raises(ConfigError, match=r"it has no outcome \(status\(state\) is now outcome\(state\)"):
        load_game("older_game:Game")


RULES_BROKEN = {
    "BoolAction": "actions gave True, a bool, at position ",
    "FloatAction": "actions gave 1.0, a float, at position ",
    "DuplicateAction": "twice at position '': each legal action is listed once",
    "OccupiedLegal": "apply raised ValueError: action ",
    "ApplyRaises": "apply raised IndexError: list index out of range on action 8 at position ",
    "ApplyChangesItsArgument": "apply changed its argument (action 0 at position ''): states are values",
    "OutcomeTwo": "the result for the side to move is in [-1, 1]",
    "EncodeShort": "encode gave a tensor of shape (7, 18) for 8 positions: it gives a tensor of one row per position",
    "EncodeLong": "encode gave a tensor of shape (9, 18) for 8 positions",
}


@pytest.mark.parametrize("name", list(RULES_BROKEN))
def test_a_users_game_that_breaks_a_rule_is_named_in_one_line_before_it_plays(name: str) -> None:
    with pytest.raises(GameError) as error:
        load_game(f"broken_games:{name}")
    one_line(error, "tictactoe: ", RULES_BROKEN[name])


def test_numpy_ints_are_actions_and_the_records_hold_ints() -> None:
    game = load_game("broken_games:NumpyActions")
    records, _ = play_games(game.network(), None, PlayConfig(game, n_games=2, search=SearchConfig(4)))
    assert all(type(a) is int for r in records for a in r.actions)
    json.dumps([r.plain() for r in records])


@pytest.mark.parametrize("mode", MODES)
def test_a_value_outside_minus_one_to_one_is_named_with_the_rule(mode: str) -> None:
    with pytest.raises(GameError) as error:
        play(broken_games.ValueOutOfRange(), mode)
    one_line(error, "tictactoe: network (the model, version 0) gave the value ", "a value is in [-1, 1]")


def test_a_game_with_parameters_is_made_from_its_spec_of_literals() -> None:
    game = load_game("plain_games:Capped(4, label='cap')")
    assert game.name == "cap4" and game.plies == 4 and load_game("plain_games:Capped()").name == "capped9"
    refused = {
        "plain_games:Capped(__import__('os').getpid())": "a game's arguments are Python literals",
        "plain_games:Capped(**{'plies': 3})": "a game's arguments are Python literals",
        "plain_games:Capped(12)": "Capped(...) failed: ValueError: plies must be in 1..9, got 12",
        "plain_games:Capped(plies=3, size=2)": "Capped(...) failed: TypeError: ",
        "broken_games:EMPTY_AFTER(1)": "EMPTY_AFTER is an object, not a class: it takes no arguments",
    }
    for spec, said in refused.items():
        with pytest.raises(ConfigError) as error:
            load_game(spec)
        one_line(error, f"--game {spec!r}: ", said)


@pytest.mark.parametrize("mode", MODES)
def test_apply_raising_in_play_or_search_is_the_games_failure_named_in_one_line(mode: str) -> None:
    with pytest.raises(GameError) as error:  # once a KeyError, tried again in a worker
        for seed in range(8):
            play(broken_games.ApplyRaisesLate(), mode, seed=seed)
    one_line(error, "tictactoe: apply raised KeyError: 'no cell' on action 8 at position ", "apply takes every legal")


def test_encode_of_the_wrong_rows_is_named_as_encode_not_the_network() -> None:
    for game, rows in ((broken_games.EncodeLong(), 5), (broken_games.EncodeShort(), 3)):
        with pytest.raises(GameError) as error:
            play(game, "search")
        one_line(error, f"tictactoe: encode gave {rows} rows for 4 positions: it gives one row per position")
