"""The ``asp`` commands, one module each, each with its parser (``add_parser``) and its run
function (``run``): :mod:`~asp.app.commands.train`, :mod:`~asp.app.commands.play`,
:mod:`~asp.app.commands.eval`, :mod:`~asp.app.commands.show`, :mod:`~asp.app.commands.moves`.
"""

EXIT_FAILURE = 1
"""The status of a command that the environment stopped (a full disk, a file removed)."""
EXIT_USAGE = 2
"""The status of a command refused in one line: bad options, a bad file, a broken game."""
EXIT_INTERRUPTED = 130
"""128 + SIGINT, as a shell reports a job that Ctrl-C stopped."""
