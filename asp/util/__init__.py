"""What every layer of asp uses, and nothing of asp's own but :mod:`asp.errors`.

* :mod:`asp.util.checks`: range checks of options and config fields (one-line ConfigErrors);
* :mod:`asp.util.log`: structured logging (structlog) and its configuration;
* :mod:`asp.util.atomic`: files written whole or not at all;
* :mod:`asp.util.cleanup`: clean-up that finishes under cancellation;
* :mod:`asp.util.interrupts`: Ctrl-C held back while a child process starts;
* :mod:`asp.util.die_with_parent`: a child process that dies with its parent;
* :mod:`asp.util.cores`: the CPU cores this process may use.
"""
