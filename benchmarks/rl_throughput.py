"""RL throughput: the raw env beside the training loops, and what action masks cost.

All on the easy setting of ``examples/train_ppo.py`` (studio, put_dishwasher_easy,
2 agents, one unit, full observability, subgoal shaping) unless a row says otherwise.
Prints, measured side by side in one run (CPU time of this process, so the host's
other jobs count less):

* the raw env's agent-steps/s with pre-drawn random actions: array observations with
  masks off and on (the difference is the masks' share of a tick), flat observations
  (what the training loop steps), and the same on ``apartment`` with 3 agents;
* the cost of computing masks from scratch (no reuse between ticks) per tick, as a
  share of a tick;
* the training loops' agent-steps/s (collecting and learning): sb3-contrib's
  MaskablePPO over the example's ``AgentVecEnv``, and SB3's PPO over SuperSuit's
  ``pettingzoo_env_to_vec_env_v1`` (the PettingZoo recipe), and the ratio of the raw
  env to each.

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
from orgteams.envs.masks import mask_rows

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


def fresh_mask_cost(**kwargs) -> tuple[float, float]:
    """(us per tick to compute every agent's mask from scratch, us per tick of the env)."""
    env = household_v0.parallel_env(**{**EASY, **kwargs, "action_masks": False})
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    states, n = [], len(env.possible_agents)
    start = time.process_time()
    for _ in range(3000):
        if not env.agents:
            env.reset()
        env.step(dict(zip(env.possible_agents, rng.integers(0, NUM_ACTIONS, n).tolist())))
        states.append(env.world)
    tick = (time.process_time() - start) / len(states)
    agents = list(range(n))
    start = time.process_time()
    for s in states:
        mask_rows(s, agents)
    return (time.process_time() - start) / len(states) * 1e6, tick * 1e6


def train_rate(kind: str, steps: int) -> float:
    """Agent-steps per CPU second of a training loop (collect + learn) for ``steps``."""
    import torch

    torch.set_num_threads(1)
    if kind == "maskable":
        from sb3_contrib import MaskablePPO
        from train_ppo import AgentVecEnv

        venv = AgentVecEnv(8, **{**EASY, "obs_mode": "flat"})
        model = MaskablePPO("MlpPolicy", venv, n_steps=256, batch_size=512, n_epochs=10,
                            policy_kwargs={"net_arch": [128, 128]}, verbose=0)
    else:
        import supersuit as ss
        from stable_baselines3 import PPO

        venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(
            household_v0.parallel_env(**{**EASY, "obs_mode": "flat"})), 8, num_cpus=0,
            base_class="stable_baselines3")
        model = PPO("MlpPolicy", venv, n_steps=256, batch_size=512, n_epochs=10,
                    policy_kwargs={"net_arch": [128, 128]}, verbose=0)
    start = time.process_time()
    model.learn(steps)
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
    for label, kw in (("studio x2", {}), ("apartment x3", {"layout": "apartment",
                                                           "num_agents": 3})):
        fresh, tick = fresh_mask_cost(**kw)
        print(f"  masks from scratch, {label}: {fresh:.1f} us per tick = {fresh / tick:.1%} "
              f"of a {tick:.1f} us tick (array obs, masks off)")
    try:
        import sb3_contrib  # noqa: F401
        import stable_baselines3  # noqa: F401
    except ImportError as exc:
        print(f"training loops skipped ({exc}); pip install 'orgteams[rl]'")
        return
    raw = best["studio x2, flat, masks on"]
    print(f"training loops, {args.train_steps} agent-steps each (collect + learn, "
          "net 128x128, 10 epochs, 1 torch thread)")
    for kind, name in (("maskable", "MaskablePPO + examples' AgentVecEnv"),
                       ("supersuit", "PPO + SuperSuit vec env (PettingZoo recipe)")):
        rate = train_rate(kind, args.train_steps)
        print(f"  {name:<46} {rate:>8,.0f}   raw flat env / this = {raw / rate:.1f}x")


if __name__ == "__main__":
    main()
