"""``asp show GAMES``: a position of a recorded game, as a text board and an SVG picture.

A games file of JSON lines (:mod:`asp.app.game_run`, any game) names its game; a file of a
game's own format (TinyChess: PGN, ``asp play``'s or a run's ``games/iter-NNNN.pgn``) is read
by the shipped game whose ``records_suffix`` it has (TinyChess where none has),
:func:`asp.games.protocol.imported`. Either game is replayed through its game's rules, which
draw the picture (``svg``); the text board (``show``) is printed for a games file.

>>> import pathlib, tempfile
>>> from asp.tinychess import TinyChessGame
>>> pgn = pathlib.Path(tempfile.mkdtemp()) / "mate.pgn"
>>> _ = pgn.write_text('[Result "0-1"]\\n\\n1. f3 e5 2. g4 Qh4# 0-1\\n')
>>> boards = write_boards(TinyChessGame(), pgn, f"{pgn.parent}/boards/")
>>> [p.name for p in boards.paths][:2], len(boards.paths)
(['ply-000.svg', 'ply-001.svg'], 5)
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asp.errors import ConfigError

__all__ = ["HELP", "Boards", "add_arguments", "is_directory", "ply_paths", "run", "write_boards"]

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
    from asp.app.outputs import writing

    path = Path(args.pgn)
    if is_directory(args.out) and args.ply is not None:
        raise ConfigError(f"--ply picks one position, but --out {args.out} is a directory (one SVG per ply): drop one")
    if args.pgn.endswith(".jsonl"):
        game, record = _from_games_file(path, args)
    else:
        game = _reader_of(path)
        record = _read_own_format(game, path, args.game)
    states = _replayed(game, record, path, args.game)
    plies = len(states) - 1
    ply = plies if args.ply is None else args.ply
    if not 0 <= ply <= plies:
        raise ConfigError(f"--ply must be in 0..{plies} (game {args.game} of {path} has {plies} plies), got {ply}")
    if args.pgn.endswith(".jsonl"):
        print(game.show(states[ply]))  # noqa: T201
    if not callable(getattr(game, "svg", None)):
        print(f"the position after ply {ply} of game {args.game} of {path}; {game.name} draws no picture")  # noqa: T201
        return 0
    with writing(args.out):
        boards = write_boards(game, path, args.out, game_number=args.game, ply=args.ply, states=states)
    print(boards.describe())  # noqa: T201
    return 0


def _from_games_file(path: Path, args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The game and the record of ``--game`` of a games file of JSON lines."""
    from asp.app.game_loader import check_named_game, load_game
    from asp.app.game_run import read_record

    record = read_record(path, args.game)
    check_named_game(record["game"], f"{path}: game {args.game}", trusted=args.trust_game)
    return load_game(str(record["game"]), option=f"{path}: the game"), record


def _reader_of(path: Path) -> Any:
    """The shipped game whose own file format has ``path``'s suffix; TinyChess where none has
    (any other file is read as PGN, as ``asp show`` always did)."""
    from asp.app.game_loader import GAMES, TINYCHESS, load_game

    for name in GAMES:
        game = load_game(name)
        if getattr(game, "records_suffix", None) == path.suffix:
            return game
    return load_game(TINYCHESS)


def _read_own_format(game: Any, path: Path, number: int) -> dict[str, Any]:
    """The ``number``-th game of ``path``, a file of ``game``'s own format, as a record.

    :raises ConfigError: naming ``GAMES`` (a file, or a game of it, the game cannot read) or
        ``--game`` (a game out of range).
    """
    from asp.games.protocol import imported

    suffix = getattr(game, "records_suffix", "")
    try:
        record = imported(game, str(path), number)
    except LookupError as e:
        total = int(e.args[0])
        if total == 0:
            raise ConfigError(f"--game: {path} holds no games") from None
        raise ConfigError(f"--game must be in 1..{total} ({path} holds {total} game(s)), got {number}") from None
    except ValueError as e:  # the file, or the game of it, that the game's reader cannot read
        raise ConfigError(f"GAMES{suffix}: {e}") from None
    if record is None:
        raise ConfigError(f"GAMES: {game.name} reads no file of its own format; give a games file (.jsonl)")
    return {"start": str(record.get("start", "")), "actions": list(record["actions"])}


def _replayed(game: Any, record: dict[str, Any], path: Path, number: int) -> list[Any]:
    """:func:`_replay` of game ``number`` of ``path``; ConfigError naming them where it does not replay."""
    try:
        return _replay(game, record)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{path}: game {number} does not replay: {e}") from None


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


@dataclass(frozen=True)
class Boards:
    """What :func:`write_boards` wrote."""

    source: Path
    """The games file."""
    game: int
    """The game drawn, counting from 1."""
    plies: int
    """Plies in that game."""
    drawn: tuple[int, ...]
    """The ply of each file written: the position after that many plies."""
    paths: tuple[Path, ...]
    """The SVG files written, in the order of :attr:`drawn`."""

    def describe(self) -> str:
        """One line for people: what was written, from which game and ply."""
        where = f"game {self.game} of {self.source} ({self.plies} {'ply' if self.plies == 1 else 'plies'})"
        if len(self.paths) == 1:
            position = "the start position" if self.drawn[0] == 0 else f"the position after ply {self.drawn[0]}"
            return f"wrote {self.paths[0]}: {position} of {where}"
        return (
            f"wrote {len(self.paths)} boards to {self.paths[0].parent}: "
            f"{self.paths[0].name} (start) to {self.paths[-1].name} (final position) of {where}"
        )


def is_directory(out: str) -> bool:
    """Whether ``--out`` names a directory: an existing one, or a path ending in a separator."""
    return out.endswith(("/", os.sep)) or Path(out).is_dir()


def ply_paths(directory: str | os.PathLike[str], plies: int) -> tuple[Path, ...]:
    """The files of a game's boards in ``directory``, one per position: ``ply-000.svg`` (the
    start) to ``ply-NNN.svg`` (after the last of ``plies``)."""
    digits = max(3, len(str(plies)))
    return tuple(Path(directory) / f"ply-{k:0{digits}d}.svg" for k in range(plies + 1))


def write_boards(
    game: Any,
    source: str | os.PathLike[str],
    out: str | os.PathLike[str] = "board.svg",
    *,
    game_number: int = 1,
    ply: int | None = None,
    states: list[Any] | None = None,
) -> Boards:
    """Draw a game of ``source`` (``game_number``, from 1; ``states``, its positions, where
    they are known, else read from ``source`` in ``game``'s own format) with ``game.svg``
    into ``out``, each file written atomically.

    ``out`` a file: the position after ``ply`` plies (``None``: the final position). ``out`` a
    directory (an existing one, or a string ending in ``/``, created): one SVG per position,
    ``ply-000.svg`` (the start) to ``ply-NNN.svg`` (the final position).

    :raises ConfigError: ``out`` where no file can be written (named ``--out``), or as
        :func:`run` says of a game that cannot be read.
    """
    from asp.app.outputs import check_output_directory, check_output_file
    from asp.util.atomic import write_text_atomic

    source, target = Path(source), os.fspath(out)
    if states is None:
        states = _replayed(game, _read_own_format(game, source, game_number), source, game_number)
    plies, directory = len(states) - 1, is_directory(target)
    if directory:
        drawn, paths = tuple(range(plies + 1)), ply_paths(target, plies)
    else:
        drawn, paths = (plies if ply is None else ply,), (Path(target),)
    check_output_directory("--out", paths[0].parent)  # created if needed
    if not directory:
        check_output_file("--out", target)
    for k, path in zip(drawn, paths, strict=True):
        write_text_atomic(path, str(game.svg(states[k])) + "\n")
    return Boards(source, game_number, plies, drawn, paths)
