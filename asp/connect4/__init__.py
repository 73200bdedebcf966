"""Connect Four, asp's second game: bitboard rules, a small network, the mirror symmetry.

>>> game = ConnectFour()
>>> game.state_text(game.apply(game.start(), 3))
'4'
"""

from asp.connect4.game import ConnectFour, WinBlockMover
from asp.connect4.model import C4Config, C4Net

__all__ = ["C4Config", "C4Net", "ConnectFour", "WinBlockMover"]
