"""Batched core throughput: ``household_v0.vector_env`` beside the scalar env and SuperSuit.

Agent-steps per CPU second (ticks x households x agents) with uniform random action
ids drawn ahead of time, ``obs_mode="flat"`` observations and action masks built
every tick, 3 agents on ``apartment``:

* the batched core (numpy) at 1, 64, 1024 and 4096 households;
* the scalar env (``household_v0.parallel_env``, one household per step call);
* SuperSuit's ``concat_vec_envs_v1`` over ``pettingzoo_env_to_vec_env_v1`` (8 copies),
  the PettingZoo recipe RL code uses;
* for reference, at 1024 households: the batched core without observations
  (``observations=False``: the dynamics, rewards and masks alone), returning its one
  updated array instead of a copy (``copy=False``), raw uint8 entries
  (``obs_dtype=np.uint8``), both, and with a small view (``view_radius=2``);
* the same with every agent trying to move every tick (action ids 1-4 only, "moves
  only"): the flat buffer rewrites the whole window of each agent whose cell changed,
  and uniform random ids move only about 5% of the agents per tick, a trained policy
  many more.

The default ``copy=True`` (each step an array of the caller's own) is also put over
``copy=False`` round by round, in float32, uint8 and moves only (the target: 0.8x).

All rows take turns in short CPU-time slices (as ``env_throughput.py``) and each
reports its best slice; the ratios to the scalar env are also paired round by round.
Households start at spread-out ticks so that episodes end (and households reset,
drawing their next episode with the scalar ``make_episode``) at the steady rate of a
long run, not all at once. Nothing is asserted: it measures.

``--jax`` adds ``backend="jax"`` rows (on this machine's CPU; XLA uses every core,
and CPU time counts them all).

Run: ``python benchmarks/env/vector_throughput.py [--seconds 2] [--sizes 1,64,1024,4096]
[--jax]``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from statistics import median

import numpy as np

from orgteams.envs import household_v0
from orgteams.envs.core.actions import NUM_ACTIONS

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import paired_ratio, parser, random_steps, take_turns  # noqa: E402

LAYOUT, TASK, AGENTS = "apartment", "prepare_afternoon_tea", 3
TABLES = 16  # pre-drawn joint actions per row, cycled


def measure(steps: dict[str, Callable[[int], int]], seconds: float
            ) -> tuple[dict[str, float], list[dict[str, float]]]:
    """Best slice per row, and every round's rates (env_throughput's method), in 8 rounds
    whose slices read the clock after every call: one call of 4096 households takes a
    large part of a slice."""
    return take_turns(steps, seconds, rounds=8, batch=1)


def vector_step_fn(num_envs: int, moves_only: bool = False, **kwargs) -> Callable[[int], int]:
    vec = household_v0.vector_env(num_envs, layout=LAYOUT, task=TASK, num_agents=AGENTS,
                                  obs_mode="flat", seed=0, **kwargs)
    vec.reset()
    # Spread the households over the episode (what a long run looks like): only the
    # tick counter moves, so each household's episode ends at its own time.
    rng = np.random.default_rng(1)
    batch = vec._batch  # the benchmark reaches in: no public API sets a tick
    batch.tick[:] = rng.integers(0, batch.step_limit)
    low, high = (1, 5) if moves_only else (0, NUM_ACTIONS)  # Verb.MOVE: ids 1-4
    table = rng.integers(low, high, size=(TABLES, num_envs, AGENTS))

    def step(i: int) -> int:
        vec.step(table[i % TABLES])
        return num_envs * AGENTS

    return step


def scalar_step_fn() -> Callable[[int], int]:
    return random_steps(household_v0.parallel_env(layout=LAYOUT, task=TASK, num_agents=AGENTS,
                                                  obs_mode="flat"), 0, NUM_ACTIONS)


def supersuit_step_fn(copies: int = 8) -> Callable[[int], int]:
    import supersuit as ss

    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(household_v0.parallel_env(
        layout=LAYOUT, task=TASK, num_agents=AGENTS, obs_mode="flat")), copies, num_cpus=0,
        base_class="gymnasium")
    venv.reset(seed=0)
    n = copies * AGENTS
    table = np.random.default_rng(0).integers(0, NUM_ACTIONS, size=(TABLES, n))

    def step(i: int) -> int:
        venv.step(table[i % TABLES])
        return n

    return step


def main(argv: list[str] | None = None) -> None:
    options = parser(__doc__)
    options.add_argument("--seconds", type=float, default=2.0, help="CPU time per row")
    options.add_argument("--sizes", default="1,64,1024,4096",
                         help="households of the batched core, comma-separated")
    options.add_argument("--jax", action="store_true",
                         help="also backend='jax' (CPU here) at 1024 households, compiled "
                              "before the clock starts")
    args = options.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    rows: dict[str, Callable[[int], int]] = {"scalar env (parallel_env)": scalar_step_fn()}
    try:
        rows["SuperSuit concat_vec_envs_v1 x8"] = supersuit_step_fn()
    except ImportError as exc:
        print(f"SuperSuit row skipped ({exc})")
    for n in sizes:
        rows[f"vector_env, {n} households"] = vector_step_fn(n)
    big = 1024 if 1024 in sizes else max(sizes)  # the goal of #16 is stated at 1024
    rows[f"vector_env, {big} households, observations=False"] = vector_step_fn(
        big, observations=False)
    rows[f"vector_env, {big} households, copy=False"] = vector_step_fn(big, copy=False)
    rows[f"vector_env, {big} households, obs_dtype=uint8"] = vector_step_fn(
        big, obs_dtype=np.uint8)
    rows[f"vector_env, {big} households, copy=False, uint8"] = vector_step_fn(
        big, copy=False, obs_dtype=np.uint8)
    rows[f"vector_env, {big} households, moves only"] = vector_step_fn(big, moves_only=True)
    rows[f"vector_env, {big} households, moves only, copy=False"] = vector_step_fn(
        big, moves_only=True, copy=False)
    rows[f"vector_env, {big} households, moves only, copy=False, uint8"] = vector_step_fn(
        big, moves_only=True, copy=False, obs_dtype=np.uint8)
    rows[f"vector_env, {big} households, view_radius=2"] = vector_step_fn(big, view_radius=2)
    if args.jax:
        for n in (64, big):
            step = vector_step_fn(n, backend="jax")
            step(0)  # compile outside the measurement
            rows[f"vector_env backend=jax (CPU), {n} households"] = step
    best, rounds = measure(rows, args.seconds)
    scalar = "scalar env (parallel_env)"
    print(f"household_v0 batched core ({LAYOUT}, {TASK}, {AGENTS} agents, flat observations "
          f"and action masks every tick, random actions, {args.seconds:g} CPU s per row)")
    print(f"{'row':<62} {'agent-steps/s':>14}   vs scalar env (best; paired median, range)")
    for name, rate in best.items():
        print(f"{name:<62} {rate:>14,.0f}   {rate / best[scalar]:7.1f}x "
              f"({paired_ratio(rounds, name, scalar)})")
    # The default's cost: copy=True (an array of the caller's own each step) over
    # copy=False (one array updated in place), paired round by round (target 0.8x).
    print(f"copy=True / copy=False at {big} households (best; paired median, range):")
    for label, default, in_place in [
            ("float32", f"vector_env, {big} households",
             f"vector_env, {big} households, copy=False"),
            ("uint8", f"vector_env, {big} households, obs_dtype=uint8",
             f"vector_env, {big} households, copy=False, uint8"),
            ("moves only, float32", f"vector_env, {big} households, moves only",
             f"vector_env, {big} households, moves only, copy=False")]:
        ratios = sorted(r[default] / r[in_place] for r in rounds)
        print(f"  {label:<20} {best[default] / best[in_place]:.2f}x "
              f"({median(ratios):.2f}x, {ratios[0]:.2f}-{ratios[-1]:.2f}x)")


if __name__ == "__main__":
    main()
