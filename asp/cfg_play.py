"""The play function of a call given none: the config plays its own games.

So the orchestrator knows no game: a game's config that has a ``play(model, opp)`` method
(:class:`asp.games.PlayConfig` has) needs no play function (:class:`asp.SelfPlay`,
:func:`asp.sync.play_games_parallel`).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from asp.errors import ConfigError

__all__ = ["cfg_play", "check_playable"]


def cfg_play(model: nn.Module, opp: nn.Module | None, cfg: Any) -> tuple[list[Any], dict[str, Any]]:
    """The play_fn of a SelfPlay given none: the cfg plays its own games, ``cfg.play(model, opp)``.

    So the orchestrator knows no game: a game's config that has a ``play(model, opp)`` method
    (:class:`asp.games.PlayConfig` has) needs no play_fn.
    """
    check_playable(cfg)
    result: tuple[list[Any], dict[str, Any]] = cfg.play(model, opp)
    return result


def check_playable(cfg: Any) -> None:
    """Raise ConfigError unless ``cfg`` can play its own games (what :func:`cfg_play` needs)."""
    if not callable(getattr(cfg, "play", None)):
        raise ConfigError(
            f"no play_fn was given and the cfg ({type(cfg).__name__}) has no play(model, opp) method: "
            f"pass SelfPlay(play_fn=...)"
        )
