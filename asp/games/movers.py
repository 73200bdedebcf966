"""Movers: :class:`BaseMover`, what a mover is to asp's workers, and the uniformly random
mover every game has, the bottom rung of evaluation.

A mover (:class:`~asp.games.Mover`) chooses its moves from the rules alone, and travels to
asp's workers as a network would: an :class:`torch.nn.Module` without weights, rebuilt there
as ``type(mover)()`` (or ``type(mover)(mover.cfg)`` where it keeps settings in ``cfg``).
Subclass :class:`BaseMover`, name it and write its ``choose``:

>>> import random
>>> from asp.connect4 import ConnectFour
>>> from asp.games import Mover
>>> class Leftmost(BaseMover):
...     opponent_name = "leftmost"
...     def choose(self, game, state, rng):
...         return min(game.actions(state))
>>> game = ConnectFour()
>>> Leftmost().choose(game, game.start(), random.Random(0)), isinstance(Leftmost(), Mover)
(0, True)
>>> RandomMover().choose(game, game.start(), random.Random(0)) in range(7)
True
"""

from __future__ import annotations

import random
from typing import Any, cast

import torch
from torch import nn

from asp.games.checked import legal_actions
from asp.games.protocol import Game, Mover

__all__ = ["BaseMover", "RandomMover", "mover_named", "movers_of"]


class BaseMover(nn.Module):
    """A base for :class:`~asp.games.Mover` classes: a module without weights or a forward
    pass, rebuilt in a worker as ``type(mover)()`` (``cfg`` None) or ``type(mover)(cfg)``."""

    cfg: Any = None
    """Its settings, from which a worker rebuilds it (None: it has none)."""
    opponent_name: str = "mover"
    """Who it is: the records' ``opponent_name``."""

    def choose(self, game: Any, state: Any, rng: random.Random) -> int:
        """A legal action of ``state``; ``rng`` is the game's own random stream."""
        raise NotImplementedError(f"{type(self).__name__} must define choose(game, state, rng)")

    def forward(self, features: torch.Tensor) -> Any:
        raise TypeError(f"{type(self).__name__} is a mover: it chooses its moves with choose(); it has no forward pass")


class RandomMover(BaseMover):
    """Plays a legal action chosen uniformly at random."""

    opponent_name = "random"

    def choose(self, game: Any, state: Any, rng: random.Random) -> int:
        actions = legal_actions(game, state)
        return int(actions[rng.randrange(len(actions))])


def movers_of(game: Game[Any]) -> dict[str, Mover]:
    """The simple movers of ``game`` by name: ``random`` first, the uniformly random mover
    every game has, then ``game.movers()`` where the game has them (its own ``random``, if
    it has one, takes asp's place).

    >>> from asp.connect4 import ConnectFour
    >>> ConnectFour().movers().keys(), movers_of(ConnectFour()).keys()
    (dict_keys(['winblock', 'lookahead']), dict_keys(['random', 'winblock', 'lookahead']))
    """
    listed = getattr(game, "movers", None)
    return {"random": RandomMover(), **({} if listed is None else dict(listed()))}


def mover_named(game: Game[Any], name: str) -> Mover | None:
    """The mover ``name`` of ``game``: one of :func:`movers_of`, else the game's ``mover(name)``
    (a mover by a name its ``movers()`` do not list), else None.

    >>> from asp.connect4 import ConnectFour
    >>> mover_named(ConnectFour(), "winblock").opponent_name, mover_named(ConnectFour(), "nobody")
    ('winblock', None)
    """
    listed = movers_of(game)
    if name in listed:
        return listed[name]
    make = getattr(game, "mover", None)
    return None if make is None else cast("Mover | None", make(name))
