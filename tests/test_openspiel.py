"""OpenSpiel's games through asp's game protocol (asp.openspiel), side by side with pyspiel
itself: the same legal actions, outcomes and returns at every ply of random games; the
forced pass of games where a player moves twice; the kinds of game refused; the notation;
OpenSpiel's MCTS as a mover; and ``asp train --game openspiel:NAME`` with its other commands."""

from __future__ import annotations

import io
import json
import pickle
import random
from pathlib import Path

import pytest
import torch
from helpers import asp, ok

from asp.app.game_loader import check_named_game, load_game
from asp.app.player import Player
from asp.app.run_config import network_config
from asp.connect4 import ConnectFour
from asp.connect4.model import planes_of
from asp.errors import ConfigError
from asp.games.conformance import check_game
from asp.games.movers import movers_of
from asp.openspiel import MCTSConfig, MCTSMover, OpenSpielGame, SpielNetConfig

pyspiel = pytest.importorskip("pyspiel")

SIDE_BY_SIDE = {
    "tic_tac_toe": 6,
    "connect_four": 4,
    "breakthrough(rows=5,columns=5)": 4,
    "othello": 2,
    "hex(board_size=5)": 4,
    "clobber": 4,
    "checkers": 2,
    "dots_and_boxes": 6,
    "mancala": 3,
    "oware": 2,
    "go(board_size=5)": 2,
    "pentago": 2,
    "havannah(board_size=4)": 2,
    "nim": 6,
}
"""Games played side by side, and how many random games each: checkers, dots-and-boxes and
mancala give a player two moves in a row (asp's forced pass)."""


def play_side_by_side(name: str, seed: int) -> int:
    """A random game through the adapter and through pyspiel at once, compared at every ply;
    the forced passes it took."""
    game = OpenSpielGame(name)
    rng = random.Random(seed)
    spiel = pyspiel.load_game(name).new_initial_state()
    state = game.start()
    passes = 0
    while True:
        if state.must_pass:
            assert game.actions(state) == [game.pass_action] and game.outcome(state) is None
            assert game.to_move(state) != spiel.current_player()
            state = game.apply(state, game.pass_action)
            passes += 1
            continue
        assert game.parse_state(game.state_text(state)) == state
        if spiel.is_terminal():
            assert game.outcome(state) == spiel.returns()[game.to_move(state)]
            assert sum(spiel.returns()) == 0
            return passes
        assert game.to_move(state) == spiel.current_player() and game.outcome(state) is None
        assert game.actions(state) == spiel.legal_actions()
        assert game.winning(state) == [a for a in spiel.legal_actions() if won_by(spiel, a)]
        action = rng.choice(spiel.legal_actions())
        before = game.state_text(state)
        spiel.apply_action(action)
        state2 = game.apply(state, action)
        assert game.state_text(state) == before  # apply made a new state
        state = state2


def won_by(spiel: object, action: int) -> bool:
    """Whether ``action`` ends pyspiel's game at once with a positive return for its mover."""
    after = spiel.clone()  # type: ignore[attr-defined]
    after.apply_action(action)
    return bool(after.is_terminal() and after.returns()[spiel.current_player()] > 0)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", SIDE_BY_SIDE)
def test_random_games_agree_with_pyspiel_at_every_ply(name: str) -> None:
    passes = sum(play_side_by_side(name, seed) for seed in range(SIDE_BY_SIDE[name]))
    assert (passes > 0) == (name in ("checkers", "dots_and_boxes", "mancala"))


def test_a_game_of_asp_by_the_protocol_with_a_network_of_its_shape() -> None:
    for name, planes in (("connect_four", (5, 6, 7)), ("oware", None)):
        game = OpenSpielGame(name)
        check_game(game)
        rows = game.encode([game.start(), game.apply(game.start(), 0)])
        net = game.network()
        assert net.cfg.planes == planes and rows.shape == (2, net.cfg.features)
        logits, value = net(rows)
        assert logits.shape == (2, game.action_size) and value.shape == (2,)
        assert rows[0, game.features - 1] == 0 and rows[1, net.cfg.features // 2 :].abs().sum() > 0
        assert type(net)(net.cfg).cfg == net.cfg  # rebuilt in a worker from its cfg
    again = pickle.loads(pickle.dumps(OpenSpielGame("hex(board_size=5)")))
    assert again.name == "openspiel:hex(board_size=5)" and again.action_size == 26


def test_the_wins_in_one_are_given_to_the_search() -> None:
    # Before, the adapter had no winning(): its search found a win in one only by searching,
    # and saw none of the opponent's threats until it had tried the move.
    game = OpenSpielGame("tic_tac_toe")
    assert game.winning(game.parse_state("0 3 1 4")) == [2]  # x takes the top row
    assert game.winning(game.parse_state("0 3 1 4 8")) == [5]  # o's middle row
    assert game.winning(game.parse_state("0 3")) == []
    four = OpenSpielGame("connect_four")
    assert four.winning(four.parse_state("0 1 0 1 0 1")) == [0]
    checkers = OpenSpielGame("checkers")
    state, rng = checkers.start(), random.Random(0)
    while not state.must_pass and checkers.outcome(state) is None:  # up to its first forced pass
        state = checkers.apply(state, rng.choice(checkers.actions(state)))
    assert state.must_pass and checkers.winning(state) == []


SYMMETRIC = {
    "connect_four": (1, 4),
    "tic_tac_toe": (7, 4),
    "othello": (3, 1),
    "breakthrough(rows=5,columns=5)": (1, 3),
    "breakthrough(rows=6,columns=4)": (1, 2),
}
"""The games whose symmetries asp knows: how many it lists, and how many random games check them."""


@pytest.mark.parametrize("name", SYMMETRIC)
def test_a_symmetry_maps_a_game_to_a_game_of_the_same_rules(name: str) -> None:
    # Before, the adapter gave no game a symmetry: its trainer learnt each sample as it was,
    # where asp's own Connect Four learns each through its mirror too.
    game = OpenSpielGame(name)
    listed = game.symmetries()
    count, games = SYMMETRIC[name]
    assert len(listed) == count
    for symmetry in listed:
        assert sorted(symmetry.actions) == list(range(game.action_size))
        assert pickle.loads(pickle.dumps(symmetry)).actions == symmetry.actions  # the trainer's may travel
    rng = random.Random(0)
    for _ in range(games):
        state, images = game.start(), [game.start() for _ in listed]
        while game.outcome(state) is None:
            for symmetry, image in zip(listed, images, strict=True):
                assert sorted(symmetry.actions[a] for a in game.actions(state)) == sorted(game.actions(image))
                assert symmetry.features(game.encode([state])).equal(game.encode([image]))
            action = rng.choice(game.actions(state))
            state = game.apply(state, action)
            images = [game.apply(image, s.actions[action]) for s, image in zip(listed, images, strict=True)]
        assert [game.outcome(image) for image in images] == [game.outcome(state)] * count


def test_a_game_whose_symmetries_asp_does_not_know_has_none() -> None:
    assert OpenSpielGame("hex(board_size=5)").symmetries() == []
    assert OpenSpielGame("clobber").symmetries() == []
    assert OpenSpielGame("nim").symmetries() == []


def test_the_network_sees_the_board_from_the_movers_side() -> None:
    # Before, the network of OpenSpiel's Connect Four saw the first player's stones in the
    # first plane whoever moved (asp's own Connect Four network sees the mover's first).
    game = OpenSpielGame("connect_four")
    assert game.run_defaults()["network"] == {"player_planes": (0, 1), "lines": 4}
    assert OpenSpielGame("tic_tac_toe").run_defaults() == {"network": {"player_planes": (2, 1), "lines": 3}}
    assert OpenSpielGame("breakthrough").run_defaults() == {}  # its observation has no such pair
    torch.manual_seed(0)
    net = game.network(network_config(game, {"player_planes": [0, 1]}))  # a list, as a config file gives it
    plain = game.network(network_config(game, {}))  # a run's config without it: the input as it is
    plain.load_state_dict(net.state_dict())
    assert net.cfg.player_planes == (0, 1) and plain.cfg.player_planes is None
    first, second = game.encode([game.parse_state("3 3"), game.parse_state("3 3 4")])  # x to move, o to move
    movers_view = second.reshape(5, 42).clone()
    movers_view[[0, 1]] = movers_view[[1, 0]]  # o's stones first, then x's
    with torch.no_grad():
        assert torch.equal(net(first.unsqueeze(0))[0], plain(first.unsqueeze(0))[0])  # the first player's as they are
        seen, mover = net(second.unsqueeze(0))[0], plain(movers_view.reshape(1, -1))[0]
        assert torch.equal(seen, mover) and not torch.equal(seen, plain(second.unsqueeze(0))[0])
    for wrong in ((0, 0), (0, 3), [1], "01"):
        with pytest.raises(ConfigError) as raised:
            network_config(game, {"player_planes": wrong})
        said = f"SpielNetConfig.player_planes must be two different planes of the observation, 0 to 2, got {wrong!r}"
        assert str(raised.value) == said


def test_the_network_sees_the_cells_that_complete_a_four_as_asps_own_connect_four() -> None:
    # asp's Connect Four derives them from its encoding (a column after another, the bottom
    # row first), the adapter from OpenSpiel's observation (a row after another): the same cells
    game, own = OpenSpielGame("connect_four"), ConnectFour()
    net = game.network(network_config(game, game.run_defaults()["network"]))
    rng, seen = random.Random(3), 0
    for _ in range(300):
        state, board = game.start(), own.start()
        for _ in range(rng.randrange(30)):
            if game.outcome(state) is not None:
                break
            column = rng.choice(game.actions(state))
            state, board = game.apply(state, column), own.apply(board, column)
        if game.outcome(state) is not None:
            continue
        expected = planes_of(own.encode([board]))[0, 2:4].transpose(1, 2)  # the mover's, the opponent's
        got = net.planes(game.encode([state]))[0, -2:]
        assert torch.equal(got, expected), game.state_text(state)
        seen += int(expected.sum() > 0)
    assert seen > 50


def test_the_network_sees_the_cells_that_complete_a_line_of_tic_tac_toe() -> None:
    game = OpenSpielGame("tic_tac_toe")
    net = game.network(network_config(game, game.run_defaults()["network"]))
    lines = [[(r, c) for c in range(3)] for r in range(3)] + [[(r, c) for r in range(3)] for c in range(3)]
    lines += [[(i, i) for i in range(3)], [(i, 2 - i) for i in range(3)]]
    rng, seen = random.Random(5), 0
    for _ in range(200):
        state = game.start()
        for _ in range(rng.randrange(8)):
            if game.outcome(state) is not None:
                break
            state = game.apply(state, rng.choice(game.actions(state)))
        if game.outcome(state) is not None:
            continue
        mover = state.to_move
        wins = {divmod(a, 3) for a in game.winning(state)}  # pyspiel's own: the mover's stone there wins
        got = net.planes(game.encode([state]))[0, -2:]
        assert {(r, c) for r, c in got[0].nonzero().tolist()} == wins
        observation = state.spiel.observation_tensor(0)  # planes: empty, o (the second player), x
        cells = [(r, c) for r in range(3) for c in range(3)]
        stones = {(r, c): plane for plane in (1, 2) for r, c in cells if observation[9 * plane + 3 * r + c]}
        opponent = 1 if mover == 0 else 2
        threats = {
            cell
            for line in lines
            for cell in line
            if cell not in stones and all(stones.get(other) == opponent for other in line if other != cell)
        }
        assert {(r, c) for r, c in got[1].nonzero().tolist()} == threats, game.state_text(state)
        seen += len(wins) + len(threats)
    assert seen > 20


def test_openspiels_connect_four_runs_as_asps_own_connect_four() -> None:
    ours = OpenSpielGame("connect_four").run_defaults()
    theirs = ConnectFour().run_defaults()
    network = theirs.pop("network")
    assert ours.pop("network") == {"player_planes": (0, 1), "lines": 4}
    assert ours == theirs
    assert (network["tower"], network["hidden"]) == (SpielNetConfig.tower, SpielNetConfig.hidden)  # the same tower
    ours["train"]["epochs"] = 9
    assert OpenSpielGame("connect_four").run_defaults()["train"]["epochs"] == 2  # a copy each call


def test_lines_need_the_players_planes() -> None:
    game = OpenSpielGame("connect_four")
    with pytest.raises(ConfigError) as raised:
        network_config(game, {"lines": 4})
    assert str(raised.value) == (
        "SpielNetConfig.lines 4: the lines are of each player's stones; "
        "they need player_planes, the planes of those stones"
    )
    with pytest.raises(ConfigError, match="SpielNetConfig.lines"):
        network_config(game, {"player_planes": [0, 1], "lines": 1})


def test_the_side_to_move_is_in_the_encoding() -> None:
    game = OpenSpielGame("tic_tac_toe")
    first, second = game.encode([game.start(), game.parse_state("4")])
    area = 9
    assert first[-2 * area :].sum() == 0
    assert second[-2 * area : -area].tolist() == [1.0] * area and second[-area:].sum() == 0


def test_the_forced_pass_in_notation_and_encoding() -> None:
    game = OpenSpielGame("dots_and_boxes")
    # 0 and 6 close no box; 3 (the left edge) ... play until a player moves twice
    state, rng = game.start(), random.Random(0)
    while not state.must_pass:
        state = game.apply(state, rng.choice(game.actions(state)))
    text = game.state_text(state)
    assert game.parse_state(text) == state and "pass" not in text.split()[-1:]
    passed = game.apply(state, game.pass_action)
    assert game.state_text(passed) == text + " pass" and game.parse_state(text + " pass") == passed
    assert game.action_text(state, game.pass_action) == "pass"
    assert game.encode([state])[0, -1] == 1 and game.encode([passed])[0, -1] == 0
    with pytest.raises(ValueError, match="only legal action here is the forced pass"):
        game.apply(state, game.actions(passed)[0])
    assert "moves again" in game.show(state)


def test_notation_reads_numbers_and_names_and_names_what_is_wrong() -> None:
    game = OpenSpielGame("tic_tac_toe")
    assert game.parse_state("x(1,1) O(0,0)") == game.parse_state("4 0")
    with pytest.raises(ValueError, match=r"move 3, '4' is no legal move here; legal: x\(0,1\)"):
        game.parse_state("4 0 4")
    with pytest.raises(ValueError, match=r"move 6, '8': the game is over before it"):
        game.parse_state("0 3 1 4 2 8")
    assert game.parse_action(game.start(), " 8 ") == 8
    go = OpenSpielGame("go(board_size=5)")  # OpenSpiel names go's moves with a space: "B d1"
    start = go.start()
    names = [go.action_text(start, a) for a in go.actions(start)]
    assert names[3] == "B_d1" and all(" " not in name for name in names)
    assert go.parse_action(start, "B d1") == go.parse_action(start, "b_d1") == go.actions(start)[3]
    assert go.state_text(go.parse_state("B_d1 W_a1")) == "3 0"


@pytest.mark.parametrize(
    ("string", "said"),
    [
        ("kuhn_poker", "chance_mode EXPLICIT_STOCHASTIC, information IMPERFECT_INFORMATION"),
        ("matrix_rps", "dynamics SIMULTANEOUS"),
        ("2048", "num_players 1"),
        ("tiny_hanabi", "utility IDENTICAL"),
        ("backgammon", "chance_mode EXPLICIT_STOCHASTIC"),
        ("no_such_game", "OpenSpiel cannot load it"),
        ("hex(board_size=x)", "OpenSpiel cannot load it"),
    ],
)
def test_a_game_asp_cannot_play_is_refused_in_one_line(string: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_game(f"openspiel:{string}")
    message = str(caught.value)
    assert said in message and "\n" not in message and message.startswith(f"--game 'openspiel:{string}'")


def test_the_loader_takes_openspiel_games_without_trust() -> None:
    assert load_game("openspiel:hex(board_size=5)").name == "openspiel:hex(board_size=5)"
    check_named_game("openspiel:connect_four", "run/checkpoint.pt", trusted=False)
    with pytest.raises(ConfigError, match="--vs 'openspiel:tic tac': an OpenSpiel game is openspiel:NAME"):
        load_game("openspiel:tic tac", option="--vs")


def test_mcts_mover_plays_the_win_and_travels_as_its_config() -> None:
    game = OpenSpielGame("connect_four")
    assert list(movers_of(game)) == ["random", "mcts100"]  # what every evaluation plays
    assert game.mover("mcts1000").opponent_name == "mcts1000" and game.mover("mcts1000").cfg.simulations == 1000
    assert game.mover("mctsx") is None and game.mover("mcts") is None
    mover = movers_of(game)["mcts100"]
    assert isinstance(mover, MCTSMover) and mover.opponent_name == "mcts100"
    rebuilt = type(mover)(mover.cfg)
    state = game.parse_state("3 4 3 4 3 4")  # x stacks three in column 3, o in column 4
    assert rebuilt.choose(game, state, random.Random(1)) == 3
    passing = OpenSpielGame("dots_and_boxes")
    state, rng = passing.start(), random.Random(0)
    while not state.must_pass:
        state = passing.apply(state, rng.choice(passing.actions(state)))
    assert MCTSMover(MCTSConfig(10)).choose(passing, state, rng) == passing.pass_action
    with pytest.raises(ConfigError, match="MCTSConfig.simulations must be an int in 1..1000000, got 0"):
        MCTSConfig(0)


def test_asp_eval_plays_mcts_of_any_simulations_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Before, asp eval knew mcts100 only: the yardstick of a trained model, 1,000, was no opponent.
    from run_helpers import kept_checkpoint

    from asp.app.cli import main
    from asp.app.run_config import GameRunConfig

    cfg = GameRunConfig(game="openspiel:tic_tac_toe", eval_search=2, network={"hidden": 8, "tower": 1})
    kept = str(kept_checkpoint(tmp_path / "v000000.pt", cfg, version=0))
    assert main(["eval", kept, "--vs", "mcts1000", "--games", "2", "--search", "2"]) == 0
    assert "against the mcts1000 mover" in capsys.readouterr().out
    assert main(["eval", kept, "--vs", "mcts0", "--games", "2"]) == 2
    assert capsys.readouterr().err.strip() == "asp eval: MCTSConfig.simulations must be an int in 1..1000000, got 0"
    assert main(["eval", kept, "--vs", "mcts-3", "--games", "2"]) == 2
    said = "--vs mcts-3: not an opponent of openspiel:tic_tac_toe; its movers: random, mcts100"
    assert said in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_train_an_openspiel_game_then_eval_moves_show_and_play(tmp_path: Path) -> None:
    spec = "openspiel:breakthrough(rows=5,columns=5)"
    options = ("--iterations", "2", "--games", "8", "--eval-games", "4", "--workers", "2", "--no-progress")
    ok(asp("train", "--game", spec, *options, "--hidden", "16", "--run-dir", "run", cwd=tmp_path))
    run = tmp_path / "run"
    config = json.loads((run / "config.json").read_text())
    assert config["game"] == spec and config["network"] == {"hidden": 16}
    records = [json.loads(line) for line in (run / "games" / "iter-0001.jsonl").read_text().splitlines()]
    assert len(records) == 8 and {r["game"] for r in records} == {spec}
    assert "mcts100" in (run / "metrics.jsonl").read_text()
    assert "score" in ok(asp("eval", str(run), "--games", "4", cwd=tmp_path)).stdout
    (tmp_path / "positions.txt").write_text("\na5a4 a1a2\n")
    moves = ok(asp("moves", str(run), "--positions", "positions.txt", cwd=tmp_path)).stdout.splitlines()
    assert len(moves) == 1 and moves[0].split()[:2] == ["2", "248"], moves  # the position as numbers, then the move
    show = ok(asp("show", str(run / "games" / "iter-0001.jsonl"), cwd=tmp_path)).stdout
    assert "draws no picture" in show or show.strip()
    ok(asp("play", "--checkpoint", str(run), "--games", "2", "--out", "played.jsonl", cwd=tmp_path))
    assert len((tmp_path / "played.jsonl").read_text().splitlines()) == 2
    player = Player.load(run)  # the public way to play a run's model to win, from Python
    state = player.game.parse_state("a5a4")
    assert player.version == 2 and player.search is not None and player.move(state) in player.game.actions(state)
    assert Player.load(run, simulations=0).search is None


def test_a_person_plays_the_model_at_the_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from asp.app.cli import main

    # a bad move, then every cell in turn: those taken are refused, and asked again, to the end
    monkeypatch.setattr("sys.stdin", io.StringIO("9\n" + "".join(f"{cell}\n" for cell in range(9)) * 2))
    assert main(["play", "--game", "openspiel:tic_tac_toe", "--human", "--search", "8"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("openspiel:tic_tac_toe: you play first")
    assert "not a move: '9' is no legal move here; legal: x(0,0)" in out and "asp plays o(" in out
    assert out.strip().splitlines()[-1].split(" (")[0] in ("you won", "you lost", "a draw")
    monkeypatch.setattr("sys.stdin", io.StringIO("quit\n"))
    assert main(["play", "--game", "openspiel:tic_tac_toe", "--human", "second", "--search", "8"]) == 0
    out = capsys.readouterr().out
    assert "asp plays x(" in out and out.strip().endswith("stopped")
    assert main(["play", "--game", "openspiel:tic_tac_toe", "--human", "--games", "3"]) == 2
    assert "--human plays one game at the terminal" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tic_tac_toe", "connect_four", "othello", "hex(board_size=5)", "clobber",
                                  "checkers", "dots_and_boxes", "mancala", "oware", "go(board_size=5)"])  # fmt: skip
def test_every_command_plays_a_checkpoint_of_the_game(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from run_helpers import kept_checkpoint

    from asp.app.cli import main
    from asp.app.run_config import GameRunConfig

    spec = f"openspiel:{name}"
    cfg = GameRunConfig(game=spec, eval_search=4, max_plies=300, network={"hidden": 8, "tower": 1})
    kept = kept_checkpoint(tmp_path / "v000000.pt", cfg, version=0)
    game = load_game(spec)
    after = game.apply(game.start(), game.actions(game.start())[-1])
    (tmp_path / "positions.txt").write_text(game.state_text(after) + "\n")
    assert main(["moves", str(kept), "--positions", str(tmp_path / "positions.txt")]) == 0
    position, move = capsys.readouterr().out.strip().rsplit(" ", 1)
    assert position == game.state_text(after) and game.parse_action(after, move) in game.actions(after)
    assert main(["eval", str(kept), "--vs", "mcts100", "--games", "2", "--search", "2"]) == 0
    assert "against the mcts100 mover" in capsys.readouterr().out
    out = tmp_path / "played.jsonl"
    assert main(["play", "--checkpoint", str(kept), "--games", "2", "--search", "2", "--out", str(out)]) == 0
    assert main(["show", str(out), "--game", "2"]) == 0
    assert "draws no picture" in capsys.readouterr().out
    monkeypatch.setattr(
        "sys.stdin", io.StringIO(f"{game.action_text(game.start(), game.actions(game.start())[0])}\nquit\n")
    )
    assert main(["play", "--checkpoint", str(kept), "--human", "--search", "2"]) == 0
    assert capsys.readouterr().out.strip().endswith("stopped")
