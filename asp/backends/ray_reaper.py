"""A watchdog process that removes a private Ray instance once the process that owns it is gone.

Ray's GCS and raylet die with the process that started them (PR_SET_PDEATHSIG), but the agents
the raylet starts (``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``) outlive it: once their
raylet is gone they try to report its death to the GCS, which is gone too, and wait for an
answer. Their process titles name nothing of the instance and their environments are
overwritten by those titles; what still ties each of them to the instance is the log files
they hold open in its temporary directory.

So the owner (:class:`Reaper`) makes that directory first, starts Ray with
``_temp_dir=<directory>``, and runs this module as a script beside it, in a session of its
own, reading a pipe from the owner. The pipe ends when the owner closes it after
``ray.shutdown()`` or when the owner dies (SIGKILL included). Then the watchdog SIGKILLs every
process of this user, other than the owner, that holds a file in that directory or names it on
its command line, until none is left, and removes the directory.

The script imports the standard library only (it runs as ``python -I -S ray_reaper.py DIR PID``);
it reads ``/proc``, so it does its work on Linux and nothing elsewhere.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["Reaper", "sweep"]

_ROUNDS_FOR = 30.0  # seconds the watchdog keeps looking while each look finds processes
_EXIT_WAIT = 15.0  # seconds the owner waits for the watchdog after closing its pipe


def sweep(directory: str, spare: set[int]) -> list[int]:
    """SIGKILL every process (pids in ``spare`` aside) that uses ``directory``; their pids."""
    killed = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit() or int(name) in spare:
            continue
        pid = int(name)
        try:  # a pidfd pins the process: the pid cannot be reused between the look and the kill
            handle = os.pidfd_open(pid)
        except (OSError, AttributeError):
            handle = None
        try:
            if _uses(pid, directory):
                if handle is not None:
                    signal.pidfd_send_signal(handle, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        except OSError:
            pass  # gone meanwhile, or not ours
        finally:
            if handle is not None:
                os.close(handle)
    return killed


def _uses(pid: int, directory: str) -> bool:
    """True if the process names ``directory`` on its command line or holds a file in it."""
    inside = directory.rstrip("/") + "/"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if inside.encode() in f.read():
                return True
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(inside):
            return True
    return False


def main(argv: list[str]) -> None:
    directory, owner = os.path.realpath(argv[1]), int(argv[2])  # /proc shows resolved paths
    # A Ctrl-C or a closed terminal stops the owner; this process must outlive it to clean up.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):
        pass
    spare = {os.getpid(), owner}  # a closing owner holds its own driver's logs there
    deadline = time.monotonic() + _ROUNDS_FOR
    while sweep(directory, spare) and time.monotonic() < deadline:
        time.sleep(0.1)  # a process killed by the last look may have started another
    shutil.rmtree(directory, ignore_errors=True)


class Reaper:
    """The owner's side: starts the watchdog for ``directory``; :meth:`close` ends it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(Path(__file__).resolve()), str(directory), str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,  # not in the owner's process group: a signal to it spares this
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    def close(self, *, wait: float = _EXIT_WAIT) -> bool:
        """Close the pipe (the watchdog then sweeps) and wait up to ``wait`` s; True if it ended."""
        stdin = self._process.stdin
        if stdin is not None and not stdin.closed:
            stdin.close()
        try:
            self._process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return False
        return True


if __name__ == "__main__":
    main(sys.argv)
