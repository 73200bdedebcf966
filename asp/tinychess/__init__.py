"""TinyChess, asp's default game: chess rules from python-chess and a tiny PyTorch model.

:class:`TinyChessGame` is the game (an :class:`asp.games.Game`): asp's generic play loop,
search, trainer and evaluator play it like any other.

>>> from asp.games import PlayConfig, play_games
>>> game = TinyChessGame()
>>> records, stats = play_games(game.network(), None, PlayConfig(game, n_games=2, max_plies=6))
>>> [r.game_id for r in records], records[0].start == game.state_text(game.start())
([0, 1], True)
"""

from asp.tinychess.engine import EngineConfig, EngineOpponent
from asp.tinychess.features import N_FEATURES, encode_boards
from asp.tinychess.game import TinyChessGame
from asp.tinychess.model import ModelConfig, TinyChess
from asp.tinychess.moves import POLICY_SIZE, index_move, legal_move_indices, move_index
from asp.tinychess.openings import OPENINGS
from asp.tinychess.opponents import GreedyChessMover
from asp.tinychess.pgn import to_pgn

__all__ = [
    "N_FEATURES",
    "OPENINGS",
    "POLICY_SIZE",
    "EngineConfig",
    "EngineOpponent",
    "GreedyChessMover",
    "ModelConfig",
    "TinyChess",
    "TinyChessGame",
    "encode_boards",
    "index_move",
    "legal_move_indices",
    "move_index",
    "to_pgn",
]
