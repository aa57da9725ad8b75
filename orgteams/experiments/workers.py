"""Sweep worker processes die with their parent, even when it is killed with ``kill -9``.

A worker may hold a llama.cpp server (one per process for ``local`` members); an
orphaned worker would keep it, and its cores, alive. :func:`worker_init` runs first in
every worker: on Linux the kernel sends it SIGTERM when the parent dies
(``prctl(PR_SET_PDEATHSIG)``); everywhere a daemon thread checks once a second that
the parent pid is still the worker's parent, and sends that SIGTERM itself. The
SIGTERM handler runs the exit hooks (``atexit``: a ``LocalServer`` stops its server
process) and exits at once.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import sys
import threading
import time

__all__ = ["WATCH_INTERVAL", "worker_init"]

WATCH_INTERVAL = 1.0
"""Seconds between the watchdog's checks of the parent pid."""
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _exit_now(signum: int, frame: object) -> None:
    # The worker may be anywhere (inside an episode, waiting for work): no clean
    # unwinding, but the exit hooks must run so child servers do not outlive us.
    atexit._run_exitfuncs()
    os._exit(128 + signum)


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(WATCH_INTERVAL)
    os.kill(os.getpid(), signal.SIGTERM)


def worker_init(parent_pid: int) -> None:
    """Make this worker exit when ``parent_pid`` (the sweep process) dies."""
    signal.signal(signal.SIGTERM, _exit_now)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # no prctl here: the watchdog below still works
    if os.getppid() != parent_pid:  # the parent died before we got here
        _exit_now(signal.SIGTERM, None)
    threading.Thread(target=_watch, args=(parent_pid,), daemon=True,
                     name="orgteams-parent-watch").start()
