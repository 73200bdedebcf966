"""The application layer: the ``asp`` command and what it keeps on disk.

* :mod:`asp.app.cli`: the command line, a table of :mod:`asp.app.commands` (train, play,
  eval, show, moves), each with its parser and its run function;
* :mod:`asp.app.game_run`: :class:`~asp.app.game_run.GameRun`, a run of a game (the loaded
  game and the run's config), built once by a command and passed on;
* :mod:`asp.app.player`: :class:`~asp.app.player.Player`, a run's model as it plays to win,
  from Python (``Player.load(RUN).move(state)``);
* :mod:`asp.app.session`: the training session behind ``asp train``, and the process that
  writes its games;
* :mod:`asp.app.run`: the run directory (checkpoint, kept versions, metrics, curves, lock);
* :mod:`asp.app.evaluation`: matches, their scores and Elo, the rating ladder.

The game and the orchestrator never import it.
"""
