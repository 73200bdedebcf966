"""TinyChess with search: the search's contract in real games, its training targets, and the
orchestrator under its load (a long search is never a stall)."""

from __future__ import annotations

import dataclasses
import math
import random

import chess
import numpy as np
import pytest
import torch
from selfplay_helpers import ids
from test_play import BACK_RANK_FEN, PriorityModel, _mirrored
from torch import nn

from asp import SelfPlay
from asp.search import SearchConfig, search
from asp.tinychess import ModelConfig, PlayConfig, TinyChess, play_games
from asp.tinychess.chess_search import ChessSearch, Position
from asp.tinychess.features import placement_key
from asp.tinychess.moves import move_index

SMALL = ModelConfig(hidden=16, blocks=0)
SEARCH = SearchConfig(simulations=4, considered=4)


def searched(n_games: int = 4, **fields: object) -> PlayConfig:
    return PlayConfig(n_games=n_games, max_plies=16, batch_size=4, search=SEARCH, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("fen", [BACK_RANK_FEN, _mirrored(BACK_RANK_FEN)])
def test_a_searching_model_always_mates_in_one(fen: str) -> None:
    model = PriorityModel(["a1a2"])  # a policy that would play anything but the mate
    cfg = PlayConfig(n_games=4, max_plies=3, openings=(fen,), search=SearchConfig(simulations=2))
    records, _ = play_games(model, None, cfg)
    white = fen == BACK_RANK_FEN
    assert {(r.moves[0], r.termination, r.result) for r in records} == {
        ("a1a8" if white else "a8a1", "checkmate", "1-0" if white else "0-1")
    }


def test_the_targets_are_the_improved_policy_over_the_legal_moves_summing_to_one() -> None:
    records, stats = play_games(TinyChess(SMALL), None, searched())
    for record in records:
        data = record.samples
        assert data is not None and data.policy is not None
        assert data.policy.shape == data.legal.shape
        start = 0
        for count in data.legal_counts.tolist():
            assert float(data.policy[start : start + count].astype(np.float64).sum()) == pytest.approx(1.0, abs=3e-3)
            start += count
        # the move played is one the search could play, and its log-probability is the target's
        for k, (ply, action) in enumerate(zip(data.plies.tolist(), data.actions.tolist(), strict=True)):
            assert math.isfinite(record.logprobs[ply]), (k, ply, action)
    # a step's leaves of every game in flight share the network's calls
    assert stats["search/boards"] / stats["search/evaluations"] > 1


class Sizes(nn.Module):
    """A network that notes how many boards each call brings."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net
        self.sizes: list[int] = []

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.sizes.append(len(x))
        out: tuple[torch.Tensor, torch.Tensor] = self.net(x)
        return out


def test_the_waiting_boards_go_to_the_network_in_full_calls_of_the_batch() -> None:
    """6 positions, 8 simulations over 16 considered moves, calls of 4 boards: the roots
    and the 48 leaves of their one round fill every call but the last."""
    net = Sizes(TinyChess(SMALL))
    searcher = ChessSearch(net)
    positions = [Position(chess.Board()) for _ in range(6)]
    search(searcher, positions, SearchConfig(simulations=8), [random.Random(i) for i in range(6)], batch=4)
    assert net.sizes == [4] * 13 + [2]
    assert (searcher.evaluations, searcher.boards) == (14, 54)


def test_a_game_searches_the_same_whichever_batch_plays_it() -> None:
    torch.manual_seed(0)
    model = TinyChess(SMALL)
    together, _ = play_games(model, None, searched(n_games=6))
    alone, _ = play_games(model, None, dataclasses.replace(searched(n_games=1), first_game=3, batch_size=1))
    assert together[3].moves == alone[0].moves


def _walk(game: ChessSearch, root: Position, *ucis: str) -> Position:
    position = root
    for uci in ucis:
        game.actions(position)
        position = game.apply(position, move_index(chess.Move.from_uci(uci), position.board.turn))
    return position


def test_a_position_repeated_inside_the_tree_or_from_the_game_is_a_draw() -> None:
    game = ChessSearch(TinyChess(SMALL))
    root = Position(chess.Board())
    back = _walk(game, root, "g1f3", "g8f6", "f3g1", "f6g8")  # the root's position again
    assert game.status(back).value == 0.0
    assert game.status(back.parent.parent).value is None  # type: ignore[union-attr]  # not seen before
    after_e4 = chess.Board()
    after_e4.push_uci("e2e4")
    seen = Position(chess.Board(), history={placement_key(after_e4): 1})
    assert game.status(_walk(game, seen, "e2e4")).value == 0.0  # the game was there before
    assert game.status(_walk(game, seen, "d2d4")).value is None
    assert game.status(Position(after_e4, history={placement_key(after_e4): 2})).value is None  # a root is searched


@pytest.mark.timeout(120)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_move_that_searches_longer_than_the_stall_timeout_is_no_stall() -> None:
    """The search beats per simulation step: a move of many steps keeps its worker alive."""
    cfg = PlayConfig(n_games=2, max_plies=2, batch_size=2, search=SearchConfig(simulations=400), samples=False)
    async with SelfPlay(workers=1, stall_timeout=0.3, retries=0) as selfplay:
        records, stats = await selfplay.play(TinyChess(), None, cfg)
    assert ids(records) == [0, 1] and stats["retries"] == 0
    assert stats["seconds"] > 0.3  # each move searched for longer than the stall timeout


def test_search_settings_are_checked() -> None:
    with pytest.raises(Exception, match="PlayConfig.search"):
        PlayConfig(search=8)  # type: ignore[arg-type]
    assert chess.Board(BACK_RANK_FEN).is_valid()
