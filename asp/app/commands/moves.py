"""``asp moves RUN --positions FILE``: the move a checkpoint plays in each position of a file.

One position a line, the whole line read in the run's game's line format
(:func:`asp.games.protocol.parsed_line`): TinyChess a FEN, its six fields, or an EPD, its four
fields and its operations; Connect Four the columns played from the empty board, 1-7, and the
position's score beside them or not, as the published Connect Four solver test sets write
them (``COLUMNS SCORE``). A UTF-8 byte order mark before the first line is skipped. For each
position, in order, it prints the position in the game's notation (TinyChess: a FEN) and the
move the model plays there as it plays by default (its search without noise, no sampling),
one line each. A line that is no position, or one where the game is over, is one error
naming it, and a file without a position is an error too (exit 2).
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asp.app.commands.options import POLICY_ONLY_HELP, SEARCH_HELP, check_search_options, play_search
from asp.errors import ConfigError

if TYPE_CHECKING:
    import torch

    from asp.app.game_run import GameRun

__all__ = ["HELP", "add_arguments", "read_positions", "run"]

HELP = "the move a checkpoint plays in each position of a file"
"""The command's line in ``asp --help``."""

LINE_LIMIT = 4096
"""The longest line read: a position's notation is far shorter."""
MAX_POSITIONS = 1_000_000
"""The most positions one file may hold."""
_BOM = "\ufeff".encode()
"""A UTF-8 byte order mark, which some editors write before the first line."""


def read_positions(path: Path) -> list[tuple[int, str]]:
    """The non-empty lines of ``path`` with their line numbers (from 1), read a bounded line
    at a time; a UTF-8 byte order mark before the first is skipped.

    :raises ConfigError: no such file, a line too long or not text, or too many lines.
    """
    lines: list[tuple[int, str]] = []
    try:
        with path.open("rb") as f:
            for number in itertools.count(1):  # every line to the end: blank ones count no position
                raw = f.readline(LINE_LIMIT + 1)
                if not raw:
                    return lines
                if len(raw) > LINE_LIMIT:
                    raise ConfigError(f"{path}:{number}: a line of over {LINE_LIMIT} bytes is no position")
                if number == 1:
                    raw = raw.removeprefix(_BOM)
                try:
                    text = raw.decode("utf-8").strip()
                except UnicodeDecodeError:
                    raise ConfigError(f"{path}:{number}: not text (UTF-8)") from None
                if text:
                    lines.append((number, text))
                if len(lines) > MAX_POSITIONS:
                    raise ConfigError(f"{path}: more than {MAX_POSITIONS} positions")
    except FileNotFoundError:
        raise ConfigError(f"--positions: no such file: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"--positions: {path} is a directory") from None
    return lines


def add_arguments(moves: argparse.ArgumentParser) -> None:
    """``asp moves``'s options."""
    moves.add_argument("checkpoint", metavar="RUN", help="checkpoint file or run directory")
    moves.add_argument(
        "--positions",
        required=True,
        metavar="FILE",
        help="one position a line, the whole line (TinyChess: a FEN, or an EPD with its operations; Connect Four: "
        "the columns played, 1-7, and the position's score or not, as in the solver test sets)",
    )
    moves.add_argument("--search", type=int, help=SEARCH_HELP)
    moves.add_argument("--policy-only", action="store_true", help=POLICY_ONLY_HELP)


def run(args: argparse.Namespace) -> int:
    """Run ``asp moves``; print ``POSITION MOVE`` lines."""
    from asp.app.run.directory import run_from_checkpoint

    check_search_options(args)
    path = Path(args.positions)
    lines = read_positions(path)
    if not lines:
        raise ConfigError(f"--positions {path}: holds no position (one a line)")
    game, model, _ = run_from_checkpoint(args.checkpoint, trust_game=args.trust_game)
    found = _game_moves(path, lines, game, model, args)
    for position, move in found:
        print(f"{position} {move}")  # noqa: T201
    return 0


def _game_moves(
    path: Path, lines: list[tuple[int, str]], run: GameRun, model: torch.nn.Module, args: argparse.Namespace
) -> list[tuple[str, str]]:
    from asp.app.player import Player

    game = run.game
    positions: list[tuple[str, Any]] = [_game_position(game, path, number, text) for number, text in lines]
    actions = Player(run, model, play_search(run, args)).moves([state for _, state in positions])
    return [(text, game.action_text(state, a)) for (text, state), a in zip(positions, actions, strict=True)]


def _game_position(game: Any, path: Path, number: int, text: str) -> tuple[str, Any]:
    """``(the position in the game's notation, its state)`` of a line; ConfigError naming the line."""
    from asp.games.protocol import outcome, parsed_line

    try:
        state = parsed_line(game, text)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{path}:{number}: not a position of {game.name}: {e}") from None
    if outcome(game, state) is not None:
        raise ConfigError(f"{path}:{number}: the game is over in {text!r}: no move to play")
    return game.state_text(state), state
