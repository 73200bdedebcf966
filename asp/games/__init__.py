"""Any two-player board game: the game protocol, and what every game shares.

A game implements :class:`Game` (rules, encoding, network, notation, and optional extras such
as winning actions, symmetries and movers); :func:`play_games` plays it in batches, with or
without search, against itself, a network or a :class:`Mover` (:class:`RandomMover`, and
:class:`RolloutMCTSMover`, a tree search with random playouts that needs only the protocol);
:class:`Trainer` learns from its records. None of it knows a particular game or the orchestrator: :class:`asp.SelfPlay`
plays a :class:`PlayConfig` like any other.
"""

from asp.games.mcts import RolloutConfig, RolloutMCTSMover
from asp.games.movers import BaseMover, RandomMover
from asp.games.play import PlayConfig, play_games
from asp.games.protocol import Game, MoveFailed, Mover, Symmetry
from asp.games.records import MODEL, OPPONENT, Record, Samples, summarise
from asp.games.train import TrainConfig, Trainer

__all__ = [
    "MODEL",
    "OPPONENT",
    "BaseMover",
    "Game",
    "MoveFailed",
    "Mover",
    "PlayConfig",
    "RandomMover",
    "Record",
    "RolloutConfig",
    "RolloutMCTSMover",
    "Samples",
    "Symmetry",
    "TrainConfig",
    "Trainer",
    "play_games",
    "summarise",
]
