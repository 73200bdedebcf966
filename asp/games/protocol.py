"""The game protocol: what a two-player board game supplies to be played, searched, trained,
evaluated and shown by asp.

A game is one class that implements :class:`Game`. It grows from the search's
:class:`~asp.search.SearchGame` (``status``, ``actions``, ``apply``), whose ``status`` it
gives as :meth:`Game.outcome` and the optional ``winning`` (:func:`status`), replacing
``evaluate`` by ``encode`` and ``network``: the network is the game's, and asp calls it. The
rest is notation (text in, text out) and the optional extras: the actions that win at once,
symmetries for data augmentation, the simple movers the game knows, a picture of a position.

Rules of the protocol, which asp relies on:

* States are values: :meth:`Game.apply` returns a new state and never changes its argument.
* Players alternate: :meth:`Game.to_move` is 0 for the first player, 1 for the second.
* :meth:`Game.outcome` decides the end: the result for the side to move once the game is
  over (-1 lost, 0 drawn, +1 won), None while it goes on. Play, the search and the commands
  all ask it, through :func:`outcome`, and nothing else: a game says in one place whether
  it is over.
* Actions are ints in ``range(action_size)``: the index of the action's logit in the
  network's policy row.
* asp checks, where it takes them, that :meth:`Game.actions` gives at least one action, each
  in range, at a position whose game goes on, and that the network gives finite
  ``(logits, value)`` of shapes ``(B, action_size)`` and ``(B,)``: a game that breaks one of
  these stops with :class:`~asp.errors.GameError` or :class:`~asp.errors.NonFiniteError`,
  one line naming the game, the method and the rule (:mod:`asp.games.checked`).
* The network is built by :meth:`Game.network` and must keep its config as ``net.cfg``:
  a worker process rebuilds it as ``type(net)(net.cfg)`` and loads the weights into it
  (``cfg`` None: ``type(net)()``). A network that this rebuild would change is refused
  before any worker starts.
* Optional methods, which asp calls where a game has them:

  - ``winning(state) -> sequence of int``: the legal actions that win at once at ``state``,
    a position where the game goes on, so that the search plays them without searching and
    counts the position won, and a network that plays without search can take them
    (``PlayConfig.take_wins``). asp asks for them only there, never of a finished game
    (:func:`status`), so they may take time to find (TinyChess: its mates in one); without
    it, none: the search finds a win by searching.
  - ``symmetries() -> sequence of Symmetry``: the board's symmetries other than the
    identity, for data augmentation (tic-tac-toe: seven); without them, none: the trainer
    learns every sample as it is (:func:`symmetries`).
  - ``movers() -> mapping of str to Mover``: the simple movers the game knows besides
    ``random`` (Connect Four: ``winblock``), the evaluation's opponents. Every game has
    ``random`` (:class:`~asp.games.RandomMover`), first; a game's own ``random`` takes its
    place (:func:`asp.games.movers.movers_of`).
  - ``mover(name) -> Mover or None``: a mover by a name that ``movers()`` does not list,
    which ``asp eval --vs NAME`` plays and no evaluation of a run does (OpenSpiel's games:
    ``mctsN``, its ``MCTSBot`` with N simulations); None for a name the game does not know
    (:func:`asp.games.movers.mover_named`).
  - ``svg(state) -> str``: ``state`` as an SVG picture, which ``asp show`` writes beside the
    text board (Connect Four, TinyChess); without it, the text board alone.
  - ``adjudicate(state) -> float``: the result, for the side to move, of a game cut at
    ``max_plies`` (TinyChess: by material); without it such a game is drawn (0).
  - ``heuristic(state) -> float``: a guess at what ``state`` is worth to the side to move,
    in the game's own units (TinyChess: its material lead in pawns). Self-play records it at
    every position, and the trainer can add its discounted changes to the value target
    (``TrainConfig.heuristic_weight``); without it, the value learns the result alone.
  - ``search_root(state) -> state``: ``state`` as the root of a search, for a game whose
    search scores positions inside its tree differently (TinyChess: a repetition is a
    draw there); without it, the state itself.
  - ``pack(states) -> numpy array`` and ``unpack(rows) -> tensor``, a pair: a compact form of
    :meth:`Game.encode` (``unpack(pack(states))`` equals ``encode(states)``) in which
    self-play sends its training samples back and the trainer keeps them; without it, the
    samples are :meth:`Game.encode`'s rows.
  - ``openings() -> sequence of str``: positions, in the game's notation, that matches
    between players that play to win start from, each played with both colours (TinyChess:
    ten main lines of common openings); without them, a match against a mover starts from
    :meth:`Game.start`, and one between two networks with two random plies (:func:`openings`).
  - ``records_text(records) -> str`` and ``records_suffix`` (``".pgn"``), a pair: the games
    (:class:`~asp.games.Record`) in the game's own file format (TinyChess: PGN), which a
    run writes beside its JSON lines of records (:func:`exported`); with them,
    ``read_record(path, number) -> mapping``: the ``number``-th game (from 1) of a file of that
    format as ``{"start": position text, or "" for the game's own start, "actions": [...]}``,
    which ``asp show`` draws; it raises ValueError for a file or game it cannot read, and
    LookupError(n) where the file holds n games, fewer than ``number`` (:func:`imported`).
  - ``parse_line(text) -> state``: the position that one line of a file of positions
    (``asp moves --positions``) writes, in the game's own line format, the whole line read
    (TinyChess: a FEN, or an EPD with its operations; Connect Four: the solver test sets'
    ``COLUMNS SCORE``); it raises ValueError for a line that is no such position. Without
    it, :meth:`Game.parse_state` of the whole line (:func:`parsed_line`).
  - ``engines`` (a tuple of names) and ``engine(fields, names=None) -> config``, a pair:
    the outside programs that play the game, by the names a user gives them (``asp eval
    --vs NAME``, ``asp train --eval-vs NAME``; the first is the default), and the config of
    one made from ``fields``, plain data (``fields["name"]``, one of ``engines``, where it is
    given; a run's ``eval_engine``; ConfigError for a bad value, called as ``names`` says: a
    command line names its options). The config is a frozen dataclass of the program's
    settings with ``describe() -> str``, the program in words, and ``opponent(path=None)
    -> Mover``, which finds the program (at ``path``, else where the game looks) or raises
    :class:`~asp.errors.OpponentNotFound`; the opponent's ``close()``, where it has one,
    ends the program. Without them, the game has no engine (:func:`engine_config`,
    :func:`engine_names`).
  - ``run_defaults() -> mapping of str to value``: the settings that ``asp train`` runs the
    game with where they differ from asp's own, by the names of the run config's fields
    (``games``, ``search``, ``eval_search``...; ``train``: a
    :class:`~asp.games.TrainConfig`; ``network``: the fields of the game's network config),
    plain data (TinyChess: longer games, 8 simulations a move). A setting on the command line
    or in a config file comes over them. Without it, asp's own (:func:`run_defaults`).

* The game object itself travels to the worker processes inside the play config: its class
  must be importable by module and name (defined at a module's top level), and it should be
  small (rules and settings, no network).

>>> from asp.connect4 import ConnectFour
>>> game = ConnectFour()
>>> state = game.apply(game.start(), 3)
>>> game.to_move(state), list(game.actions(state))
(1, [0, 1, 2, 3, 4, 5, 6])
>>> game.state_text(state), game.action_text(state, 0)
('4', '1')
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np
import torch
from torch import nn

from asp.games.records import Record
from asp.search import Status

__all__ = [
    "Game",
    "MoveFailed",
    "Mover",
    "State",
    "Symmetry",
    "adjudicated",
    "engine_config",
    "engine_names",
    "exported",
    "heuristic",
    "imported",
    "openings",
    "outcome",
    "packed",
    "parsed_line",
    "run_defaults",
    "search_root",
    "status",
    "symmetries",
    "unpacked",
    "winning",
]

State = TypeVar("State")
"""A game's position, of any type the game chooses (a value: :meth:`Game.apply` makes a new one)."""


@dataclass(frozen=True)
class Symmetry:
    """A symmetry of the board: it maps the encoding of a position to the encoding of its
    image, and every action to the image's action, so that a sample of training data counts
    as several (the left-right mirror of Connect Four, the eight of tic-tac-toe).

    ``actions[a]`` is the image of action ``a``: a permutation of ``range(action_size)``.
    """

    name: str
    """What it is, for logs: ``mirror``, ``rotate90``..."""
    features: Callable[[torch.Tensor], torch.Tensor]
    """Maps a batch of encoded positions, ``(B, ...)`` as :meth:`Game.encode` returns them, to
    the encodings of their images. A function at a module's top level (it is pickled)."""
    actions: tuple[int, ...]
    """The image of every action."""


class MoveFailed(Exception):
    """Raised by :meth:`Mover.choose` when it cannot move in this game (an engine that died or
    answered nonsense): the game ends there, unscored, with the termination ``termination``
    (:attr:`asp.games.Record.termination`; ``mover_failure`` unless the mover says), and the
    other games go on. A mover that can play no game at all raises anything else: the call fails.
    """

    def __init__(self, reason: str, *, termination: str = "mover_failure") -> None:
        super().__init__(reason)
        self.reason = reason
        self.termination = termination


@runtime_checkable
class Mover(Protocol):
    """A player that chooses its moves from the rules alone (a uniformly random mover, a
    one-ply win/block mover): an opponent for evaluation that needs no network.

    asp passes opponents to the worker processes as networks: a mover is an
    :class:`torch.nn.Module` without weights whose ``cfg`` is None, so that it is rebuilt as
    ``type(mover)()``, or whose ``cfg`` holds its settings, rebuilt as ``type(mover)(cfg)``
    (TinyChess's engine opponent). A mover that cannot move in one game raises
    :class:`MoveFailed`: that game ends unscored.
    """

    opponent_name: str
    """Who it is: the records' ``opponent_name`` (``random``, ``winblock``)."""

    def choose(self, game: Game[Any], state: Any, rng: random.Random) -> int:
        """A legal action of ``state`` (a position where the game goes on); ``rng`` is the
        game's own random stream."""
        ...


class Game(Protocol[State]):
    """A two-player, alternating, zero-sum board game, as asp plays, searches, trains,
    evaluates and shows it. See the module's docstring for the rules of the protocol."""

    name: str
    """The game's short name (``connect4``): written in a run's config and checkpoint."""

    action_size: int
    """The number of actions: the width of the network's policy row."""

    def start(self) -> State:
        """The position every game starts from (where no opening is given)."""
        ...

    def to_move(self, state: State) -> int:
        """Who moves at ``state``: 0 the first player, 1 the second."""
        ...

    def outcome(self, state: State) -> float | None:
        """The value of ``state`` for the side to move once the game is over there (-1 lost,
        0 drawn, +1 won), None while it goes on: asked at every ply of a game and at every
        position a search reaches, so keep it fast."""
        ...

    def actions(self, state: State) -> Sequence[int]:
        """The legal actions of ``state``, a position where the game goes on (not empty)."""
        ...

    def apply(self, state: State, action: int) -> State:
        """The state after ``action``, a new object."""
        ...

    def encode(self, states: Sequence[State]) -> torch.Tensor:
        """The network's input for ``states``, from the side to move's view: one row per
        state, on the CPU, in one call."""
        ...

    def network(self, cfg: Any = None) -> nn.Module:
        """A new network, from ``cfg`` (None: the game's default). It maps a batch of
        :meth:`encode` rows to ``(logits, value)``: logits of shape ``(B, action_size)`` and
        a value in [-1, 1] for the side to move, of shape ``(B,)``; it keeps its config as
        ``.cfg`` (see the module's docstring)."""
        ...

    def action_text(self, state: State, action: int) -> str:
        """``action`` at ``state`` in the game's notation (Connect Four: its column, 1-7)."""
        ...

    def parse_action(self, state: State, text: str) -> int:
        """The legal action that ``text`` names at ``state``.

        :raises ValueError: ``text`` names no legal action there (the message says why).
        """
        ...

    def state_text(self, state: State) -> str:
        """``state`` in the game's one-line notation (Connect Four: the columns played from
        the empty board), which :meth:`parse_state` reads back."""
        ...

    def parse_state(self, text: str) -> State:
        """The position that ``text`` writes in the game's notation.

        :raises ValueError: ``text`` is no position of the game (the message says why).
        """
        ...

    def show(self, state: State) -> str:
        """``state`` as a text board for people, several lines."""
        ...


def adjudicated(game: Game[State], state: State) -> float:
    """The value, for the side to move, of a game cut at ``state``: ``game.adjudicate(state)``
    where the game has it, else 0 (a draw)."""
    adjudicate = getattr(game, "adjudicate", None)
    return 0.0 if adjudicate is None else float(adjudicate(state))


def heuristic(game: Game[State], state: State) -> float | None:
    """``game.heuristic(state)`` where the game has it, else None: a guess at what ``state`` is
    worth to the side to move, in the game's own units (TinyChess: its material lead in
    pawns). The trainer can add its changes to the value target (``TrainConfig.heuristic_weight``)."""
    guess = getattr(game, "heuristic", None)
    return None if guess is None else float(guess(state))


def outcome(game: Game[State], state: State) -> float | None:
    """The value of ``state`` for the side to move once the game is over there, None while it
    goes on: ``game.outcome(state)``. Play, the search (:func:`status`) and the commands ask
    whether a game is over here, and nowhere else."""
    return game.outcome(state)


def winning(game: Game[State], state: State) -> tuple[int, ...]:
    """``game.winning(state)`` where the game has it, else none: the actions that win at once
    at ``state``, a position where the game goes on."""
    won = getattr(game, "winning", None)
    return () if won is None else tuple(won(state))


def status(game: Game[State], state: State) -> Status:
    """``state`` as the search sees it (:class:`~asp.search.Status`): the :func:`outcome` of a
    finished game, else the :func:`winning` actions, which a finished game is never asked for.

    >>> from asp.connect4 import ConnectFour
    >>> game = ConnectFour()
    >>> status(game, game.parse_state("445566")), status(game, game.parse_state("4455667"))
    (Status(value=None, winning=(2, 6)), Status(value=-1.0, winning=()))
    """
    value = outcome(game, state)
    return Status(winning=winning(game, state)) if value is None else Status(value=value)


def symmetries(game: Game[Any]) -> tuple[Symmetry, ...]:
    """``game.symmetries()`` where the game has them, else none: the board's symmetries other
    than the identity, through which the trainer sees its samples."""
    listed = getattr(game, "symmetries", None)
    return () if listed is None else tuple(listed())


def openings(game: Game[Any]) -> tuple[str, ...]:
    """``game.openings()`` where the game has them, else none: the positions, in the game's
    notation, that matches between players that play to win start from."""
    listed = getattr(game, "openings", None)
    return () if listed is None else tuple(str(text) for text in listed())


def run_defaults(game: Game[Any]) -> dict[str, Any]:
    """``game.run_defaults()`` where the game has them, else none: the settings ``asp train``
    runs the game with where they differ from asp's own."""
    listed = getattr(game, "run_defaults", None)
    return {} if listed is None else dict(listed())


def search_root(game: Game[State], state: State) -> State:
    """``state`` as the root of a search: ``game.search_root(state)`` where the game has it."""
    root = getattr(game, "search_root", None)
    return state if root is None else root(state)


def parsed_line(game: Game[State], text: str) -> State:
    """The position that a line of a file of positions writes: ``game.parse_line(text)``
    where the game has it, else ``game.parse_state(text)``; either reads the whole line.

    :raises ValueError: ``text`` is no position of the game (the message says why).
    """
    parse_line = getattr(game, "parse_line", None)
    return game.parse_state(text) if parse_line is None else parse_line(text)


def engine_names(game: Game[Any]) -> tuple[str, ...]:
    """The names of ``game``'s engines (``game.engines``), the first the default; none where
    the game has no engine."""
    if getattr(game, "engine", None) is None:
        return ()
    return tuple(str(name) for name in getattr(game, "engines", ()))


def engine_config(game: Game[Any], fields: Mapping[str, Any], names: Mapping[str, str] | None = None) -> Any:
    """``game.engine(fields, names)``, the config of the game's outside opponent, or None
    where the game has no engine.

    :raises ConfigError: a value out of its range, named as ``names`` says.
    """
    engine = getattr(game, "engine", None)
    return None if engine is None else engine(fields, names)


def packed(game: Game[State], states: Sequence[State]) -> np.ndarray:
    """The compact form of ``game.encode(states)``: ``game.pack(states)`` where the game has
    it, else the encoding itself as a numpy array."""
    pack = getattr(game, "pack", None)
    return np.asarray(pack(states)) if pack is not None else game.encode(states).numpy()


def unpacked(game: Game[State], rows: np.ndarray) -> torch.Tensor:
    """The encoding of :func:`packed`'s ``rows``."""
    unpack = getattr(game, "unpack", None)
    return unpack(rows) if unpack is not None else torch.from_numpy(np.asarray(rows))


def exported(game: Game[Any], records: Sequence[Record]) -> tuple[str, str] | None:
    """``(game.records_suffix, game.records_text(records))`` where the game has its own file
    format for its games (TinyChess: ``.pgn``), else None."""
    text = getattr(game, "records_text", None)
    suffix = getattr(game, "records_suffix", None)
    return None if text is None or suffix is None else (str(suffix), str(text(records)))


def imported(game: Game[Any], path: str, number: int) -> Mapping[str, Any] | None:
    """``game.read_record(path, number)``, the ``number``-th game of a file of the game's own
    format, where the game reads its format; else None."""
    read = getattr(game, "read_record", None)
    return None if read is None else dict(read(path, number))
