"""``python -m asp.app ARGS``: the ``asp`` command, as its console script runs it
(:func:`asp.app.cli.script`)."""

from asp.app.cli import script

script()
