"""Batched play of any game (asp.games.play): legal, reproducible games with sane records and
samples, against itself, a network or a mover, with or without search, in this process and
in worker processes."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import pytest
import torch

from asp import SelfPlay
from asp.connect4 import ConnectFour, WinBlockMover, rules
from asp.errors import ConfigError
from asp.games import MODEL, OPPONENT, BaseMover, MoveFailed, Mover, PlayConfig, RandomMover, Record, play_games
from asp.search import SearchConfig
from asp.tinychess import GreedyChessMover

GAME = ConnectFour()


def replay(record: Record) -> rules.Board:
    """The final position of ``record``, checking every move was legal on the way."""
    board = GAME.parse_state(record.start)
    for action, move in zip(record.actions, record.moves, strict=True):
        assert action in rules.legal_columns(board)
        assert move == str(action + 1)
        board = rules.play(board, action)
    return board


def fresh_net(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return GAME.network()


@pytest.mark.parametrize("search", [None, SearchConfig(8, 7)], ids=["policy", "search"])
def test_self_play_games_are_legal_and_end_as_the_rules_say(search: SearchConfig | None) -> None:
    records, stats = play_games(fresh_net(), None, PlayConfig(GAME, n_games=12, batch_size=5, search=search))
    assert [r.game_id for r in records] == list(range(12)) and stats["games"] == 12
    for record in records:
        board = replay(record)
        assert record.first == record.second == MODEL and record.model_score() is None
        assert record.termination == "rules"
        if rules.won(board):  # the last mover won: the first player's points say who that was
            assert record.result == (1.0 if len(record.actions) % 2 == 1 else 0.0)
        else:
            assert rules.is_over(board) and record.result == 0.5
    assert stats["plies"] == sum(len(r.actions) for r in records)
    if search is not None:
        assert stats["search/evaluations"] > 0 and stats["search/boards"] >= stats["search/evaluations"]


@pytest.mark.parametrize("search", [None, SearchConfig(8, 7)], ids=["policy", "search"])
def test_samples_hold_every_ply_of_the_model_with_a_policy_target_over_its_legal_actions(
    search: SearchConfig | None,
) -> None:
    (record,) = play_games(fresh_net(), None, PlayConfig(GAME, n_games=1, search=search))[0]
    samples = record.samples
    assert samples is not None
    plies = len(record.actions)
    assert samples.plies.tolist() == list(range(plies))
    assert samples.movers.tolist() == [p % 2 for p in range(plies)]
    board = GAME.start()
    start = 0
    for ply, action in enumerate(record.actions):
        count = int(samples.legal_counts[ply])
        legal = samples.legal[start : start + count].tolist()
        policy = samples.policy[start : start + count]
        assert legal == rules.legal_columns(board)
        assert torch.equal(torch.from_numpy(samples.features[ply]), GAME.encode([board])[0])
        assert policy.sum() == pytest.approx(1.0, abs=1e-5)
        if search is None:  # the target is the action played
            assert policy[legal.index(action)] == 1.0
        start += count
        board = rules.play(board, action)
    assert start == len(samples.legal)


def test_playout_cap_randomisation_keeps_only_the_moves_of_full_searches() -> None:
    full, quick = SearchConfig(8, 7), SearchConfig(1, 1)
    cfg = PlayConfig(GAME, n_games=12, seed=5, search=full, fast_search=quick, full_search_share=0.25, max_plies=16)
    records, stats = play_games(fresh_net(), None, cfg)
    plies = sum(len(r.actions) for r in records)
    kept = sum(len(r.samples.plies) for r in records if r.samples is not None)
    assert 0.15 * plies < kept < 0.4 * plies  # about a quarter of the moves
    for record in records:
        assert replay(record) is not None
        assert record.samples is not None
        assert len(record.samples.values) == len(record.samples.plies) == len(record.samples.legal_counts)
    # the other moves were searched with one simulation: far fewer boards a move than full searches
    _, all_full = play_games(fresh_net(), None, dataclasses.replace(cfg, fast_search=None))
    assert stats["search/boards"] / plies < 0.6 * all_full["search/boards"] / all_full["plies"]
    # the draws come from each game's own stream: the same games in any batch
    again, _ = play_games(fresh_net(), None, dataclasses.replace(cfg, batch_size=5))
    assert [r.actions for r in again] == [r.actions for r in records]


def test_the_first_sample_plies_are_drawn_from_the_improved_policy() -> None:
    cfg = PlayConfig(GAME, n_games=12, seed=2, search=SearchConfig(8, 7), max_plies=4)
    chosen, _ = play_games(fresh_net(), None, cfg)
    drawn, _ = play_games(fresh_net(), None, dataclasses.replace(cfg, sample_plies=4))
    # an untrained network's search chooses alike in most games; draws from its policy vary
    assert len({tuple(r.actions[:4]) for r in drawn}) > len({tuple(r.actions[:4]) for r in chosen})
    for record in drawn:
        assert replay(record) is not None and record.samples is not None
        start = 0
        for ply, action in enumerate(record.actions[:4]):
            count = int(record.samples.legal_counts[ply])
            legal = record.samples.legal[start : start + count].tolist()
            assert record.samples.policy[start + legal.index(action)] > 0  # a move the policy allows
            start += count
    again, _ = play_games(fresh_net(), None, dataclasses.replace(cfg, sample_plies=4, batch_size=3))
    assert [r.actions for r in again] == [r.actions for r in drawn]


@pytest.mark.slow
def test_a_game_is_the_same_whatever_the_batch_or_the_call_that_plays_it() -> None:
    net = fresh_net()
    cfg = PlayConfig(GAME, n_games=10, seed=7, search=SearchConfig(6, 7))
    whole, _ = play_games(net, None, cfg)
    parts = [
        play_games(net, None, dataclasses.replace(cfg, first_game=first, n_games=n, batch_size=batch))[0]
        for first, n, batch in ((0, 3, 1), (3, 7, 4))
    ]
    assert [r.actions for r in whole] == [r.actions for part in parts for r in part]


def test_against_an_opponent_the_model_moves_first_in_even_games_and_is_scored() -> None:
    cfg = PlayConfig(GAME, n_games=20, temperature=0, samples=False, search=SearchConfig(16, 7, gumbel_scale=0))
    records, stats = play_games(fresh_net(), RandomMover(), cfg)
    for record in records:
        assert (record.first, record.second) == ((MODEL, OPPONENT) if record.game_id % 2 == 0 else (OPPONENT, MODEL))
        assert record.opponent_name == "random" and record.opponent_version == 0 and record.samples is None
        replay(record)
    assert stats["score"] == pytest.approx(np.mean([r.model_score() for r in records]))
    assert stats["score"] > 0.8  # a search that sees immediate wins beats a random mover


class _FailsAtThirdStone(RandomMover):
    """A random mover that cannot move once three stones are down (as an engine that crashed):
    in the games the model begins (even ids), it fails at its second move."""

    def choose(self, game: Any, state: Any, rng: random.Random) -> int:
        if len(game.state_text(state)) == 3:
            raise MoveFailed("lost its way")
        return super().choose(game, state, rng)


def test_a_game_its_mover_fails_in_ends_there_unscored_and_the_others_go_on(logs: list[dict[str, Any]]) -> None:
    from asp.app.evaluation.elo import match_result_of

    cfg = PlayConfig(GAME, n_games=6, samples=False)
    records, stats = play_games(fresh_net(), _FailsAtThirdStone(), cfg)
    assert [r.termination == "mover_failure" for r in records] == [True, False] * 3
    for record in records[::2]:
        assert len(record.actions) == 3 and record.model_score() is None and record.failed
    assert all(r.termination == "rules" and r.model_score() is not None for r in records[1::2])
    assert stats["results"]["*"] == 3 and sum(stats["results"].values()) == 6
    assert [(e["game_id"], e["ply"], e["error"]) for e in logs if e["event"] == "mover_failed"] == [
        (0, 3, "lost its way"), (2, 3, "lost its way"), (4, 3, "lost its way")
    ]  # fmt: skip
    result = match_result_of(records)
    assert (result.engine_failures, result.games) == (3, 3)


def test_a_mover_that_raises_anything_else_fails_the_call() -> None:
    class Broken(RandomMover):
        def choose(self, game: Any, state: Any, rng: random.Random) -> int:
            raise RuntimeError("no rules")

    with pytest.raises(RuntimeError, match="no rules"):
        play_games(fresh_net(), Broken(), PlayConfig(GAME, n_games=2, samples=False))


def test_the_win_block_mover_wins_and_blocks_at_once() -> None:
    mover = WinBlockMover()
    import random

    rng = random.Random(0)
    assert mover.choose(GAME, GAME.parse_state("445566"), rng) in (2, 6)  # wins, either side
    assert mover.choose(GAME, GAME.parse_state("4455661"), rng) in (2, 6)  # blocks one side at least
    assert mover.choose(GAME, GAME.parse_state("1212"), rng) == 0  # blocks the column


class _Leftmost(BaseMover):
    """A mover of one's own: the leftmost legal column."""

    opponent_name = "leftmost"

    def choose(self, game: Any, state: Any, rng: random.Random) -> int:
        return min(game.actions(state))


def test_a_mover_of_ones_own_needs_a_name_and_a_choice() -> None:
    records, _ = play_games(fresh_net(), _Leftmost(), PlayConfig(GAME, n_games=2))
    assert [r.opponent_name for r in records] == ["leftmost", "leftmost"]
    assert records[1].first == OPPONENT and records[1].actions[0] == 0  # the opponent opened
    for mover in (_Leftmost(), RandomMover(), WinBlockMover(), GreedyChessMover()):
        assert isinstance(mover, Mover) and mover.cfg is None and not list(mover.parameters())
        with pytest.raises(TypeError, match=f"{type(mover).__name__} is a mover"):
            mover(torch.zeros(1, 3))


class _CountsWinning(ConnectFour):
    """Connect Four that counts the calls of ``winning``, and those at a finished position."""

    def __init__(self) -> None:
        self.asked = 0
        self.finished = 0

    def winning(self, state: Any) -> list[int]:
        self.asked += 1
        self.finished += rules.value(state) is not None
        return super().winning(state)


def test_play_asks_for_the_winning_actions_only_where_it_uses_them() -> None:
    # A game whose winning actions cost time to find (chess: its mates in one) is asked for
    # them by a search and by take_wins alone, and never at a position whose game is over.
    game = _CountsWinning()
    plain, _ = play_games(fresh_net(), None, PlayConfig(game, n_games=6))
    assert game.asked == 0 and {r.termination for r in plain} == {"rules"}
    assert [r.actions for r in plain] == [
        r.actions for r in play_games(fresh_net(), None, PlayConfig(GAME, n_games=6))[0]
    ]
    play_games(fresh_net(), None, PlayConfig(game, n_games=6, take_wins=True))
    assert game.asked > 0
    asked = game.asked
    play_games(fresh_net(), None, PlayConfig(game, n_games=6, search=SearchConfig(4)))
    assert game.asked > asked and game.finished == 0


def test_a_game_cut_at_max_plies_is_a_draw() -> None:
    records, stats = play_games(fresh_net(), None, PlayConfig(GAME, n_games=3, max_plies=5))
    assert [len(r.actions) for r in records] == [5, 5, 5]
    assert {r.termination for r in records} == {"max_plies"} and {r.result for r in records} == {0.5}


def test_games_start_from_the_openings_given() -> None:
    records, _ = play_games(fresh_net(), None, PlayConfig(GAME, n_games=4, openings=("44", "1234")))
    assert [r.start for r in records] == ["44", "1234", "44", "1234"]
    for record in records:
        board = replay(record)
        assert rules.to_columns(board).startswith(record.start)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("n_games", -1, "PlayConfig.n_games must be an int in 0..1000000000, got -1"),
        ("batch_size", 0, "PlayConfig.batch_size must be an int in 1..4096, got 0"),
        ("temperature", -1.0, "PlayConfig.temperature"),
        ("search", 8, "PlayConfig.search must be a SearchConfig or None, got 8"),
        ("fast_search", SearchConfig(2), "PlayConfig.fast_search needs PlayConfig.search"),
        ("full_search_share", 0.0, "PlayConfig.full_search_share"),
        ("sample_plies", -1, "PlayConfig.sample_plies must be an int in 0..100000, got -1"),
        ("openings", ("48",), "PlayConfig.openings[0]: move 2: '8' is not a column 1-7"),
        ("openings", ("4455667",), "PlayConfig.openings[0]: '4455667' is a finished game"),
        ("openings", "445566", "PlayConfig.openings must be a tuple of positions in the game's notation, got '445566'"),
        ("openings", ("44", 42), "PlayConfig.openings[1] must be a position in the game's notation (a str), got 42"),
        ("game", "connect4", "PlayConfig.game must be a Game (asp.games.Game), got 'connect4'"),
    ],
)
def test_a_bad_field_is_refused_by_name(field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        PlayConfig(**{"game": GAME, field: value})  # type: ignore[arg-type]
    assert message in str(raised.value)


class _CountingConnectFour(ConnectFour):
    """Connect Four that counts the positions it reads from text."""

    def __init__(self) -> None:
        super().__init__()
        self.parsed = 0

    def parse_state(self, text: str) -> Any:
        self.parsed += 1
        return super().parse_state(text)


def test_the_openings_are_checked_once_however_often_the_config_is_copied() -> None:
    """The coordinator copies a cfg for every shard (dataclasses.replace, so __post_init__
    again): the openings, one per game id in bench_selfplay's workload, are parsed once."""
    game = _CountingConnectFour()
    openings = tuple(f"{a}{b}" for a in range(1, 8) for b in range(1, 8))
    cfg = PlayConfig(game, n_games=49, openings=openings)
    copies = [dataclasses.replace(cfg, first_game=i, n_games=1) for i in range(24)]
    assert game.parsed == len(openings)
    assert [c.openings for c in copies] == [openings] * 24
    with pytest.raises(ConfigError, match="is a finished game"):  # a failed check is not remembered
        dataclasses.replace(cfg, openings=(*openings, "4455667"))
    with pytest.raises(ConfigError, match="is a finished game"):
        dataclasses.replace(cfg, openings=(*openings, "4455667"))


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.asyncio
async def test_worker_processes_play_the_games_this_process_plays() -> None:
    """The game travels to the workers in the config; the records come back the same."""
    net = fresh_net()
    cfg = PlayConfig(GAME, n_games=16, seed=3, search=SearchConfig(6, 7), samples=False)
    here, _ = play_games(net, WinBlockMover(), cfg)
    async with SelfPlay(workers=2) as selfplay:
        there, stats = await selfplay.play(net, WinBlockMover(), cfg)
    assert [r.actions for r in there] == [r.actions for r in here]
    assert [r.result for r in there] == [r.result for r in here]
    assert stats["games"] == 16 and {r.opponent_name for r in there} == {"winblock"}


def test_varied_random_plies_give_each_pair_of_games_its_own_count_up_to_the_most() -> None:
    cfg = PlayConfig(GAME, n_games=40, seed=4, random_plies=3, vary_random_plies=True, max_plies=2, samples=False)
    records, _ = play_games(fresh_net(), None, cfg)
    counts = [len(GAME.parse_state(r.start).moves) for r in records]
    assert counts[0::2] == counts[1::2]  # a pair shares its start
    assert set(counts) == {0, 1, 2, 3}
    assert all(len(r.actions) == 2 for r in records)  # the random plies are not the record's
