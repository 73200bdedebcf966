"""OpenSpiel's two-player board games on asp's game protocol: ``asp train --game
openspiel:NAME`` (or ``openspiel:NAME(key=value,...)``, OpenSpiel's game string), and
OpenSpiel's MCTS as an opponent. Needs the ``openspiel`` extra (``pip install 'asp[openspiel]'``).

>>> game = OpenSpielGame("connect_four")
>>> game.name, game.action_size
('openspiel:connect_four', 8)
"""

from asp.openspiel.game import OpenSpielGame, SpielState
from asp.openspiel.model import SpielNet, SpielNetConfig
from asp.openspiel.movers import MCTSConfig, MCTSMover

__all__ = ["MCTSConfig", "MCTSMover", "OpenSpielGame", "SpielNet", "SpielNetConfig", "SpielState"]
