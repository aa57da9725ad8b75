"""Where a tick of the batched core goes: the observation copies, and the resets.

Two questions of issue #16, each answered by rows measured side by side (CPU-time
slices taking turns, as ``vector_throughput.py``; best slice per row):

* **Copies** (``obs_mode="flat"``, float32, 3 agents on ``apartment``, uniform random
  actions) at 1,024 and 4,096 households: ``copy=True`` as it is now (the flat buffer
  copied into arrays recycled once the caller dropped them,
  :mod:`orgteams.envs.vector.outputs`); the caller copying a ``copy=False`` result
  itself (a fresh array every tick); the observations built anew into a fresh array
  every tick (what ``copy=True`` did before: the benchmark switches the env's buffer
  off); ``copy=False`` (no copy). Per row also the page faults (``getrusage``
  ``ru_minflt``), kernel CPU time, and the host's transparent-huge-page faults and
  fallbacks (``/proc/vmstat``) per tick.
* **Resets** at 1,024 households (``copy=False``): households spread over the episode
  so that about 1.8 of them finish and draw their next episode per tick, beside the
  same env whose households never finish (step limits raised): the difference of
  their ms per tick is what resets cost. And the tick in which every household
  truncates at once (as after a ``reset()`` of all, under a policy that never succeeds).

``--refault`` adds the cost of fresh memory on its own: kernel time to touch a
430 MB array right after freeing the last one, and 3 s after (on a VM that hands freed
memory back to its host, the second is the expensive one). Nothing is asserted: it
measures. ``NUMPY_MADVISE_HUGEPAGE=0`` in the environment
shows the copies with 4 KB pages (what a host without free huge pages gives).

Run: ``python benchmarks/env/vector_tick_costs.py [--seconds 2] [--sizes 1024,4096]
[--refault]``.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from orgteams.envs import household_v0
from orgteams.envs.core.actions import NUM_ACTIONS

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import parser  # noqa: E402
from vector_throughput import AGENTS, LAYOUT, TABLES, TASK, measure  # noqa: E402

VMSTAT = ("thp_fault_alloc", "thp_fault_fallback", "compact_stall")


def _vmstat() -> dict[str, int]:
    try:
        with open("/proc/vmstat") as f:
            found = dict(line.split() for line in f)
    except OSError:  # not Linux: no counters
        return {}
    return {k: int(found.get(k, 0)) for k in VMSTAT}


class Counted:
    """A step function that also adds up its ticks, page faults, kernel time and THP
    counters."""

    def __init__(self, step: Callable[[int], int]):
        self.step, self.ticks, self.minflt, self.kernel = step, 0, 0, 0.0
        self.resets = 0  # households that finished and drew their next episode
        self.thp = dict.fromkeys(VMSTAT, 0)

    def __call__(self, i: int) -> int:
        r0, v0 = resource.getrusage(resource.RUSAGE_SELF), _vmstat()
        done = self.step(i)
        r1, v1 = resource.getrusage(resource.RUSAGE_SELF), _vmstat()
        self.ticks += 1
        self.minflt += r1.ru_minflt - r0.ru_minflt
        self.kernel += r1.ru_stime - r0.ru_stime
        for k in v1:
            self.thp[k] += v1[k] - v0[k]
        return done


def step_fn(num_envs: int, how: str, finish: bool = True, **kwargs) -> Counted:
    """``how``: "recycled" (copy=True), "caller copies" (copy=False, then ``.copy()``),
    "built anew" (copy=True without the buffer, as before), "no copy" (copy=False)."""
    copy = how in ("recycled", "built anew")
    vec = household_v0.vector_env(num_envs, layout=LAYOUT, task=TASK, num_agents=AGENTS,
                                  obs_mode="flat", seed=0, copy=copy, **kwargs)
    if how == "built anew":
        vec._buffered = lambda: False  # the float32 copy=True path before the pool
    vec.reset()
    rng = np.random.default_rng(1)
    batch = vec._batch  # the benchmark reaches in: no public API sets a tick
    batch.tick[:] = rng.integers(0, batch.step_limit)
    if not finish:
        batch.step_limit[:] = np.iinfo(np.int64).max
    table = rng.integers(0, NUM_ACTIONS, size=(TABLES, num_envs, AGENTS))
    held = [None]  # the caller keeps the last observations while asking for the next

    def step(i: int) -> int:
        obs, _, _, _, infos = vec.step(table[i % TABLES])
        held[0] = obs.copy() if how == "caller copies" else obs
        counted.resets += int(infos["_final_obs"].sum()) if "_final_obs" in infos else 0
        return num_envs * AGENTS

    counted = Counted(step)
    return counted


def refault(pause: float, rounds: int = 6, entries: int = 4096 * AGENTS * 8764
            ) -> list[float]:
    """Kernel ms to fault in a fresh float32 array of ``entries`` (a 4,096-household
    batch of observations) when the last one was freed ``pause`` seconds before."""
    out = []
    for _ in range(rounds):
        time.sleep(pause)
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        np.ones(entries, np.float32)  # allocated, touched, freed
        out.append(1e3 * (resource.getrusage(resource.RUSAGE_SELF).ru_stime - r0.ru_stime))
    return out


def storm(num_envs: int = 1024, rounds: int = 6) -> tuple[float, float]:
    """CPU ms of a tick in which all ``num_envs`` households truncate together
    (``max_ticks=5``, ``copy=False``), and of a tick in which none does: best of
    ``rounds``."""
    vec = household_v0.vector_env(num_envs, layout=LAYOUT, task=TASK, num_agents=AGENTS,
                                  obs_mode="flat", seed=0, max_ticks=5, copy=False)
    vec.reset()
    waits = np.zeros((num_envs, AGENTS), np.int64)
    best_all, best_none = np.inf, np.inf
    for _ in range(rounds):
        for _ in range(4):
            start = time.process_time()
            vec.step(waits)
            best_none = min(best_none, time.process_time() - start)
        start = time.process_time()
        truncated = vec.step(waits)[3]
        best_all = min(best_all, time.process_time() - start)
        if not truncated.all():
            raise RuntimeError("the storm tick did not truncate every household")
    return 1e3 * best_all, 1e3 * best_none


def main(argv: list[str] | None = None) -> None:
    options = parser(__doc__)
    options.add_argument("--seconds", type=float, default=2.0, help="CPU time per row")
    options.add_argument("--sizes", default="1024,4096", help="households, comma-separated")
    options.add_argument("--refault", action="store_true",
                         help="also: kernel time to touch a fresh 430 MB array right after "
                              "freeing the last one vs 3 s later (about 40 s of waiting)")
    args = options.parse_args(argv)
    if args.refault:
        for pause in (0.0, 3.0):
            ms = refault(pause)
            print(f"fresh 430 MB array, last one freed {pause:g} s before: kernel ms "
                  + " ".join(f"{x:.0f}" for x in ms))
    rows: dict[str, Counted] = {}
    for n in (int(x) for x in args.sizes.split(",")):
        for how in ("recycled", "caller copies", "built anew", "no copy"):
            rows[f"{n} households, {how}"] = step_fn(n, how)
    rows["1024 households, copy=False, resets"] = step_fn(1024, "no copy")
    rows["1024 households, copy=False, no episode ends"] = step_fn(1024, "no copy",
                                                                  finish=False)
    best, _ = measure(rows, args.seconds)
    print(f"batched core tick costs ({LAYOUT}, {TASK}, {AGENTS} agents, flat float32, "
          f"random actions, {args.seconds:g} CPU s per row; NUMPY_MADVISE_HUGEPAGE="
          f"{os.environ.get('NUMPY_MADVISE_HUGEPAGE', 'unset')})")
    print(f"{'row':<46} {'agent-steps/s':>13} {'ms/tick':>8} {'faults/tick':>11} "
          f"{'kernel ms/tick':>14} {'THP faults, fallbacks, compaction stalls/tick':>45}")
    for name, rate in best.items():
        c = rows[name]
        per_tick = 1e3 * int(name.split()[0]) * AGENTS / rate
        thp = ", ".join(f"{c.thp[k] / c.ticks:.0f}" for k in VMSTAT) if _vmstat() else "-"
        print(f"{name:<46} {rate:>13,.0f} {per_tick:>8.2f} {c.minflt / c.ticks:>11,.0f} "
              f"{1e3 * c.kernel / c.ticks:>14.2f} {thp:>45}")
    with_resets = 1e3 * 1024 * AGENTS / best["1024 households, copy=False, resets"]
    without = 1e3 * 1024 * AGENTS / best["1024 households, copy=False, no episode ends"]
    every, none = storm()
    print(f"all 1024 households truncating in one tick: {every:.0f} ms (a tick without "
          f"ends: {none:.1f} ms; best of 6, max_ticks=5, copy=False)")
    resets = rows["1024 households, copy=False, resets"]
    print(f"resets cost {with_resets - without:.2f} ms of a {with_resets:.2f} ms tick "
          f"(1024 households, copy=False, {resets.resets / resets.ticks:.2f} households "
          "reset per tick)")


if __name__ == "__main__":
    main()
