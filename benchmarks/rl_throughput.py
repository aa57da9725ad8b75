"""RL throughput: the raw env beside the training loops, and what action masks cost.

All on the easy setting of ``examples/train_ppo.py`` (studio, put_dishwasher_easy,
2 agents, one unit, full observability, subgoal shaping) unless a row says otherwise.
Prints, measured side by side in one run (CPU time of this process, so the host's
other jobs count less):

* the raw env's agent-steps/s with pre-drawn random actions: array observations with
  masks off and on (the difference is the masks' share of a tick), flat observations
  (what the training loop steps), and the same on ``apartment`` with 3 agents;
* what action masks cost per tick, as a share of the tick with masks off: as the env
  computes them (rows reused across ticks that change nothing they depend on) and from
  scratch, under uniform random action ids and under uniform random *valid* actions;
* the batched core (``household_v0.vector_env``) on the example's setting at 8 and 64
  households, and at 64 through the SB3 adapter (``orgteams.envs.vector.sb3``);
* the example's training loop (``train_ppo.make_model``: MaskablePPO, per-cell layer,
  4 epochs, 1 torch thread) collecting only (PPO updates off) and collecting + learning,
  over the scalar path (8 envs), the batched core (64 households, 32-tick rollouts) and
  SuperSuit's ``pettingzoo_env_to_vec_env_v1`` with SB3's PPO (the PettingZoo recipe),
  each beside its raw env (the scalar flat env, or the batched core at 64 households).

Run: ``python benchmarks/rl_throughput.py [--seconds 2] [--train-steps 8192]``
(needs the ``rl`` extra for the training rows; they are skipped without it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from orgteams.envs import household_v0
from orgteams.envs.actions import NUM_ACTIONS
from orgteams.envs.dynamics import transition
from orgteams.envs.masks import MaskCache, mask_rows

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "examples"))
from env_throughput import measure  # noqa: E402

EASY = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 2, "units": 1,
        "full_observability": True, "view_radius": 5, "reward_shaping": "subgoals"}


def step_fn(**kwargs):
    env = household_v0.parallel_env(**{**EASY, **kwargs})
    env.reset(seed=0)
    agents = list(env.possible_agents)
    table = np.random.default_rng(0).integers(0, NUM_ACTIONS, (4096, len(agents))).tolist()

    def step(i: int) -> int:
        if not env.agents:
            env.reset()
        env.step(dict(zip(agents, table[i % 4096])))
        return len(agents)

    return step


def mask_cost(masked: bool, ticks: int = 3000, **kwargs) -> tuple[float, float, float]:
    """(masks with reuse, masks from scratch, the env's tick), us per tick.

    Plays ``ticks`` ticks of uniform random action ids, or (``masked``) of uniform
    random *valid* actions (what a masked policy starts from: moves succeed far more
    often, so the masks are recomputed more often). Then times, over the same
    ticks: the env stepping them with masks off (array observations), the env's
    :class:`MaskCache` fed each tick (what a masks-on env adds), and :func:`mask_rows`
    from scratch.
    """
    kw = {**EASY, **kwargs}
    env = household_v0.parallel_env(**kw)
    _, infos = env.reset(seed=0)
    rng = np.random.default_rng(0)
    names, joints = list(env.possible_agents), []
    for _ in range(ticks):
        if not env.agents:
            _, infos = env.reset()
        if masked:
            joint = [int(rng.choice(np.flatnonzero(infos[a]["action_mask"]))) for a in names]
        else:
            joint = rng.integers(0, NUM_ACTIONS, len(names)).tolist()
        joints.append(joint)
        _, _, _, _, infos = env.step(dict(zip(names, joint)))
    env = household_v0.parallel_env(**{**kw, "action_masks": False})
    env.reset(seed=0)
    ticks_run = []
    start = time.process_time()
    for joint in joints:
        if not env.agents:
            env.reset()
        before = env.world
        env.step(dict(zip(names, joint)))
        ticks_run.append((before, env.world, joint))
    tick = (time.process_time() - start) / len(joints)
    # The env's own state objects (the cache tells reuse by identity), the events again.
    steps = [(before, world, transition(before, joint)[1])
             for before, world, joint in ticks_run]
    agents = list(range(len(names)))
    cache, last = MaskCache(), None
    start = time.process_time()
    for before, world, events in steps:
        if before is not last:  # a reset: the env computes the first masks afresh
            cache(before, agents)
        cache(world, agents, before, events)
        last = world
    reused = (time.process_time() - start) / len(steps)
    start = time.process_time()
    for _, world, _ in steps:
        mask_rows(world, agents)
    fresh = (time.process_time() - start) / len(steps)
    return reused * 1e6, fresh * 1e6, tick * 1e6


TRAINING = {"scalar": (8, 256), "batched": (64, 32)}  # (households, rollout ticks)


def core_step_fn(households: int, sb3: bool = False):
    """One tick of the batched core (flat observations, masks included) with pre-drawn
    random actions; ``sb3``: through the SB3 adapter the example trains on."""
    from train_ppo import EASY as EXAMPLE

    venv = household_v0.vector_env(households, seed=0, **EXAMPLE)
    agents = venv.num_agents
    table = np.random.default_rng(0).integers(0, NUM_ACTIONS, (64, households, agents))
    if sb3:
        from orgteams.envs.vector.sb3 import AgentVecEnv

        adapter = AgentVecEnv(venv)
        adapter.reset()
        flat = table.reshape(64, -1)

        def step(i: int) -> int:
            adapter.step(flat[i % 64])
            return households * agents
    else:
        venv.reset()

        def step(i: int) -> int:
            venv.step(table[i % 64])
            return households * agents

    return step


def train_rate(kind: str, steps: int, collect_only: bool = False) -> float:
    """Agent-steps per CPU second of the example's training loop for ``steps``: its
    learner and settings (``train_ppo.make_model``) over the scalar path, the batched
    core, or SuperSuit's vector env with SB3's plain PPO (the PettingZoo recipe, no
    masks). ``collect_only``: rollouts without the PPO updates."""
    import torch
    from train_ppo import EASY as EXAMPLE
    from train_ppo import make_model, make_vec_env

    torch.set_num_threads(1)
    if kind == "supersuit":
        import supersuit as ss
        from stable_baselines3 import PPO

        venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(
            household_v0.parallel_env(**EXAMPLE)), 8, num_cpus=0,
            base_class="stable_baselines3")
        model, _ = make_model(venv, seed=None, algo=PPO)
    else:
        households, ticks = TRAINING[kind]
        model, _ = make_model(make_vec_env(kind, households, **EXAMPLE),
                              ppo_kwargs={"n_steps": ticks})
    if collect_only:
        model.train = lambda: None
    model.learn(model.n_steps * model.n_envs)  # warm-up: first calls build and compile
    start = time.process_time()
    model.learn(steps, reset_num_timesteps=True)
    return model.num_timesteps / (time.process_time() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--train-steps", type=int, default=8192)
    args = p.parse_args()
    rows = {"studio x2, array, masks off": step_fn(action_masks=False),
            "studio x2, array, masks on": step_fn(),
            "studio x2, flat, masks on": step_fn(obs_mode="flat"),
            "apartment x3, array, masks off": step_fn(layout="apartment", num_agents=3,
                                                      action_masks=False),
            "apartment x3, array, masks on": step_fn(layout="apartment", num_agents=3)}
    best, _ = measure(rows, args.seconds)
    print("raw env, random actions (agent-steps per CPU second, best slice)")
    for name, rate in best.items():
        print(f"  {name:<36} {rate:>10,.0f}")
    for where in ("studio x2", "apartment x3"):
        off, on = best[f"{where}, array, masks off"], best[f"{where}, array, masks on"]
        print(f"  masks' share of a tick, {where}: {1 - on / off:.1%} "
              f"({1e6 / on:.2f} vs {1e6 / off:.2f} us per agent-step)")
    print("masks per tick, as a share of the tick with masks off (array obs)")
    for label, kw in (("studio x2", {}), ("apartment x3", {"layout": "apartment",
                                                           "num_agents": 3})):
        for masked in (False, True):
            reused, fresh, tick = mask_cost(masked, **kw)
            play = "valid random" if masked else "random ids  "
            print(f"  {label:<12}, {play}: reused {reused:5.2f} us = {reused / tick:5.1%}, "
                  f"from scratch {fresh:5.2f} us = {fresh / tick:5.1%} of {tick:5.1f} us")
    try:
        import sb3_contrib  # noqa: F401
        import stable_baselines3  # noqa: F401
    except ImportError as exc:
        print(f"training loops skipped ({exc}); pip install 'orgteams[rl]'")
        return
    raw = best["studio x2, flat, masks on"]
    core = measure({f"batched core, {h} households x2": core_step_fn(h) for h in (8, 64)}
                   | {"batched core, 64 x2, SB3 adapter": core_step_fn(64, sb3=True)},
                   args.seconds)[0]
    print("batched core on the example's setting, random actions (agent-steps per CPU s)")
    for name, rate in core.items():
        print(f"  {name:<36} {rate:>10,.0f}")
    print(f"training loops, {args.train_steps} agent-steps each (the example's learner: "
          "per-cell layer, 4 epochs, 1 torch thread)")
    raw_core = core["batched core, 64 households x2"]
    for kind, name, base in (
            ("scalar", "MaskablePPO, scalar path (8 envs x2)", raw),
            ("batched", "MaskablePPO, batched core (64 x2)", raw_core),
            ("supersuit", "PPO, SuperSuit vec env (8 envs x2)", raw)):
        for collect in (True, False):
            rate = train_rate(kind, args.train_steps, collect_only=collect)
            what = "collect only   " if collect else "collect + learn"
            print(f"  {name:<38} {what} {rate:>8,.0f}   raw env / this = {base / rate:.1f}x")
    print("  (raw env: the scalar flat env for the scalar and SuperSuit rows, the batched "
          "core at 64 households for the batched rows)")


if __name__ == "__main__":
    main()
