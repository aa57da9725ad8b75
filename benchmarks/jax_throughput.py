"""JAX env throughput: ``household_v0.jax_env`` beside JaxMARL's Overcooked and the numpy core.

Agent-steps per second (ticks x households x agents), 1024 households of 3 agents on
``apartment`` (``prepare_afternoon_tea``), uniform random action ids, all rows in one
run taking turns in short slices (each row reports its best slice, per wall-clock second
and per CPU second; XLA spreads a step over every core, numpy uses one):

* ``household_v0.jax_env``: ``reset`` / ``step`` ``vmap``-ed over the households and
  stepped ``T`` times in one ``jit``-compiled ``lax.scan`` (compile excluded: every row
  runs once before the clock), random actions drawn inside; the observations are
  consumed (summed into the scan's carry, as a policy would read them all), so XLA
  cannot drop them. Rows: flat float32 at the default ``view_radius=7`` (8,764 entries
  per agent), the same as uint8, ``view_radius=2`` (1,164 entries) in float32 and
  uint8, and the env with its observations not read (dynamics, rewards, autoreset).
* JaxMARL's Overcooked ``cramped_room`` (2 agents, 5 x 4 x 26 = 520 entries per
  agent), the same scan, the same consumption; skipped with the reason if ``jaxmarl``
  does not import.
* The numpy core (``household_v0.vector_env``, flat float32 and uint8) at 1024
  households, ``copy=True`` (the default) and ``copy=False``, one ``step`` per call,
  households spread over the episode (``vector_throughput.vector_step_fn``).

Nothing is asserted: it measures. ``python benchmarks/jax_throughput.py [--seconds 2]
[--rounds 6]``. GPU: not measured here (run it where JAX sees one).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vector_throughput import vector_step_fn  # noqa: E402

N, AGENTS, LAYOUT, TASK = 1024, 3, "apartment", "prepare_afternoon_tea"


def scan_fn(env: object, steps: int, consume: bool = True) -> Callable[[int], int]:
    """One call: ``steps`` ticks of ``N`` households of a JaxMARL-shaped env in one jitted
    ``lax.scan`` (state carried from call to call); returns the agent-steps done."""
    import jax
    import jax.numpy as jnp

    agents = env.agents
    n_act = env.action_space(agents[0]).n

    def run(state, key):
        def tick(carry, k):
            state, total = carry
            k_act, k_step = jax.random.split(k)
            acts = jax.random.randint(k_act, (len(agents), N), 0, n_act)
            obs, state, rew, dones, _ = jax.vmap(env.step)(
                jax.random.split(k_step, N), state, dict(zip(agents, acts)))
            total = total + rew[agents[0]].sum()
            if consume:
                total = total + sum(o.astype(jnp.float32).sum() for o in obs.values())
            return (state, total), None

        (state, total), _ = jax.lax.scan(tick, (state, jnp.float32(0)),
                                         jax.random.split(key, steps))
        return state, total

    run = jax.jit(run)
    _, state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), N))
    holder = {"state": state}

    def call(i: int) -> int:
        state, total = run(holder["state"], jax.random.PRNGKey(i))
        total.block_until_ready()
        holder["state"] = state
        return steps * N * len(agents)

    call(0)  # compile outside the measurement
    return call


def measure(rows: dict[str, Callable[[int], int]], seconds: float, rounds: int
            ) -> dict[str, tuple[float, float]]:
    """Rows take turns, ``rounds`` slices of about ``seconds`` wall time each; per row the
    best slice's (agent-steps per wall second, per CPU second)."""
    best = {name: (0.0, 0.0) for name in rows}
    i = 1
    for _ in range(rounds):
        for name, call in rows.items():
            done, wall0, cpu0 = 0, time.perf_counter(), time.process_time()
            while True:
                done += call(i)
                i += 1
                wall = time.perf_counter() - wall0
                if wall >= seconds:
                    break
            cpu = time.process_time() - cpu0
            rate = (done / wall, done / cpu)
            if rate[0] > best[name][0]:
                best[name] = rate
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="wall time per slice")
    parser.add_argument("--rounds", type=int, default=6, help="slices per row")
    args = parser.parse_args(argv)
    import jax

    from orgteams.envs import household_v0

    rows: dict[str, Callable[[int], int]] = {}
    sizes: dict[str, str] = {}
    try:
        from jaxmarl import make
        from jaxmarl.environments.overcooked import overcooked_layouts

        oc = make("overcooked", layout=overcooked_layouts["cramped_room"])
        space = oc.observation_space(oc.agents[0])
        name = "JaxMARL Overcooked cramped_room (2 agents)"
        rows[name] = scan_fn(oc, 64)
        sizes[name] = f"{int(np.prod(space.shape))} ({'x'.join(map(str, space.shape))})"
    except Exception as exc:  # noqa: BLE001  (a peer that does not import is reported)
        print(f"JaxMARL row skipped ({type(exc).__name__}: {exc})")
    kw = dict(layout=LAYOUT, task=TASK, num_agents=AGENTS, episodes=1000)
    for label, extra, steps, consume in [
            ("flat float32, view_radius=7", {}, 4, True),
            ("flat uint8, view_radius=7", {"obs_dtype": np.uint8}, 8, True),
            ("flat float32, view_radius=2", {"view_radius": 2}, 32, True),
            ("flat uint8, view_radius=2", {"view_radius": 2, "obs_dtype": np.uint8}, 32, True),
            ("observations not read", {}, 64, False)]:
        env = household_v0.jax_env(**kw, **extra)
        name = f"jax_env {LAYOUT}, {label}"
        rows[name] = scan_fn(env, steps, consume)
        space = env.observation_space(env.agents[0])
        sizes[name] = "-" if not consume else f"{space.shape[0]} {np.dtype(space.dtype).name}"
    for label, extra in [("copy=True (default)", {}), ("copy=False", {"copy": False}),
                         ("uint8, copy=True", {"obs_dtype": np.uint8}),
                         ("uint8, copy=False", {"copy": False, "obs_dtype": np.uint8})]:
        name = f"vector_env (numpy) {LAYOUT}, {label}"
        rows[name] = vector_step_fn(N, **extra)
        sizes[name] = f"8764 {'uint8' if 'uint8' in label else 'float32'}"
    best = measure(rows, args.seconds, args.rounds)
    print(f"{N} households x {AGENTS} agents ({LAYOUT}, {TASK}; Overcooked: {N} x 2), random "
          f"actions, observations summed; JAX {jax.__version__} on "
          f"{jax.devices()[0].platform.upper()}, {os.cpu_count()} cores; best of "
          f"{args.rounds} slices of {args.seconds:g} s")
    ref = next((n for n in best if n.startswith("JaxMARL")), None)
    head = "vs Overcooked (wall, CPU)" if ref else ""
    print(f"{'row':<52} {'obs per agent':>18} {'agent-steps/s':>14} {'per CPU s':>12} {head}")
    for name, (wall, cpu) in best.items():
        ratio = f"{wall / best[ref][0]:8.2f}x {cpu / best[ref][1]:6.2f}x" if ref else ""
        print(f"{name:<52} {sizes[name]:>18} {wall:>14,.0f} {cpu:>12,.0f} {ratio}")
    for col, per in ((0, "wall"), (1, "CPU")):
        copy_true = best[f"vector_env (numpy) {LAYOUT}, copy=True (default)"][col]
        copy_false = best[f"vector_env (numpy) {LAYOUT}, copy=False"][col]
        u_true = best[f"vector_env (numpy) {LAYOUT}, uint8, copy=True"][col]
        u_false = best[f"vector_env (numpy) {LAYOUT}, uint8, copy=False"][col]
        print(f"numpy core copy=True / copy=False per {per} second: float32 "
              f"{copy_true / copy_false:.2f}x, uint8 {u_true / u_false:.2f}x")


if __name__ == "__main__":
    main()
