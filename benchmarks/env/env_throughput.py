"""Environment throughput: household_v0 side by side with peer environments.

Random valid actions (drawn ahead of time from each env's action space), no
rendering, array observations. Prints agent-steps per second (ticks x agents) for
household_v0 at 3, 8, 64 and 256 agents and for the peers that are installed
(PettingZoo MPE ``simple_spread``, MiniGrid ``MiniGrid-MultiRoom-N6-v0``,
Overcooked-AI ``cramped_room``), the ratio of ours at 3 agents to each peer, the
per-tick cost per agent from 3 to 256 agents on one large generated house, and the
time of ``env.unwrapped.describe(agent)``. Our envs and the peers take turns in short
CPU-time slices and each reports its best slice, so the ratios hold up on a noisy
shared machine. Nothing is asserted: it measures.

Run: ``python benchmarks/env/env_throughput.py [--seconds 2]``.
"""

from __future__ import annotations

import sys
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np

from orgteams.envs import household_v0
from orgteams.envs.core.actions import NUM_ACTIONS

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import paired_ratio, parser, random_steps, take_turns  # noqa: E402

BIG_LAYOUT = "generated:32:0"
TASK = "prepare_afternoon_tea"


def household_step_fn(num_agents: int, layout: str, moves_only: bool = False
                      ) -> Callable[[int], int]:
    """One tick of household_v0 with pre-drawn random actions (reset when it ends).

    ``moves_only``: actions 1-4 only. Uniform random ids are mostly interactions that
    leave agents where they are, which some of the env's caches favour; agents that
    walk every tick show the cost without that help.
    """
    env = household_v0.parallel_env(layout=layout, task=TASK, num_agents=num_agents)
    return random_steps(env, *((1, 5) if moves_only else (0, NUM_ACTIONS)))


def mpe_step_fn() -> tuple[Callable[[int], int], str]:
    try:
        from mpe2 import simple_spread_v3
        source = "mpe2"
    except ImportError:
        from pettingzoo.mpe import simple_spread_v3  # older PettingZoo ships MPE itself
        source = "pettingzoo.mpe"
    env = simple_spread_v3.parallel_env(N=3, max_cycles=25)
    return random_steps(env, 0, 5), f"simple_spread_v3 N=3 ({source})"


def minigrid_step_fn() -> tuple[Callable[[int], int], str]:
    import gymnasium as gym
    import minigrid  # noqa: F401  (registers the MiniGrid envs)

    env = gym.make("MiniGrid-MultiRoom-N6-v0")
    env.reset(seed=0)
    table = np.random.default_rng(0).integers(0, env.action_space.n, size=4096).tolist()

    def step(i: int) -> int:
        _, _, term, trunc, _ = env.step(table[i % 4096])
        if term or trunc:
            env.reset()
        return 1

    return step, "MiniGrid-MultiRoom-N6-v0 (1 agent)"


def overcooked_step_fn() -> tuple[Callable[[int], int], str]:
    note = ""
    if not hasattr(np, "Inf"):  # overcooked-ai 1.1 still uses np.Inf, removed in NumPy 2
        np.Inf = np.inf
        note = ", np.Inf shim"
    from overcooked_ai_py.mdp.actions import Action
    from overcooked_ai_py.mdp.overcooked_env import OvercookedEnv
    from overcooked_ai_py.mdp.overcooked_mdp import OvercookedGridworld

    mdp = OvercookedGridworld.from_layout_name("cramped_room")
    env = OvercookedEnv.from_mdp(mdp, horizon=400, info_level=0)
    env.reset()
    acts = Action.ALL_ACTIONS
    table = np.random.default_rng(0).integers(0, len(acts), size=(4096, 2)).tolist()

    def step(i: int) -> int:
        a, b = table[i % 4096]
        state, _, done, _ = env.step((acts[a], acts[b]))
        mdp.lossless_state_encoding(state)  # the array observation RL code uses
        if done:
            env.reset()
        return 2

    return step, f"cramped_room (2 agents, lossless encoding{note})"


def describe_us(num_agents: int, layout: str) -> float:
    env = household_v0.parallel_env(layout=layout, task=TASK, num_agents=num_agents)
    env.reset(seed=0)
    for _ in range(20):
        env.step({a: 1 + (i % 4) for i, a in enumerate(env.agents)})
    n = 2000
    return 1e6 * min(timeit.repeat(lambda: env.unwrapped.describe("agent_0"), number=n,
                                   repeat=3)) / n


def main(argv: list[str] | None = None) -> None:
    options = parser(__doc__)
    options.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    args = options.parse_args(argv)
    sec = args.seconds

    ours = {3: "apartment", 8: "apartment", 64: BIG_LAYOUT, 256: BIG_LAYOUT}
    steps = {f"household_v0 {layout}/{n}": household_step_fn(n, layout)
             for n, layout in ours.items()}
    moving = f"household_v0 {ours[3]}/3, moves only"
    steps[moving] = household_step_fn(3, ours[3], moves_only=True)
    peers: dict[str, str] = {}  # label -> row name, or why it was skipped
    for label, make in (("MPE", mpe_step_fn), ("MiniGrid", minigrid_step_fn),
                        ("Overcooked-AI", overcooked_step_fn)):
        try:
            step, name = make()
        except Exception as exc:  # a peer that will not install or import is skipped
            peers[label] = f"skipped ({type(exc).__name__}: {exc})"
            continue
        peers[label] = f"{label} {name}"
        steps[peers[label]] = step
    rates, rounds = take_turns(steps, sec)

    print(f"household_v0 throughput (task {TASK}, random actions, array obs, {sec:g} s each, "
          "all envs taking turns)")
    print(f"{'env':<48} {'agents':>6} {'agent-steps/s':>14}")
    for n, layout in ours.items():
        rate = rates[f"household_v0 {layout}/{n}"]
        print(f"{'household_v0 ' + layout:<48} {n:>6} {rate:>14,.0f}")
    print(f"{'household_v0 ' + ours[3] + ', moves only (see note)':<48} {3:>6} "
          f"{rates[moving]:>14,.0f}")
    ours3_key = f"household_v0 {ours[3]}/3"
    ours3 = rates[ours3_key]
    print("\npeers (same machine, same run)")
    for label, row in peers.items():
        if row not in rates:
            print(f"{label + ':':<15} {row}")
            continue
        print(f"{row:<48} {'':>6} {rates[row]:>14,.0f}   ours@3 / this = "
              f"{ours3 / rates[row]:.1f}x (round by round: median "
              f"{paired_ratio(rounds, ours3_key, row)})")

    print(f"\nper-tick cost per agent on {BIG_LAYOUT}")
    print(f"{'agents':>6} {'us/tick':>10} {'us/tick/agent':>14}")
    for n in (3, 8, 16, 32, 64, 128, 256):
        best, _ = take_turns({"one": household_step_fn(n, BIG_LAYOUT)}, sec / 2, rounds=5)
        per_tick = 1e6 * n / best["one"]
        print(f"{n:>6} {per_tick:>10.1f} {per_tick / n:>14.2f}")

    print("\nenv.unwrapped.describe(agent) time")
    for n, layout in ((3, "apartment"), (256, BIG_LAYOUT)):
        print(f"  {n:>3} agents on {layout:<16} {describe_us(n, layout):8.1f} us")


if __name__ == "__main__":
    main()
