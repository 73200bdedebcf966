"""``asp moves RUN --positions FILE``: the move a checkpoint plays in each position of a file.

One position a line, in the run's game's notation: TinyChess a FEN; Connect Four the columns
played from the empty board, 1-7, as in the published Connect Four solver test sets. A line is
read whole first; where that is no position and it has several fields, its first field is
the position (so the test sets' score columns are ignored). For each position, in order, it
prints the position and the move the model plays there as it plays by default (its search
without noise, no sampling), one line each. A bad line is one error naming it (exit 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch

from asp.app.checkpoint import model_from_checkpoint, run_config_of
from asp.app.game_commands import play_search
from asp.app.game_config import GameRunConfig
from asp.app.games import load_game
from asp.errors import ConfigError

__all__ = ["moves_command", "read_positions"]

LINE_LIMIT = 4096
"""The longest line read: a position's notation is far shorter."""
MAX_POSITIONS = 1_000_000
"""The most positions one file may hold."""


def read_positions(path: Path) -> list[tuple[int, str]]:
    """The non-empty lines of ``path`` with their line numbers (from 1), read a bounded line
    at a time.

    :raises ConfigError: no such file, a line too long or not text, or too many lines.
    """
    lines: list[tuple[int, str]] = []
    try:
        with path.open("rb") as f:
            for number in range(1, MAX_POSITIONS + 2):
                raw = f.readline(LINE_LIMIT + 1)
                if not raw:
                    return lines
                if len(raw) > LINE_LIMIT:
                    raise ConfigError(f"{path}:{number}: a line of over {LINE_LIMIT} bytes is no position")
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


def moves_command(args: argparse.Namespace) -> int:
    """Run ``asp moves``; print ``POSITION MOVE`` lines."""
    if args.search is not None and not 0 <= args.search <= 10_000:
        raise ConfigError(f"--search must be in 0..10000 (simulations; 0: no search), got {args.search}")
    if args.search and args.policy_only:
        raise ConfigError(f"--policy-only plays without search: drop --search {args.search} or --policy-only")
    path = Path(args.positions)
    lines = read_positions(path)
    model, state = model_from_checkpoint(args.checkpoint)
    found = _game_moves(path, lines, model, run_config_of(state), args)
    for position, move in found:
        print(f"{position} {move}")  # noqa: T201
    return 0


def _game_moves(
    path: Path, lines: list[tuple[int, str]], model: torch.nn.Module, cfg: GameRunConfig, args: argparse.Namespace
) -> list[tuple[str, str]]:
    from asp.games import PlayConfig, play_games

    game = load_game(cfg.game, option="the run's game")
    positions: list[tuple[str, Any]] = [_game_position(game, path, number, text) for number, text in lines]
    play_cfg = PlayConfig(
        game,
        n_games=len(positions),
        openings=tuple(game.state_text(s) for _, s in positions),
        max_plies=1,
        temperature=0.0,
        search=play_search(cfg, args),
        samples=False,
    )
    records, _ = play_games(model, None, play_cfg)
    return [(text, record.moves[0]) for (text, _), record in zip(positions, records, strict=True)]


def _game_position(game: Any, path: Path, number: int, text: str) -> tuple[str, Any]:
    """``(the position's text, its state)`` of a line; ConfigError naming the line."""
    tried = [text] + ([text.split()[0]] if len(text.split()) > 1 else [])
    first: Exception | None = None  # what the whole line's failure says: the error shown
    for i, candidate in enumerate(tried):
        try:
            state = game.parse_state(candidate)
        except (ValueError, TypeError) as e:
            first = first or e
            if i == len(tried) - 1:
                raise ConfigError(f"{path}:{number}: not a position of {game.name}: {first}") from None
            continue
        if game.status(state).value is not None:
            raise ConfigError(f"{path}:{number}: the game is over in {candidate!r}: no move to play")
        return candidate, state
    raise AssertionError("unreachable: the last candidate raises or returns")
