"""Completed Q-values and their scale: how Gumbel search turns a node's statistics into logits.

A node's unvisited actions get the *mixed value*: the network's value of the node mixed with
the prior-weighted Q of its visited actions, so an unvisited action counts as about as good as
the node itself. The completed Q-values are rescaled to [0, 1] over the node's actions and
multiplied by ``(c_visit + max visits) * c_scale`` (``sigma`` in the paper); adding them to
the prior logits gives the improved policy's logits. Defaults follow DeepMind's mctx.

>>> completed_q([0.5, 0.0], [1, 0], prior=[0.5, 0.5], value=0.1)
[0.5, 0.3]
>>> [round(x, 3) for x in sigma([0.5, 0.3], [1, 0], c_visit=50, c_scale=0.1)]
[5.1, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["completed_q", "improved_logits", "sigma", "softmax"]


def softmax(logits: Sequence[float]) -> list[float]:
    """The softmax of ``logits`` (plain floats, max-shifted).

    >>> softmax([0.0, 0.0])
    [0.5, 0.5]
    """
    top = max(logits)
    exps = [math.exp(x - top) for x in logits]
    total = sum(exps)
    return [e / total for e in exps]


def completed_q(q: Sequence[float], visits: Sequence[int], *, prior: Sequence[float], value: float) -> list[float]:
    """Each action's Q, the mixed value where it has no visit (all from the node's mover's side)."""
    total = sum(visits)
    if total == 0:
        return [value] * len(q)
    weight = sum(p for p, n in zip(prior, visits, strict=True) if n > 0)
    weighted = sum(p * x for p, x, n in zip(prior, q, visits, strict=True) if n > 0)
    mixed = (value + total * weighted / weight) / (total + 1) if weight > 0 else value
    return [x if n > 0 else mixed for x, n in zip(q, visits, strict=True)]


def sigma(completed: Sequence[float], visits: Sequence[int], *, c_visit: float, c_scale: float) -> list[float]:
    """Completed Q-values rescaled to [0, 1] and scaled by ``(c_visit + max visits) * c_scale``."""
    low, high = min(completed), max(completed)
    scale = (c_visit + max(visits)) * c_scale / max(high - low, 1e-8)
    return [(x - low) * scale for x in completed]


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
    """``logits + sigma(completed_q)`` from a node's children's value sums and visits, in a few
    passes: what :func:`completed_q` and :func:`sigma` give, at the cost the search can afford
    at every node it walks through.

    >>> [round(x, 3) for x in improved_logits([0.0, 0.0], [0.5, 0.5], 0.1, [0.5, 0.0], [1, 0], c_visit=50, c_scale=0.1)]
    [5.1, 0.0]
    """
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
