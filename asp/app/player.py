"""A run's model as a player that plays to win, from Python: :meth:`Player.load` a run
directory (its last checkpoint), a checkpoint file or a kept version ``RUN@VERSION``, then ask
its :meth:`~Player.move` in any position of its game.

It plays as ``asp eval`` and ``asp moves`` play it: its search with the run's ``eval_search``
simulations, without noise, the best action taken (no sampling); ``simulations=0`` plays the
network's policy alone.

For instance, with a Connect Four run in ``runs/connect4``::

    player = Player.load("runs/connect4")
    game = player.game
    state = game.parse_state("4453")
    print(game.action_text(state, player.move(state)))
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torch import nn

from asp.app.game_run import GameRun
from asp.games import PlayConfig, play_games
from asp.games.protocol import outcome
from asp.search import SearchConfig
from asp.util.checks import check_int

__all__ = ["Player"]


@dataclass(frozen=True)
class Player:
    """A model of a game and the search it plays to win with (None: its policy alone)."""

    run: GameRun
    """The run of the model: its game (``run.game``) and config."""
    model: nn.Module
    """The network, in eval mode."""
    search: SearchConfig | None
    """The search before each move, without noise (None: the network's likeliest legal move)."""
    version: int = 0
    """The version of the model (its training steps' count of iterations)."""

    @classmethod
    def load(cls, where: str | os.PathLike[str], *, simulations: int | None = None, trust_game: bool = False) -> Player:
        """The model of a run directory, a checkpoint file or ``RUN@VERSION``, playing to win
        with ``simulations`` (default: the run's ``eval_search``; 0: the policy alone). A game
        outside asp that the checkpoint names is imported only with ``trust_game``.

        :raises RunError: no checkpoint there, or one that does not load.
        :raises ConfigError: a game outside asp not trusted, or ``simulations`` out of range.
        """
        from asp.app.run.directory import run_from_checkpoint

        if simulations is not None:
            check_int("Player.load simulations", simulations, 0, 10_000)
        run, model, data = run_from_checkpoint(where, trust_game=trust_game)
        return cls(run, model, run.search_cfg(sampling=False, simulations=simulations), int(data["version"]))

    @property
    def game(self) -> Any:
        """The game the model plays (:class:`asp.games.Game`)."""
        return self.run.game

    def move(self, state: Any) -> int:
        """The action the model plays at ``state``, a position of its game that goes on."""
        return self.moves([state])[0]

    def moves(self, states: Sequence[Any]) -> list[int]:
        """The action the model plays at each of ``states``, in one batch.

        :raises ValueError: a position where the game is over.
        """
        game = self.game
        for state in states:
            if outcome(game, state) is not None:
                raise ValueError(f"the game is over at {game.state_text(state)!r}: no move to play")
        if not states:
            return []
        cfg = PlayConfig(
            game,
            n_games=len(states),
            openings=tuple(game.state_text(s) for s in states),
            max_plies=1,
            temperature=0.0,
            search=self.search,
            model_version=self.version,
            samples=False,
        )
        records, _ = play_games(self.model, None, cfg)
        return [record.actions[0] for record in records]
