"""``asp show GAMES``: a position of a recorded game, as a text board and an SVG picture.

A PGN file (TinyChess: ``asp play``'s, or a run's ``games/iter-NNNN.pgn``) is drawn by
:mod:`asp.app.commands.show_pgn`; a games file of JSON lines (:mod:`asp.app.games_file`, any
game) is replayed through its game's rules, which draw the board (``show``) and, where the
game draws one, the picture (``svg``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from asp.errors import ConfigError

__all__ = ["HELP", "add_arguments", "run"]

HELP = "draw a position of a recorded game (a text board and an SVG picture)"
"""The command's line in ``asp --help``."""


def add_arguments(show: argparse.ArgumentParser) -> None:
    """``asp show``'s options."""
    show.add_argument(
        "pgn",
        metavar="GAMES",
        help="a PGN file (TinyChess: asp play, or games/iter-NNNN.pgn of a run), or the .jsonl games file of "
        "another game",
    )
    show.add_argument("--game", type=int, default=1, help="which game of the file, counting from 1 (default 1)")
    show.add_argument(
        "--ply", type=int, help="the position after K plies; 0 is the start position (default: the final position)"
    )
    show.add_argument(
        "--out",
        default="board.svg",
        help="SVG file to write (default board.svg); a directory (existing, or ending in /): "
        "one SVG per ply of the game, ply-000.svg, ply-001.svg, ...",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``asp show``; print what was drawn and written."""
    from asp.app.commands.show_pgn import write_boards
    from asp.app.outputs import writing

    if args.pgn.endswith(".jsonl"):
        return _show_records(args)
    with writing(args.out):
        boards = write_boards(args.pgn, args.out, game=args.game, ply=args.ply)
    print(boards.describe())  # noqa: T201
    return 0


def _replay(game: Any, record: dict[str, Any]) -> list[Any]:
    """Every position of a record's game, from its start (``""`` or none: the game's own)
    through each of its actions, each one legal where it is played.

    :raises ValueError: a start that is no position, or an action that is not legal there.
    """
    from asp.games.protocol import outcome

    start = record.get("start", "")
    states = [game.parse_state(start) if start else game.start()]
    for ply, action in enumerate(record["actions"], 1):
        if outcome(game, states[-1]) is not None:
            raise ValueError(f"ply {ply}: the game is over before it")
        if action not in game.actions(states[-1]):
            raise ValueError(f"ply {ply}: action {action} is not legal there")
        states.append(game.apply(states[-1], action))
    return states


def _show_records(args: argparse.Namespace) -> int:
    """``asp show GAMES.jsonl``: a position of a recorded game as a text board, and as an SVG
    picture in ``--out`` when the game draws one (``--out`` a directory: one per position)."""
    from asp.app.commands.show_pgn import Boards, is_directory, ply_paths
    from asp.app.game_loader import check_named_game, load_game
    from asp.app.games_file import read_record
    from asp.app.outputs import check_output_directory, check_output_file, writing
    from asp.util.atomic import write_text_atomic

    path = Path(args.pgn)
    record = read_record(path, args.game)
    check_named_game(record["game"], f"{path}: game {args.game}", trusted=args.trust_game)
    game = load_game(str(record["game"]), option=f"{path}: the game")
    actions = record["actions"]
    ply = len(actions) if args.ply is None else args.ply
    if not 0 <= ply <= len(actions):
        raise ConfigError(f"--ply must be in 0..{len(actions)} (game {args.game} has {len(actions)} plies), got {ply}")
    directory = is_directory(args.out)
    if directory and args.ply is not None:
        raise ConfigError(f"--ply picks one position, but --out {args.out} is a directory (one SVG per ply): drop one")
    try:
        states = _replay(game, record)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{path}: game {args.game} does not replay: {e}") from None
    print(game.show(states[ply]))  # noqa: T201
    svg = getattr(game, "svg", None)
    if not callable(svg):
        print(f"the position after ply {ply} of game {args.game} of {path}; {record['game']} draws no picture")  # noqa: T201
        return 0
    drawn = tuple(range(len(actions) + 1)) if directory else (ply,)
    paths = ply_paths(args.out, len(actions)) if directory else (Path(args.out),)
    check_output_directory("--out", paths[0].parent)
    if not directory:
        check_output_file("--out", args.out)
    with writing(args.out):
        for k, out in zip(drawn, paths, strict=True):
            write_text_atomic(out, str(svg(states[k])) + "\n")
    print(Boards(path, args.game, len(actions), drawn, paths).describe())  # noqa: T201
    return 0
