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
* The ceiling of any encoder (:class:`CeilingEnv`), beside each jax_env row that reads
  observations: the same scan, action draws and consumption, with no dynamics and an
  observation of the same size and dtype per agent that costs next to nothing to make
  (``broadcast``: a constant row plus a number; ``row``: one row of a constant table,
  gathered). No encoder, however good, makes that env's observations faster, so if
  the ceiling is below Overcooked at the default view, the target "at or above
  Overcooked with observations" cannot be met on that machine by any encoder. The
  jax_env row over its ceiling is how close the encoder is to it.
* JaxMARL's Overcooked ``cramped_room`` (2 agents, 5 x 4 x 26 = 520 entries per
  agent), the same scan, the same consumption; skipped with the reason if ``jaxmarl``
  does not import.
* The numpy core (``household_v0.vector_env``, flat float32 and uint8) at 1024
  households, ``copy=True`` (the default) and ``copy=False``, one ``step`` per call,
  households spread over the episode (``vector_throughput.vector_step_fn``).

Nothing is asserted: it measures. ``python benchmarks/env/jax_throughput.py [--seconds 2]
[--rounds 6]``. ``--households N`` (default 1024), ``--steps T`` (ticks per jitted call
for every row; by default sized per row for a CPU) and ``--no-numpy`` (JAX rows only)
size it for an accelerator: where JAX sees a GPU the rows run on it, and the wall column
is the one to compare.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np
from vector_throughput import vector_step_fn

N, AGENTS, LAYOUT, TASK = 1024, 3, "apartment", "prepare_afternoon_tea"


def scan_fn(env: object, steps: int, consume: bool = True, households: int = N
            ) -> Callable[[int], int]:
    """One call: ``steps`` ticks of ``households`` households of a JaxMARL-shaped env in one
    jitted ``lax.scan`` (state carried from call to call); returns the agent-steps done."""
    import jax
    import jax.numpy as jnp

    agents = env.agents
    n_act = env.action_space(agents[0]).n

    def run(state, key):
        def tick(carry, k):
            state, total = carry
            k_act, k_step = jax.random.split(k)
            acts = jax.random.randint(k_act, (len(agents), households), 0, n_act)
            obs, state, rew, dones, _ = jax.vmap(env.step)(
                jax.random.split(k_step, households), state, dict(zip(agents, acts)))
            total = total + rew[agents[0]].sum()
            if consume:
                total = total + sum(o.astype(jnp.float32).sum() for o in obs.values())
            return (state, total), None

        (state, total), _ = jax.lax.scan(tick, (state, jnp.float32(0)),
                                         jax.random.split(key, steps))
        return state, total

    run = jax.jit(run)
    _, state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0),
                                                              households))
    holder = {"state": state}

    def call(i: int) -> int:
        state, total = run(holder["state"], jax.random.PRNGKey(i))
        total.block_until_ready()
        holder["state"] = state
        return steps * households * len(agents)

    call(0)  # compile outside the measurement
    return call


class CeilingEnv:
    """The ceiling of any observation encoder: a JaxMARL-shaped env whose step does no
    dynamics and whose observation per agent is the cheapest array of the given shape
    and dtype that XLA cannot fold away, so that the harness's scan, action draws, dict
    plumbing and reading of the observations are all that is left.

    ``mode="broadcast"``: a constant row plus the agent's position (one add per entry:
    any encoder writes at least this); ``mode="row"``: one row of a constant
    ``(cells, D)`` table, gathered at the agent's position (a table lookup: what the
    household's encoder starts from, ``core._planes_one``'s still planes). Positions
    move by the action id, modulo ``cells``, so each tick reads other rows."""

    def __init__(self, size: int, dtype: object, agents: int = AGENTS, mode: str = "row",
                 cells: int = 256):
        import jax.numpy as jnp

        self.agents = [f"agent_{i}" for i in range(agents)]
        self.mode, self.cells = mode, cells
        rng = np.random.default_rng(0)
        high = 2 if np.dtype(dtype) == np.uint8 else 1
        table = rng.integers(0, high + 1, size=(cells if mode == "row" else 1, size))
        self.table = jnp.asarray(table.astype(dtype))
        self.dtype = np.dtype(dtype)

    def action_space(self, agent: str) -> object:
        from types import SimpleNamespace

        return SimpleNamespace(n=53)

    def reset(self, key: object) -> tuple[dict, dict]:
        import jax
        import jax.numpy as jnp

        state = {"pos": jax.random.randint(key, (len(self.agents),), 0, self.cells),
                 "tick": jnp.int32(0)}
        return self._obs(state), state

    def step(self, key: object, state: dict, actions: dict) -> tuple:
        import jax.numpy as jnp

        acts = jnp.stack([actions[a] for a in self.agents])
        state = {"pos": (state["pos"] + acts) % self.cells, "tick": state["tick"] + 1}
        done = state["tick"] % 400 == 0
        dones = {a: done for a in self.agents} | {"__all__": done}
        return (self._obs(state), state, {a: jnp.float32(0) for a in self.agents}, dones,
                {})

    def _obs(self, state: dict) -> dict:
        pos = state["pos"]
        if self.mode == "row":
            return {a: self.table[pos[i]] for i, a in enumerate(self.agents)}
        return {a: self.table[0] + pos[i].astype(self.dtype)
                for i, a in enumerate(self.agents)}


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
    parser.add_argument("--households", type=int, default=N,
                        help="households per batch (the issue's comparison is at 1024)")
    parser.add_argument("--steps", type=int, default=None,
                        help="ticks per jitted call for every row (default: sized per row for "
                             "a CPU; on a GPU give all rows the same, e.g. 64, since a call's "
                             "own overhead there is not small against a few ticks)")
    parser.add_argument("--no-numpy", action="store_true",
                        help="leave out the numpy core's rows (JAX rows only)")
    args = parser.parse_args(argv)
    n = args.households
    import jax

    from orgteams.envs import household_v0

    rows: dict[str, Callable[[int], int]] = {}
    sizes: dict[str, str] = {}
    ceilings: dict[str, list[str]] = {}  # a jax_env row -> its ceiling rows
    try:
        from jaxmarl import make
        from jaxmarl.environments.overcooked import overcooked_layouts

        oc = make("overcooked", layout=overcooked_layouts["cramped_room"])
        space = oc.observation_space(oc.agents[0])
        name = "JaxMARL Overcooked cramped_room (2 agents)"
        rows[name] = scan_fn(oc, args.steps or 64, households=n)
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
        rows[name] = scan_fn(env, args.steps or steps, consume, households=n)
        space = env.observation_space(env.agents[0])
        sizes[name] = "-" if not consume else f"{space.shape[0]} {np.dtype(space.dtype).name}"
        if not consume:
            continue
        for mode in ("broadcast", "row"):  # the same observations, with no env around them
            ceiling = f"ceiling ({mode}), {label}"
            rows[ceiling] = scan_fn(CeilingEnv(space.shape[0], space.dtype, mode=mode),
                                    args.steps or 4 * steps, households=n)
            sizes[ceiling] = sizes[name]
            ceilings.setdefault(name, []).append(ceiling)
    numpy_rows = [] if args.no_numpy else [
        ("copy=True (default)", {}), ("copy=False", {"copy": False}),
        ("uint8, copy=True", {"obs_dtype": np.uint8}),
        ("uint8, copy=False", {"copy": False, "obs_dtype": np.uint8})]
    for label, extra in numpy_rows:
        name = f"vector_env (numpy) {LAYOUT}, {label}"
        rows[name] = vector_step_fn(n, **extra)
        sizes[name] = f"8764 {'uint8' if 'uint8' in label else 'float32'}"
    best = measure(rows, args.seconds, args.rounds)
    print(f"{n} households x {AGENTS} agents ({LAYOUT}, {TASK}; Overcooked: {n} x 2), random "
          f"actions, observations summed; JAX {jax.__version__} on "
          f"{jax.devices()[0].platform.upper()}, {os.cpu_count()} cores; best of "
          f"{args.rounds} slices of {args.seconds:g} s")
    if jax.devices()[0].platform != "cpu":
        print("on an accelerator compare the wall column: per CPU s counts the host's time only")
    ref = next((r for r in best if r.startswith("JaxMARL")), None)
    head = "vs Overcooked (wall, CPU)" if ref else ""
    print(f"{'row':<52} {'obs per agent':>18} {'agent-steps/s':>14} {'per CPU s':>12} {head}")
    for name, (wall, cpu) in best.items():
        ratio = f"{wall / best[ref][0]:8.2f}x {cpu / best[ref][1]:6.2f}x" if ref else ""
        print(f"{name:<52} {sizes[name]:>18} {wall:>14,.0f} {cpu:>12,.0f} {ratio}")
    print("each jax_env row against its ceilings (the same observations, no env: "
          "broadcast, row), per CPU second:")
    for name, names in ceilings.items():
        ratios = ", ".join(f"{best[name][1] / best[c][1]:.2f}x" for c in names)
        print(f"  {name:<52} {ratios}")
    if args.no_numpy:
        return
    for col, per in ((0, "wall"), (1, "CPU")):
        copy_true = best[f"vector_env (numpy) {LAYOUT}, copy=True (default)"][col]
        copy_false = best[f"vector_env (numpy) {LAYOUT}, copy=False"][col]
        u_true = best[f"vector_env (numpy) {LAYOUT}, uint8, copy=True"][col]
        u_false = best[f"vector_env (numpy) {LAYOUT}, uint8, copy=False"][col]
        print(f"numpy core copy=True / copy=False per {per} second: float32 "
              f"{copy_true / copy_false:.2f}x, uint8 {u_true / u_false:.2f}x")


if __name__ == "__main__":
    main()
