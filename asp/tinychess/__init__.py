"""TinyChess, asp's default game: chess rules from python-chess and a tiny PyTorch model.

>>> records, stats = play_games(TinyChess(), None, PlayConfig(n_games=2, max_plies=6))
>>> [r.game_id for r in records]
[0, 1]
"""

from asp.tinychess.engine import EngineConfig, EngineOpponent
from asp.tinychess.features import N_FEATURES, encode_boards
from asp.tinychess.model import ModelConfig, TinyChess
from asp.tinychess.moves import POLICY_SIZE, index_move, legal_move_indices, move_index
from asp.tinychess.openings import OPENINGS, match_openings
from asp.tinychess.play import BoardPlayer, PlayConfig, play_games
from asp.tinychess.records import MODEL, OPPONENT, GameRecord, summarise, to_pgn

__all__ = [
    "MODEL",
    "N_FEATURES",
    "OPENINGS",
    "OPPONENT",
    "POLICY_SIZE",
    "BoardPlayer",
    "EngineConfig",
    "EngineOpponent",
    "GameRecord",
    "ModelConfig",
    "PlayConfig",
    "TinyChess",
    "encode_boards",
    "index_move",
    "legal_move_indices",
    "match_openings",
    "move_index",
    "play_games",
    "summarise",
    "to_pgn",
]
