"""``asp eval``, ``asp play`` and ``asp show`` of the runs of any game.

The command line (:mod:`asp.app.cli`) parses the options and sends the run here; games are
written one JSON object a line (:meth:`asp.games.Record.plain`, with the game's name), and
``asp show`` reads them back; chess games also as PGN.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import torch

from asp.app.evaluate import match_result_of, play_summary
from asp.app.game_config import GameRunConfig, match_starts
from asp.app.game_run import write_records
from asp.app.games import check_named_game, load_game
from asp.app.outputs import check_output_directory, check_output_file, writing
from asp.app.show import Boards, is_directory, ply_paths
from asp.atomic import write_text_atomic
from asp.errors import ConfigError
from asp.games import PlayConfig
from asp.games.protocol import exported, outcome
from asp.games.protocol import movers as game_movers
from asp.search import SearchConfig
from asp.sync import play_games_parallel
from asp.tinychess.engine import EngineConfig, EngineOpponent
from asp.tinychess.game import TinyChessGame

__all__ = ["game_eval", "game_play", "game_show", "play_match", "play_search", "print_match"]


def play_search(cfg: GameRunConfig, args: argparse.Namespace, *, sampling: bool = False) -> SearchConfig | None:
    """The search a run's model plays to win with, or with ``sampling`` as it plays in
    self-play (its self-play simulations, Gumbel noise at the root): as the run was
    configured, unless ``--search N`` (0: none) or ``--policy-only`` says otherwise."""
    if getattr(args, "policy_only", False) or args.search == 0:
        return None
    if args.search is not None:
        cfg = dataclasses.replace(cfg, search=args.search, eval_search=args.search)
    return cfg.search_cfg(sampling=sampling)


def game_eval(
    args: argparse.Namespace,
    model: torch.nn.Module,
    state: dict[str, Any],
    cfg: GameRunConfig,
    engine_cfg: EngineConfig | None = None,
) -> int:
    """``asp eval RUN`` of a game run: a match against one of the game's movers, another
    checkpoint of the same game or, for chess, a UCI engine (``engine_cfg``: ``--vs
    stockfish``, ``--vs uci``); prints the score with its Elo, and writes the games to
    ``--pgn`` in the game's own format (chess)."""
    game = load_game(cfg.game, option="the run's game")
    if args.pgn and exported(game, []) is None:
        raise ConfigError(f"--pgn applies to a game of chess only, not to a {cfg.game} run")
    opponent, described, opponent_version, opponent_search = _opponent(args, game, cfg, engine_cfg)
    movers = game_movers(game)
    play_cfg = PlayConfig(
        game,
        n_games=args.games,
        seed=args.seed,
        max_plies=cfg.max_plies if args.max_plies is None else args.max_plies,
        temperature=0.0 if args.temperature is None else args.temperature,
        opponent_temperature=1.0 if args.vs in movers else None,
        model_version=state["version"],
        opponent_version=opponent_version,
        search=play_search(cfg, args),
        opponent_search=opponent_search,
        samples=False,
        # Two players that play to win would play the same two games over and over.
        **(
            {} if args.vs == "random" or args.from_start else match_starts(game, between_networks=args.vs not in movers)
        ),
    )
    records = play_match(model, opponent, play_cfg, workers=args.workers)
    if args.pgn:
        if args.vs not in movers and engine_cfg is None:  # another checkpoint: named by its run
            name = checkpoint_name(args.vs, opponent_version)
            records = [dataclasses.replace(record, opponent_name=name) for record in records]
        export = exported(game, records)
        assert export is not None, "a game without a format of its own is refused above"
        with writing(args.pgn):
            write_text_atomic(args.pgn, export[1])
    return print_match(args, state["version"], described, records, engine=engine_cfg is not None)


def checkpoint_name(path: str, version: int) -> str:
    """A checkpoint as an opponent, in words fit for a PGN tag: ``asp model v3 of RUN``.

    >>> checkpoint_name("/tmp/runs/c4 (old)", 3)
    'asp model v3 of c4__old_'
    """
    where = Path(path).resolve()
    run = where.name if where.is_dir() or where.suffix != ".pt" else where.parent.name
    return f"asp model v{version} of " + (re.sub(r"[^\w.+-]", "_", run)[:80] or "a run")


def play_match(model: torch.nn.Module, opponent: torch.nn.Module, cfg: Any, *, workers: int) -> list[Any]:
    """The records of ``asp eval``'s match (:func:`asp.sync.play_games_parallel`); an engine
    opponent's engine in this process is closed after (the workers close their own)."""
    try:
        records, _ = play_games_parallel(model, opponent, cfg, workers=workers)
    finally:
        if isinstance(opponent, EngineOpponent):
            opponent.close()
    return list(records)


def print_match(args: argparse.Namespace, version: int, described: str, records: list[Any], *, engine: bool) -> int:
    """Print ``asp eval``'s line of the match of ``args.checkpoint`` (at ``version``) against
    ``described`` (with its engine failures, against an ``engine``), and the versions its run
    keeps; return the exit code, 0."""
    from asp.app.checkpoint import kept_versions_line

    result = match_result_of(records)
    print(  # noqa: T201
        f"{args.checkpoint} (version {version}) against {described}: "
        f"{result.describe(failures=engine)}" + (f"; wrote {args.pgn}" if args.pgn else "")
    )
    if kept := kept_versions_line(args.checkpoint):
        print(kept)  # noqa: T201
    return 0


def _opponent(
    args: argparse.Namespace, game: Any, cfg: GameRunConfig, engine_cfg: EngineConfig | None
) -> tuple[torch.nn.Module, str, int, SearchConfig | None]:
    """``asp eval``'s opponent of a game run: ``(opponent, in words, its version, its search)``;
    another checkpoint of the same game."""
    from asp.app.checkpoint import model_from_checkpoint, run_config_of

    movers: dict[str, Any] = game_movers(game)  # each an nn.Module (asp.games.Mover)
    if args.vs in movers:
        return movers[args.vs], f"the {args.vs} mover", 0, None
    if engine_cfg is not None and isinstance(game, TinyChessGame):
        engine = EngineOpponent(engine_cfg)  # finds the engine now: a missing one is a usage error
        return engine, engine.opponent_name, 0, None
    if args.vs in ("greedy", "stockfish", "uci") or _names_no_file(args.vs):
        engines = ", stockfish, uci" if isinstance(game, TinyChessGame) else ""
        raise ConfigError(
            f"--vs {args.vs}: not an opponent of {cfg.game}; its movers: {', '.join(movers)}{engines}, or a RUN"
        )
    opponent, opponent_state = model_from_checkpoint(args.vs, trust_game=args.trust_game)
    other = run_config_of(opponent_state)
    if other.game != cfg.game and load_game(other.game, option=f"--vs {args.vs}: its game").name != game.name:
        raise ConfigError(f"--vs {args.vs}: a run of {other.game}, not of {cfg.game}")
    version = opponent_state["version"]
    return opponent, f"{args.vs} (version {version})", version, play_search(other, args)


def _names_no_file(vs: str) -> bool:
    """Whether ``--vs`` is a word that names no file: a mover's name, not a RUN (a path, a
    checkpoint file, ``RUN@VERSION``)."""
    return not Path(vs).exists() and not any(mark in vs for mark in ("/", os.sep, "@")) and not vs.endswith(".pt")


def game_play(args: argparse.Namespace, model: torch.nn.Module, version: int, cfg: GameRunConfig) -> int:
    """``asp play`` of a game: self-play games written as JSON lines to ``--out`` (and in the
    game's own format beside them, where it has one), or in the game's own format alone where
    ``--out`` has its suffix (chess: ``.pgn``); by default to ``selfplay`` with the game's own
    suffix, else ``selfplay.jsonl``. A file of the game's own format that is already there
    beside a ``--out`` of JSON lines is refused, not overwritten: the user did not name it."""
    game = load_game(cfg.game)
    own = exported(game, [])  # the game's own format, if it has one: the default file's
    out = args.out or "selfplay" + (own[0] if own is not None else ".jsonl")
    check_output_file("--out", out)
    beside = Path(out).with_suffix(own[0]) if own is not None else Path(out)
    if beside != Path(out) and beside.exists():
        raise ConfigError(
            f"--out {out}: the games go in {beside} beside it too, and {beside} exists: remove it or pick another --out"
        )
    search = play_search(cfg, args, sampling=True)
    play_cfg = PlayConfig(
        game,
        n_games=args.games,
        seed=args.seed,
        max_plies=cfg.max_plies if args.max_plies is None else args.max_plies,
        temperature=1.0 if args.temperature is None else args.temperature,
        model_version=version,
        search=search,
        samples=False,
    )
    records, stats = play_games_parallel(model, None, play_cfg, workers=args.workers)
    export = exported(game, records)
    with writing(out):
        if export is not None and Path(out).suffix == export[0]:  # chess: --out games.pgn asks for PGN
            write_text_atomic(out, export[1])
        else:
            write_records([r.plain() for r in records], out, game=cfg.game)
    print(play_summary(stats, out))  # noqa: T201
    return 0


_LINE_LIMIT = 1 << 20
"""The longest line ``asp show`` reads from a games file: a record is far shorter."""


def read_record(path: Path, number: int) -> dict[str, Any]:
    """The ``number``-th record (from 1) of a JSON-lines games file, read a bounded line at a time.

    :raises ConfigError: ``number`` below 1, no such file or record, or a line that is not a
        record of asp (naming the field: ``game`` a string, ``start`` a string where it is
        given, ``actions`` a list of ints).
    """
    if number < 1:
        raise ConfigError(f"--game must be 1 or more (the games of {path} count from 1), got {number}")
    try:
        with path.open("rb") as f:
            for count in range(1, number + 1):
                line = f.readline(_LINE_LIMIT)
                if not line:
                    raise ConfigError(f"{path}: holds {count - 1} game(s), not {number}")
                if len(line) >= _LINE_LIMIT and not line.endswith(b"\n"):
                    raise ConfigError(f"{path}: line {count} is over {_LINE_LIMIT} bytes: not an asp games file")
    except FileNotFoundError:
        raise ConfigError(f"GAMES: no such file: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"GAMES: {path} is a directory") from None
    try:
        record = json.loads(line)
    except (UnicodeDecodeError, ValueError):
        raise ConfigError(f"{path}: line {number} is not JSON: not an asp games file") from None
    not_record = f"{path}: line {number} is not a game record of asp"
    if not isinstance(record, dict):
        raise ConfigError(f"{not_record}: a JSON {type(record).__name__}, not an object")
    problem = _record_problem(record)
    if problem is not None:
        raise ConfigError(f"{not_record}: {problem}")
    return record


def _record_problem(record: dict[str, Any]) -> str | None:
    """What makes a line's JSON object no record that ``asp show`` replays, naming the field."""
    if not isinstance(record.get("game"), str):
        return f"field game must be the game's name (a string), got {_short(record.get('game'))}"
    if not isinstance(record.get("start", ""), str):
        return f"field start must be a position in the game's notation (a string), got {_short(record['start'])}"
    actions = record.get("actions")
    if not isinstance(actions, list):
        return f"field actions must be a list of ints, got {_short(actions)}"
    bad = next((k for k, action in enumerate(actions) if type(action) is not int), None)
    return None if bad is None else f"field actions must be a list of ints: actions[{bad}] is {_short(actions[bad])}"


def _short(value: Any) -> str:
    """``repr(value)``, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _replay(game: Any, record: dict[str, Any]) -> list[Any]:
    """Every position of a record's game, from its start (``""`` or none: the game's own)
    through each of its actions, each one legal where it is played.

    :raises ValueError: a start that is no position, or an action that is not legal there.
    """
    start = record.get("start", "")
    states = [game.parse_state(start) if start else game.start()]
    for ply, action in enumerate(record["actions"], 1):
        if outcome(game, states[-1]) is not None:
            raise ValueError(f"ply {ply}: the game is over before it")
        if action not in game.actions(states[-1]):
            raise ValueError(f"ply {ply}: action {action} is not legal there")
        states.append(game.apply(states[-1], action))
    return states


def game_show(args: argparse.Namespace) -> int:
    """``asp show GAMES.jsonl``: a position of a recorded game as a text board, and as an SVG
    picture in ``--out`` when the game draws one (``--out`` a directory: one per position)."""
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
