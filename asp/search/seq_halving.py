"""Sequential halving at the root: which visit count the next simulation's action must have.

Gumbel search (Danihelka et al., ICLR 2022) spends ``n`` simulations on ``m`` considered root
actions in ``ceil(log2(m))`` phases, halving the candidates each phase; within a phase every
remaining candidate gets the same number of visits. :func:`considered_visits` gives, for each
simulation in order, the visit count the action to simulate has before it; :func:`rounds`
cuts it into rounds, each of which visits the best-scored of the considered actions with
exactly that many visits, one more time each.

>>> considered_visits(4, 8)
(0, 0, 0, 0, 1, 1, 2, 2)
>>> considered_visits(1, 3)
(0, 1, 2)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

__all__ = ["considered_visits", "rounds"]


@functools.cache
def considered_visits(considered: int, simulations: int) -> tuple[int, ...]:
    """The visit count of the action each of ``simulations`` simulations goes to, with
    ``considered`` root actions."""
    if considered <= 1:
        return tuple(range(simulations))
    phases = math.ceil(math.log2(considered))
    sequence: list[int] = []
    visits = [0] * considered
    left = considered
    while len(sequence) < simulations:
        extra = max(1, simulations // (phases * left))
        for _ in range(extra):
            sequence.extend(visits[:left])
            for i in range(left):
                visits[i] += 1
        left = max(2, left // 2)
    return tuple(sequence[:simulations])


def rounds(schedule: Sequence[int]) -> list[tuple[int, int]]:
    """A sequential-halving schedule (:func:`considered_visits`) cut
    into rounds: ``(visit count, width)`` for each run of equal counts, in order.

    >>> rounds((0, 0, 0, 0, 1, 1, 2, 2))
    [(0, 4), (1, 2), (2, 2)]
    """
    runs: list[tuple[int, int]] = []
    for count in schedule:
        if runs and runs[-1][0] == count:
            runs[-1] = (count, runs[-1][1] + 1)
        else:
            runs.append((count, 1))
    return runs
