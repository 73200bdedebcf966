"""The ``asp`` commands, one module each, each with its parser (``add_parser``) and its run
function (``run``): :mod:`~asp.app.commands.train`, :mod:`~asp.app.commands.play`,
:mod:`~asp.app.commands.eval`, :mod:`~asp.app.commands.show`, :mod:`~asp.app.commands.moves`.
"""
