"""The one progress bar on stderr for long work: ``record``, ``reflect`` iterations,
``reflect --evaluate`` (and its generalization table), ``sweep``, ``report`` over many
runs and every ``experiment`` recipe. rich when installed, else a plain line now and
then (and always plain lines when stderr is not a terminal, e.g. a log file). stdout
stays clean for ``--json``."""

from __future__ import annotations

import sys
import time


class Progress:
    """``update(done)`` moves the bar to ``done`` of ``total``; ``close()`` ends it.

    Args:
        total: the count at which the work is done (e.g. an episode's tick limit).
        label: what is counted, shown before the bar.
        enabled: False draws nothing (``--quiet``, ``--json``).
    """

    def __init__(self, total: int, label: str, enabled: bool = True):
        self.total, self.label, self.enabled = max(1, total), label, enabled
        self.done = 0
        self._rich = None
        self._started = False  # the bar appears with the first update, not before
        self._last_line = 0.0

    def _start(self) -> None:
        self._started = True
        if not sys.stderr.isatty():  # a log file or CI: rich would draw only at the end
            return
        try:
            from rich.console import Console
            from rich.progress import Progress as RichProgress
        except ImportError:  # rich is in the report extra
            return
        self._rich = RichProgress(console=Console(stderr=True), transient=False)
        self._rich.start()
        self._task = self._rich.add_task(self.label, total=self.total)

    def update(self, done: int, note: str = "", total: int | None = None) -> None:
        if self.enabled and not self._started:
            self._start()
        if total is not None:
            self.total = max(1, total)
            if self._rich is not None:
                self._rich.update(self._task, total=self.total)
        self.done = min(done, self.total)
        if not self.enabled:
            return
        if self._rich is not None:
            desc = f"{self.label} {note}".strip()
            self._rich.update(self._task, completed=self.done, description=desc)
        elif time.monotonic() - self._last_line > 2 or self.done == self.total:
            self._last_line = time.monotonic()
            print(f"{self.label} {note}".rstrip() + f": {self.done}/{self.total}",
                  file=sys.stderr)

    def finish(self, note: str = "") -> None:
        """The work ended where it is now (an episode that met its goal before its tick
        limit): the bar ends full, at ``done`` of ``done``."""
        if self._started:
            self.update(self.done, note, total=max(self.done, 1))

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
