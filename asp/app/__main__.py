"""``python -m asp.app ARGS``: the ``asp`` command, as its console script runs it
(:func:`asp.app.entry.main`)."""

from asp.app.entry import main

main()
