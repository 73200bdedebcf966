"""plan_offers: how many queued shards each running worker is offered, as plain arithmetic."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from asp.progress import OFFER_RING
from asp.selfplay.offers import FlightCounts, TopUp, plan_offers


def flight(**changes: Any) -> FlightCounts:
    """A running flight whose worker has asked once and taken nothing, with room for many games."""
    fields: dict[str, Any] = {
        "running": True,
        "asked": 1,
        "taken": 0,
        "taken_seen": 0,
        "offered": 0,
        "untaken_games": 0,
        "games": 8,
        "cap": 1000,
    }
    return FlightCounts(**(fields | changes))


def test_the_reserve_is_twice_what_the_worker_took_since_the_last_look() -> None:
    took_three = flight(taken=5, taken_seen=2, offered=5)
    assert plan_offers([took_three], [1] * 20, workers=1) == [TopUp(shards=6, taken_seen=5)]
    # Offers it holds untaken count toward the reserve: two are there, four more are sent.
    holds_two = flight(taken=5, taken_seen=2, offered=7, untaken_games=2)
    assert plan_offers([holds_two], [1] * 20, workers=1) == [TopUp(shards=4, taken_seen=5)]


def test_a_worker_that_asked_is_offered_at_least_one_shard() -> None:
    asked_only = flight(asked=3)
    assert plan_offers([asked_only], [1] * 20, workers=1) == [TopUp(shards=1, taken_seen=0)]
    took_none_since = flight(taken=4, taken_seen=4, offered=4)
    assert plan_offers([took_none_since], [1] * 20, workers=1) == [TopUp(shards=1, taken_seen=4)]
    # Its one untaken offer is its reserve already: nothing more.
    holds_one = flight(taken=4, taken_seen=4, offered=5, untaken_games=1)
    assert plan_offers([holds_one], [1] * 20, workers=1) == [TopUp(shards=0, taken_seen=4)]


def test_the_reserve_stays_within_the_ring_of_offer_cells() -> None:
    fast = flight(taken=100, taken_seen=0, offered=100)
    assert plan_offers([fast], [1] * 100, workers=1) == [TopUp(shards=OFFER_RING - 1, taken_seen=100)]
    assert plan_offers([fast], [1] * 100, workers=1, ring=4) == [TopUp(shards=3, taken_seen=100)]


def test_near_the_end_of_a_call_a_worker_holds_no_more_than_its_share_of_the_games_left() -> None:
    # 6 queued games and 2 held untaken, over 4 workers: a share of 2 games each.
    fast = flight(taken=4, taken_seen=0, offered=5, untaken_games=1)
    plan = plan_offers([fast, fast], [1] * 6, workers=4)
    assert plan == [TopUp(shards=1, taken_seen=4), TopUp(shards=1, taken_seen=4)]  # 4 games left for the others
    # A worker that holds nothing untaken is offered the next shard even when it exceeds its share.
    assert plan_offers([flight()], [8], workers=4) == [TopUp(shards=1, taken_seen=0)]


def test_a_worker_that_never_asked_is_offered_nothing() -> None:
    never_asked = flight(asked=0)
    plan = plan_offers([never_asked, flight()], [3, 5], workers=2)
    assert plan == [TopUp(shards=0, taken_seen=0), TopUp(shards=1, taken_seen=0)]  # the next one gets shard 0


def test_a_flight_that_is_not_running_is_offered_nothing_but_its_untaken_games_count() -> None:
    returning = flight(running=False, taken=3, taken_seen=1, offered=5, untaken_games=2)
    fast = flight(taken=4, taken_seen=0, offered=7, untaken_games=3)
    # 2 queued games and 5 held untaken, over 2 workers: a share of 4, so fast takes one more.
    plan = plan_offers([returning, fast], [1, 1], workers=2)
    assert plan == [TopUp(shards=0, taken_seen=1), TopUp(shards=1, taken_seen=4)]
    # Without the other flight's untaken games its share is 3, which it holds already.
    assert plan_offers([fast], [1, 1], workers=2) == [TopUp(shards=0, taken_seen=4)]


def test_a_flight_holds_no_more_games_than_its_cap() -> None:
    near_cap = flight(taken=4, taken_seen=0, offered=4, games=10, cap=13)
    assert plan_offers([near_cap], [2] * 5, workers=1) == [TopUp(shards=1, taken_seen=4)]
    assert plan_offers([near_cap], [4, 1], workers=1) == [TopUp(shards=0, taken_seen=4)]  # in queue order


def test_flights_take_the_queue_in_order() -> None:
    took_one = flight(taken=1, offered=1)
    plan = plan_offers([took_one, took_one, took_one], [1, 1, 1], workers=1)
    assert plan == [TopUp(shards=2, taken_seen=1), TopUp(shards=1, taken_seen=1), TopUp(shards=0, taken_seen=1)]


counts = st.builds(
    FlightCounts,
    running=st.booleans(),
    asked=st.integers(0, 3),
    taken=st.integers(0, 20),
    taken_seen=st.integers(0, 20),
    offered=st.integers(0, 24),
    untaken_games=st.integers(0, 30),
    games=st.integers(1, 60),
    cap=st.integers(1, 80),
)


@settings(max_examples=200, deadline=None)
@given(flights=st.lists(counts, max_size=5), queue=st.lists(st.integers(1, 8), max_size=30), workers=st.integers(1, 6))
def test_offers_stay_within_the_queue_the_cap_and_the_ring(
    flights: list[FlightCounts], queue: list[int], workers: int
) -> None:
    plan = plan_offers(flights, queue, workers=workers)
    assert len(plan) == len(flights)
    assert sum(top_up.shards for top_up in plan) <= len(queue)
    first = 0
    for counts, top_up in zip(flights, plan, strict=True):
        offered = queue[first : first + top_up.shards]
        first += top_up.shards
        if not counts.running or counts.asked == counts.taken == 0:
            assert top_up == TopUp(shards=0, taken_seen=counts.taken_seen)
            continue
        assert top_up.taken_seen == counts.taken
        assert counts.games + sum(offered) <= max(counts.cap, counts.games)
        assert counts.offered + top_up.shards - counts.taken <= max(OFFER_RING - 1, counts.offered - counts.taken)
