"""What the benchmarks share: their command line, the machine's load, rates measured side
by side, paired ratios and markdown table rows. Nothing here asserts: it measures.

Each benchmark runs as a script (``python benchmarks/GROUP/NAME.py``, GROUP the folder of
what it measures), so its own folder is first on ``sys.path`` (it imports its neighbours
by name); the line above its ``from harness import ...`` puts this folder, one up, on
``sys.path`` too, so the import works from any working directory.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from statistics import median
from typing import Any

import numpy as np

__all__ = ["cores_and_load", "cpu_slice", "load_average", "markdown_row", "markdown_rule",
           "paired_ratio", "parser", "random_steps", "run_local", "take_turns"]

Step = Callable[[int], float]
"""``step(i)`` plays the ``i``-th pre-drawn tick and returns the agent-steps it played
(or the work it did)."""


def parser(doc: str) -> argparse.ArgumentParser:
    """A benchmark's command line, described by the first line of its docstring ``doc``."""
    return argparse.ArgumentParser(description=doc.splitlines()[0])


def load_average() -> str:
    """The machine's load average over 1, 5 and 15 minutes: ``"0.52, 0.61, 0.70"``."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def cores_and_load() -> str:
    """``"cores: 2, load average at start: 0.52, 0.61, 0.70"`` (a shared machine's other
    jobs show in the load; print it before and after what is measured)."""
    return f"cores: {os.cpu_count()}, load average at start: {load_average()}"


def run_local(body: Callable[[], Any]) -> int:
    """Run ``body``, a benchmark's part that needs the embedded model: 0, or 2 with one
    line ``cannot run: ...`` on stderr when the ``local`` extra or the model file is
    missing."""
    try:
        body()
    except (ImportError, FileNotFoundError) as exc:
        print(f"cannot run: {exc}", file=sys.stderr)
        return 2
    return 0


def random_steps(env: Any, low: int, high: int) -> Step:
    """Ticks of a PettingZoo parallel ``env`` with joint actions drawn ahead of time
    (4,096 rows, uniform in ``[low, high)``, seed 0), reset when its episode ends."""
    env.reset(seed=0)
    agents = list(env.possible_agents)
    n = len(agents)
    table = np.random.default_rng(0).integers(low, high, size=(4096, n)).tolist()

    def step(i: int) -> int:
        if not env.agents:
            env.reset()
        env.step(dict(zip(agents, table[i % 4096])))
        return n

    return step


def cpu_slice(step: Step, seconds: float, i: int, batch: int = 50) -> tuple[float, int]:
    """Call ``step(i), step(i + 1), ...`` for about ``seconds`` of this process's CPU time
    (``time.process_time``, at least one ``batch``), reading the clock after every
    ``batch`` calls (1 where one call is a large part of a slice); returns (the sum of
    what the calls returned, e.g. agent-steps, per CPU second; the next i)."""
    done = 0
    start = time.process_time()
    while True:
        for _ in range(batch):
            done += step(i)
            i += 1
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return done / elapsed, i


def take_turns(steps: dict[str, Step], seconds: float, rounds: int = 10, batch: int = 50
               ) -> tuple[dict[str, float], list[dict[str, float]]]:
    """Agent-steps/s of each row, about ``seconds`` of CPU time each: (best, per round).

    The time is cut into ``rounds`` slices and the rows take turns, one slice each per
    round, so a slow spell of the shared machine falls on all of them alike. The best
    slice counts (as ``timeit`` reports the minimum: a slice that another job slowed
    down says nothing about the row); the per-round rates give paired ratios
    (:func:`paired_ratio`). ``batch``: see :func:`cpu_slice`.
    """
    best = dict.fromkeys(steps, 0.0)
    counters = dict.fromkeys(steps, 0)
    per_round = []
    for _ in range(rounds):
        this_round = {}
        for name, step in steps.items():
            this_round[name], counters[name] = cpu_slice(step, seconds / rounds,
                                                         counters[name], batch)
            best[name] = max(best[name], this_round[name])
        per_round.append(this_round)
    return best, per_round


def paired_ratio(rounds: list[dict[str, float]], row: str, other: str) -> str:
    """``row``'s rate over ``other``'s, round by round (rows that took turns):
    ``"12.9x, 9.8-16.6x"``, the median and the range."""
    ratios = sorted(r[row] / r[other] for r in rounds)
    return f"{median(ratios):.1f}x, {ratios[0]:.1f}-{ratios[-1]:.1f}x"


def markdown_row(*cells: object) -> str:
    """One row of a markdown table: ``| a | b |``."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown_rule(align: str) -> str:
    """The rule under a markdown table's header, a letter a column (``l`` left, ``r``
    right): ``"lr"`` is ``|---|---:|``."""
    return "|" + "".join("---:|" if a == "r" else "---|" for a in align)
