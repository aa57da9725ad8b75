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
  each beside its raw env (the scalar flat env, or the batched core at 64 households);
* the batched core's training loop one change at a time (``VARIANTS``: sb3-contrib's
  rollout buffer against ``GatherRolloutBuffer``, uint8 observations, 2 torch threads,
  minibatches of 2048, 2 and 1 epochs, a half-width network), the variants taking
  turns one rollout at a time, each beside its floor: the raw core's rate over the
  loop's if the learner's arithmetic ran at this machine's matmul rate with nothing
  else (``learner_bound.py``).

Run: ``python benchmarks/rl/rl_throughput.py [--seconds 2] [--train-steps 8192]``
(needs the ``rl`` extra for the training rows; they are skipped without it).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from orgteams.envs import household_v0
from orgteams.envs.core.actions import NUM_ACTIONS
from orgteams.envs.core.dynamics import transition
from orgteams.envs.core.masks import MaskCache, mask_rows

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import parser, random_steps, take_turns  # noqa: E402

# The training rows measure examples/train_ppo.py's loop: examples/ goes on the path too.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

EASY = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 2, "units": 1,
        "full_observability": True, "view_radius": 5, "reward_shaping": "subgoals"}


def step_fn(**kwargs):
    return random_steps(household_v0.parallel_env(**{**EASY, **kwargs}), 0, NUM_ACTIONS)


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


# The batched core's training loop, one change at a time (64 households x 32 ticks).
# "sb3": sb3-contrib's own rollout buffer (the example used it before GatherRolloutBuffer);
# "half": the per-cell network at half width (4 per-cell units, 64 features, 32-unit heads).
VARIANTS = {
    "float32, sb3-contrib's buffer (before)": {"buffer": "sb3"},
    "float32, gather buffer (the default)": {},
    "uint8, gather buffer": {"obs_dtype": "uint8"},
    "uint8, 2 torch threads": {"obs_dtype": "uint8", "threads": 2},
    "uint8, batch 2048": {"obs_dtype": "uint8", "ppo": {"batch_size": 2048}},
    "uint8, 2 epochs": {"obs_dtype": "uint8", "ppo": {"n_epochs": 2}},
    "uint8, 1 epoch": {"obs_dtype": "uint8", "ppo": {"n_epochs": 1}},
    "uint8, 1 epoch, half-width net": {"obs_dtype": "uint8", "ppo": {"n_epochs": 1},
                                       "net": "half"},
}
COLLECTING = list(VARIANTS)[:4]  # the others collect as "uint8, gather buffer" does


def variant_model(spec: dict, collect_only: bool):
    """The example's learner on the batched core with one variant's changes."""
    from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer
    from train_ppo import EASY as EXAMPLE
    from train_ppo import cell_extractor, make_model, make_vec_env

    households, ticks = TRAINING["batched"]
    ppo: dict = {"n_steps": ticks, **spec.get("ppo", {})}
    if spec.get("buffer") == "sb3":
        ppo["rollout_buffer_class"] = MaskableRolloutBuffer
    if spec.get("net") == "half":
        ppo["policy_kwargs"] = {"net_arch": {"pi": [32], "vf": [32]},
                                "features_extractor_class": cell_extractor(5, embed=4),
                                "features_extractor_kwargs": {"features_dim": 64}}
    venv = make_vec_env("batched", households, obs_dtype=spec.get("obs_dtype", "float32"),
                        **EXAMPLE)
    model, _ = make_model(venv, ppo_kwargs=ppo)
    if collect_only:
        model.train = lambda: None
    return model


def variant_rates(steps: int) -> dict[tuple[str, bool], tuple[float, float, Any]]:
    """``(variant, collect_only) -> (agent-steps per CPU s, per wall s, model)``. The
    variants take turns, one rollout (and its update) each per round, so a slow spell
    of the shared host falls on all of them alike; rates are totals over the rounds."""
    import torch

    runs: dict[tuple[str, bool], list] = {}
    for name, spec in VARIANTS.items():
        for collect in (True, False) if name in COLLECTING else (False,):
            torch.set_num_threads(spec.get("threads", 1))
            model = variant_model(spec, collect)
            model.learn(model.n_steps * model.n_envs)  # warm-up: first calls build
            runs[name, collect] = [model, 0.0, 0.0, 0]
    for _ in range(max(1, steps // 4096)):
        for (name, _), run in runs.items():
            model = run[0]
            torch.set_num_threads(VARIANTS[name].get("threads", 1))
            before, cpu, wall = model.num_timesteps, time.process_time(), time.perf_counter()
            model.learn(model.n_steps * model.n_envs, reset_num_timesteps=False)
            run[1] += time.process_time() - cpu
            run[2] += time.perf_counter() - wall
            run[3] += model.num_timesteps - before
    torch.set_num_threads(1)
    return {key: (n / cpu, n / wall, model) for key, (model, cpu, wall, n) in runs.items()}


def print_variants(steps: int, raw_core: float) -> None:
    """The variants' rates beside the raw core, and each one's floor (learner_bound)."""
    from learner_bound import forward_macs, learner_cost, machine_rates

    rates = variant_rates(steps)
    gflops, gbytes = machine_rates()
    core_us = 1e6 / raw_core
    print(f"batched core's training loop, one change at a time ({steps} agent-steps each, "
          f"taking turns; raw core {raw_core:,.0f} = {core_us:.1f} us per agent-step)")
    print(f"  machine: {gflops:.1f} GFLOP/s (1024^3 float32 matmul, 1 thread), "
          f"{gbytes:.1f} GB/s (64 MB copy)")
    print(f"  {'variant':<40} {'collect':>8} {'c+learn':>8} {'raw/this':>8} {'wall':>8} "
          f"{'MFLOP':>6} {'floor':>6}")
    for name in VARIANTS:
        cpu, wall, model = rates[name, False]
        collect = f"{rates[name, True][0]:>8,.0f}" if name in COLLECTING else f"{'':>8}"
        macs = forward_macs(model.policy, model.observation_space)
        flops, nbytes = learner_cost(macs, model.observation_space.shape[0], model.n_epochs)
        floor_us = max(flops / gflops / 1e3, nbytes / gbytes / 1e3)
        print(f"  {name:<40} {collect} {cpu:>8,.0f} {raw_core / cpu:>7.1f}x {wall:>8,.0f} "
              f"{flops / 1e6:>6.2f} {1 + floor_us / core_us:>5.1f}x")
    print("  (collect: PPO updates off; wall: per wall-clock second; MFLOP: the learner's "
          "per agent-step; floor: raw core / loop if the learner ran at the machine's "
          "matmul rate with no other cost, i.e. 1 + learner floor / core time per step)")


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--seconds", type=float, default=2.0)
    options.add_argument("--train-steps", type=int, default=8192)
    args = options.parse_args()
    rows = {"studio x2, array, masks off": step_fn(action_masks=False),
            "studio x2, array, masks on": step_fn(),
            "studio x2, flat, masks on": step_fn(obs_mode="flat"),
            "apartment x3, array, masks off": step_fn(layout="apartment", num_agents=3,
                                                      action_masks=False),
            "apartment x3, array, masks on": step_fn(layout="apartment", num_agents=3)}
    best, _ = take_turns(rows, args.seconds)
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
    core = take_turns({f"batched core, {h} households x2": core_step_fn(h) for h in (8, 64)}
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
    print_variants(args.train_steps, raw_core)


if __name__ == "__main__":
    main()
