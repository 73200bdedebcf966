"""A training run on disk: the run directory and everything written in it.

* :mod:`~asp.app.run.directory`: :class:`RunDir`, the files of a run, its config and metrics, an
  iteration's metrics line and checkpoint committed together; the checkpoint's format and its
  only reader, the kept versions;
* :mod:`~asp.app.run.lock`: one process writes a run at a time;
* :mod:`~asp.app.run.metrics`: what asp reads of the metrics lines, and their check;
* :mod:`~asp.app.run.curves`, :mod:`~asp.app.run.tensorboard`: what a person watches.
"""

from asp.app.run.directory import RunDir, RunError

__all__ = ["RunDir", "RunError"]
