"""TinyChess with search: the search's contract in real games, its training targets, and the
orchestrator under its load (a long search is never a stall)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from selfplay_helpers import ids
from test_play import BACK_RANK_FEN, PriorityModel, _mirrored
from torch import nn

from asp import SelfPlay
from asp.games import PlayConfig, play_games
from asp.games.network_search import NetworkSearch
from asp.search import SearchConfig, search
from asp.tinychess import ModelConfig, TinyChess, TinyChessGame

GAME = TinyChessGame()
SMALL = ModelConfig(hidden=16, blocks=0)
SEARCH = SearchConfig(simulations=4, considered=4)


@pytest.mark.parametrize("fen", [BACK_RANK_FEN, _mirrored(BACK_RANK_FEN)])
def test_a_searching_model_always_mates_in_one(fen: str) -> None:
    model = PriorityModel(["a1a2"])  # a policy that would play anything but the mate
    cfg = PlayConfig(GAME, n_games=4, max_plies=3, openings=(fen,), search=SearchConfig(simulations=2))
    records, _ = play_games(model, None, cfg)
    white = fen == BACK_RANK_FEN
    # the result is White's points (TinyChessGame's first player), also when Black moves first
    assert {(tuple(r.moves), r.termination, r.result) for r in records} == {
        (("a1a8",) if white else ("a8a1",), "rules", 1.0 if white else 0.0)
    }


def test_the_targets_are_the_improved_policy_over_the_legal_moves_summing_to_one() -> None:
    """Over every legal move, not only the few the search considered (4 of about 20)."""
    cfg = PlayConfig(GAME, n_games=4, max_plies=16, batch_size=4, search=SEARCH)
    records, stats = play_games(TinyChess(SMALL), None, cfg)
    for record in records:
        data = record.samples
        assert data is not None
        assert data.policy.shape == data.legal.shape
        start = 0
        assert max(data.legal_counts.tolist()) > SEARCH.considered
        for count in data.legal_counts.tolist():
            assert float(data.policy[start : start + count].astype(np.float64).sum()) == pytest.approx(1.0, abs=3e-3)
            start += count
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
    searcher = NetworkSearch(GAME, net)
    positions = [GAME.search_root(GAME.start()) for _ in range(6)]
    search(searcher, positions, SearchConfig(simulations=8), [random.Random(i) for i in range(6)], batch=4)
    assert net.sizes == [4] * 13 + [2]
    assert (searcher.evaluations, searcher.boards) == (14, 54)


@pytest.mark.timeout(120)
@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_move_that_searches_longer_than_the_stall_timeout_is_no_stall() -> None:
    """The search beats per simulation step: a move of many steps keeps its worker alive."""
    cfg = PlayConfig(GAME, n_games=2, max_plies=2, batch_size=2, search=SearchConfig(simulations=400), samples=False)
    async with SelfPlay(workers=1, stall_timeout=0.3, retries=0) as selfplay:
        records, stats = await selfplay.play(TinyChess(), None, cfg)
    assert ids(records) == [0, 1] and stats["retries"] == 0
    assert stats["seconds"] > 0.3  # each move searched for longer than the stall timeout
