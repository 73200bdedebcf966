"""A small bundled opening set: TinyChessGame's openings (:meth:`~asp.tinychess.game.TinyChessGame.openings`).

Ten main lines of common openings, four or five moves deep, White to move in each; Stockfish
15.1 at depth 16 rates all of them between +0.2 and +0.6 pawns for White (the usual edge of
the first move). Games that start from them are not repeats, even between greedy players.

Matches between players that play to win start from them, each opening twice in a row so
that games ``2k`` and ``2k + 1`` play it with both colours
(:func:`asp.app.run_config.match_starts`).

>>> len(OPENINGS), OPENINGS[0]
(10, 'r1bqkb1r/1ppp1ppp/p1n2n2/4p3/B3P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 2 5')
"""

from __future__ import annotations

__all__ = ["OPENINGS", "OPENING_LINES"]

OPENING_LINES: tuple[tuple[str, str], ...] = (
    ("Ruy Lopez, Morphy Defence", "e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6"),
    ("Italian Game, Giuoco Piano", "e4 e5 Nf3 Nc6 Bc4 Bc5 c3 Nf6"),
    ("Sicilian Defence, Najdorf", "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6"),
    ("French Defence, Classical", "e4 e6 d4 d5 Nc3 Nf6"),
    ("Caro-Kann Defence, Classical", "e4 c6 d4 d5 Nc3 dxe4 Nxe4 Bf5"),
    ("Queen's Gambit Declined", "d4 d5 c4 e6 Nc3 Nf6 Bg5 Be7"),
    ("Slav Defence", "d4 d5 c4 c6 Nf3 Nf6 Nc3 dxc4"),
    ("King's Indian Defence", "d4 Nf6 c4 g6 Nc3 Bg7 e4 d6"),
    ("Nimzo-Indian Defence", "d4 Nf6 c4 e6 Nc3 Bb4 e3 O-O"),
    ("English Opening, Four Knights", "c4 e5 Nc3 Nf6 Nf3 Nc6 g3 d5"),
)
"""Name and moves (SAN, from the initial position) of each opening of :data:`OPENINGS`."""

OPENINGS: tuple[str, ...] = (
    "r1bqkb1r/1ppp1ppp/p1n2n2/4p3/B3P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 2 5",
    "r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/2P2N2/PP1P1PPP/RNBQK2R w KQkq - 1 5",
    "rnbqkb1r/1p2pppp/p2p1n2/8/3NP3/2N5/PPP2PPP/R1BQKB1R w KQkq - 0 6",
    "rnbqkb1r/ppp2ppp/4pn2/3p4/3PP3/2N5/PPP2PPP/R1BQKBNR w KQkq - 2 4",
    "rn1qkbnr/pp2pppp/2p5/5b2/3PN3/8/PPP2PPP/R1BQKBNR w KQkq - 1 5",
    "rnbqk2r/ppp1bppp/4pn2/3p2B1/2PP4/2N5/PP2PPPP/R2QKBNR w KQkq - 4 5",
    "rnbqkb1r/pp2pppp/2p2n2/8/2pP4/2N2N2/PP2PPPP/R1BQKB1R w KQkq - 0 5",
    "rnbqk2r/ppp1ppbp/3p1np1/8/2PPP3/2N5/PP3PPP/R1BQKBNR w KQkq - 0 5",
    "rnbq1rk1/pppp1ppp/4pn2/8/1bPP4/2N1P3/PP3PPP/R1BQKBNR w KQ - 1 5",
    "r1bqkb1r/ppp2ppp/2n2n2/3pp3/2P5/2N2NP1/PP1PPP1P/R1BQKB1R w KQkq - 0 5",
)
"""The positions after :data:`OPENING_LINES`, as FENs (checked against the lines by the tests)."""
