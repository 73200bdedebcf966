"""The application layer: the pieces of the ``asp`` command.

* :mod:`asp.app.show`: ``asp show``, a position of a PGN game drawn as an SVG board.

More of the command's modules (the training session, the run directory, evaluation matches,
the display, the curves) move here later; the game and the orchestrator never import it.
"""
