"""Completed Q-values and their scale: how Gumbel search turns a node's statistics into logits.

A node's unvisited actions get the *mixed value*: the network's value of the node mixed with
the prior-weighted Q of its visited actions, so an unvisited action counts as about as good as
the node itself. The completed Q-values are rescaled to [0, 1] over the node's actions and
multiplied by ``(c_visit + max visits) * c_scale`` (``sigma`` in the paper); adding them to
the prior logits gives the improved policy's logits. Defaults follow DeepMind's mctx.

With the prior [0.5, 0.5] and the node's value 0.1, one visit of the first action (Q 0.5)
makes the second's completed Q the mixed value (0.1 + 1 * 0.5) / 2 = 0.3; rescaled, they are
1 and 0, and sigma gives the first (50 + 1) * 0.1 = 5.1:

>>> [round(x, 3) for x in improved_logits([0.0, 0.0], [0.5, 0.5], 0.1, [0.5, 0.0], [1, 0], c_visit=50, c_scale=0.1)]
[5.1, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["improved_logits", "softmax"]


def softmax(logits: Sequence[float]) -> list[float]:
    """The softmax of ``logits`` (plain floats, max-shifted).

    >>> softmax([0.0, 0.0])
    [0.5, 0.5]
    """
    top = max(logits)
    exps = [math.exp(x - top) for x in logits]
    total = sum(exps)
    return [e / total for e in exps]


def improved_logits(
    logits: Sequence[float],
    prior: Sequence[float],
    value: float,
    totals: Sequence[float],
    visits: Sequence[int],
    *,
    c_visit: float,
    c_scale: float,
) -> Sequence[float]:
    """``logits + sigma(completed Q)`` of a node, from its children's value sums and visits
    (all from the node's mover's side), in a few passes: the search computes it at every node
    it walks through. Before any visit every completed Q is the node's value and ``logits``
    come back as they are."""
    total = 0
    weight = weighted = 0.0
    most = 0
    for p, t, n in zip(prior, totals, visits, strict=True):
        if n:
            total += n
            weight += p
            weighted += p * t / n
            if n > most:
                most = n
    if total == 0:
        return logits  # every completed Q is the node's value: sigma is 0 everywhere
    mixed = (value + total * weighted / weight) / (total + 1) if weight > 0 else value
    q = [t / n if n else mixed for t, n in zip(totals, visits, strict=True)]
    low = min(q)
    scale = (c_visit + most) * c_scale / max(max(q) - low, 1e-8)
    return [logit + (x - low) * scale for logit, x in zip(logits, q, strict=True)]
