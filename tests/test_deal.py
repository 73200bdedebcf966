"""deal: a call's first round of batches, one per worker, dealt round-robin shard by shard."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from asp.progress import OFFER_RING
from asp.selfplay.calls import deal, plan_shards, take_batch


@dataclass(frozen=True)
class Cfg:
    n_games: int
    batch_size: int | None = None
    first_game: int = 0


@settings(max_examples=300, deadline=None)
@given(
    n_games=st.integers(1, 3000),
    workers=st.integers(1, 8),
    batch=st.one_of(st.none(), st.integers(1, 512)),
)
def test_the_first_round_holds_the_shards_contiguous_batches_would_hold(
    n_games: int, workers: int, batch: int | None
) -> None:
    """Dealt or contiguous, the first round sends the same games: a call that fits in it is
    played without offers made while it runs, so what each worker plays at once does not
    depend on timing (the runs that resume to the same weights bit for bit need it)."""
    shards, target = plan_shards(Cfg(n_games, batch), workers=workers, shard_games=None)
    groups, rest = deal(shards, workers, target)
    dealt = sorted(s.index for g in groups for s in g)
    assert dealt + [s.index for s in rest] == list(range(len(shards)))  # every shard once, the rest in order
    assert 0 < len(groups) <= workers and all(groups)
    for k, group in enumerate(groups):  # every workers-th shard from the k-th
        assert [s.index for s in group] == list(range(k, k + workers * len(group), workers))
    queue = deque(shards)
    contiguous = [take_batch(queue, target) for _ in range(workers) if queue]
    if workers > 1 and max(map(len, contiguous)) > OFFER_RING:  # a play_fn without batches: 1-game shards
        assert batch is None and all(len(g) == OFFER_RING for g in groups)
    else:
        assert dealt == sorted(s.index for b in contiguous for s in b)


def test_two_workers_share_a_block_of_long_games_at_the_start_of_a_call() -> None:
    """bench_selfplay's uneven workload: 192 games, the first 96 long, batches of 64."""
    shards, target = plan_shards(Cfg(192, 64), workers=2, shard_games=None)
    groups, rest = deal(shards, 2, target)
    long_games = [
        sum(1 for s in g for game in range(s.first_game, s.first_game + s.games) if game < 96) for g in groups
    ]
    assert long_games == [48, 48] and [sum(s.games for s in g) for g in groups] == [64, 64]
    assert sum(s.games for s in rest) == 64
