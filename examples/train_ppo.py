"""Masked PPO on household_v0: one policy shared by every agent (sb3-contrib's MaskablePPO).

The easy setting (the default): the ``studio`` layout, ``put_dishwasher_easy`` with a
goal of one unit (``units=1``) whose dish starts on a surface, two agents, full
observability, ``obs_mode="flat"`` and ``reward_shaping="subgoals"``. Every agent of
every household is one entry of an SB3 ``VecEnv``, so the agents share the policy's
parameters; the env's own action masks feed MaskablePPO. Two paths to the same
episodes: ``--core scalar`` steps ``parallel_env`` copies one by one
(:class:`orgteams.envs.vector.sb3.ScalarAgentVecEnv`), ``--core batched`` the batched numpy core
(``household_v0.vector_env`` under :class:`orgteams.envs.vector.sb3.AgentVecEnv`).

Run (``pip install "orgteams[rl]"``)::

    python examples/train_ppo.py --out runs/ppo                 # 1.5M agent-steps
    python examples/train_ppo.py --core batched --out runs/ppo  # the same, batched core
    python examples/train_ppo.py --random                       # the masked-random baseline

It prints the success rate on held-out seeds (never used in training) of masked random
play and of the trained policy, and writes ``curve.png``, ``results.json`` and the model
(``model.zip``, with its observation settings in ``model.json`` unless ``--obs-dtype
uint8``: ``orgteams run ... --backend planner,policy:runs/ppo/model.zip`` seats it) into
``--out``; ``--plot A/results.json B/results.json`` draws runs side by side.
``docs/rl-examples.md`` has the reference numbers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from orgteams.cli.options import positive
from orgteams.envs import household_v0
from orgteams.envs.core import TaskSpec, load_task
from orgteams.envs.vector.flat_buffer import to_uint8
from orgteams.errors import script_needs_extra

try:  # one line naming the extra, not a traceback, when it is missing
    from orgteams.envs.vector.sb3 import AgentEntries, AgentVecEnv, ScalarAgentVecEnv
except ImportError as exc:
    raise script_needs_extra(exc, "rl") from None


def easy_task() -> TaskSpec:
    """put_dishwasher_easy with every dish starting on a surface, none hidden in a closed
    container (``container_prob=0``): what is left to learn is where to walk."""
    return dataclasses.replace(load_task("put_dishwasher_easy"), container_prob=0.0)


EASY = {"layout": "studio", "task": easy_task(), "num_agents": 2, "units": 1,
        "full_observability": True, "view_radius": 5, "obs_mode": "flat",
        "reward_shaping": "subgoals", "max_ticks": 80}
HELD_OUT = 1_000_000  # evaluation seeds start here; training seeds are small numbers
OBS_DTYPES = ("float32", "uint8")


def make_vec_env(core: str, copies: int, seed: int = 0, obs_dtype: str = "float32",
                 **env_kwargs: Any) -> AgentEntries:
    """Every agent of ``copies`` households as one SB3 entry: ``core="scalar"`` steps
    ``parallel_env`` copies one by one, ``"batched"`` the batched numpy core
    (``household_v0.vector_env`` under :class:`orgteams.envs.vector.sb3.AgentVecEnv`).
    Both play the same episodes for the same seed. ``obs_dtype="uint8"`` (batched
    only): the core's raw uint8 observations, a quarter of the bytes to store and
    copy; the example's networks scale them back to the same floats (``RawScale``).
    """
    if obs_dtype not in OBS_DTYPES:
        raise ValueError(f"obs_dtype must be one of {OBS_DTYPES}, got {obs_dtype!r}")
    if core == "scalar":
        if obs_dtype != "float32":
            raise ValueError("obs_dtype='uint8' is for core='batched'; the scalar path "
                             "gives float32")
        return ScalarAgentVecEnv(copies, seed=seed, **env_kwargs)
    if core == "batched":
        return AgentVecEnv(household_v0.vector_env(copies, seed=seed,
                                                   obs_dtype=np.dtype(obs_dtype),
                                                   **env_kwargs))
    raise ValueError(f"core must be 'scalar' or 'batched', got {core!r}")


def play(policy, episodes: int, seed: int = HELD_OUT, **env_kwargs: Any) -> float:
    """Success rate of ``policy(obs_batch, mask_batch) -> actions`` on ``episodes`` seeds.

    The episodes run side by side, so the policy sees one batch per tick (every live
    agent of every episode): evaluation costs a small share of a training run.
    """
    envs = [household_v0.parallel_env(**env_kwargs) for _ in range(episodes)]
    live = {}
    for k, env in enumerate(envs):
        live[k] = env.reset(seed=seed + k)
    wins = 0
    while live:
        names = {k: list(envs[k].agents) for k in live}
        obs = np.stack([o[a] for k, (o, _) in live.items() for a in names[k]])
        masks = np.stack([i[a]["action_mask"] for k, (_, i) in live.items() for a in names[k]])
        acts = iter(int(x) for x in policy(obs, masks))
        for k in list(live):
            env = envs[k]
            o, _, terms, _, infos = env.step({a: next(acts) for a in names[k]})
            if env.agents:
                live[k] = (o, infos)
            else:
                del live[k]
                wins += int(all(terms.values()))
    return wins / episodes


def masked_random(rng: np.random.Generator):
    def policy(obs: np.ndarray, masks: np.ndarray) -> list[int]:
        return [int(rng.choice(np.flatnonzero(m))) for m in masks]
    return policy


def random_baseline(passes: int, episodes: int, seed: int = 0, **env_kwargs: Any
                    ) -> list[float]:
    """Masked random play's success rate on the held-out seeds, once per pass (its own
    draws each time): one pass of 30 episodes moves by 1/30 with the draws, the mean
    of several is the baseline's rate on those seeds."""
    rng = np.random.default_rng(seed)
    return [play(masked_random(rng), episodes, **{**EASY, **env_kwargs})
            for _ in range(passes)]


def flat_extractor():
    """The ``--net mlp`` features: SB3's ``FlattenExtractor`` after ``RawScale``
    (:mod:`orgteams.envs.vector.sb3_learner`: raw uint8 observations back to floats)."""
    from stable_baselines3.common.torch_layers import FlattenExtractor

    from orgteams.envs.vector.sb3_learner import RawScale

    class FlatFeatures(FlattenExtractor):
        def __init__(self, space):
            super().__init__(space)
            self.raw = RawScale(space)

        def forward(self, obs):
            return super().forward(self.raw(obs))

    return FlatFeatures


def cell_extractor(view_radius: int, embed: int = 8):
    """Features shared by the policy and value heads (an SB3 features extractor): each
    view cell's 38 planes (``orgteams.envs.observe.rl_obs``) go through one small linear layer
    shared by all cells (a 1x1 convolution, ``embed`` outputs), then everything, hands
    and goal rows included, through one dense layer. A sixth of the plain MLP's
    multiply-adds on the 11x11 view, and a cell's contents mean the same wherever it is.
    Raw uint8 observations are scaled back first (``RawScale``).
    """
    import torch
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    from torch import nn

    from orgteams.envs.observe.rl_obs import num_planes
    from orgteams.envs.vector.sb3_learner import RawScale
    cells, planes = (2 * view_radius + 1) ** 2, num_planes()

    class CellFeatures(BaseFeaturesExtractor):
        def __init__(self, space, features_dim: int = 128):
            super().__init__(space, features_dim)
            self.view = cells * planes
            self.embed = nn.Linear(planes, embed)
            rest = space.shape[0] - self.view
            self.head = nn.Sequential(nn.Linear(cells * embed + rest, features_dim), nn.ReLU())
            self.raw = RawScale(space)

        def forward(self, obs):
            n = len(obs)
            obs = self.raw(obs)
            grid = torch.relu(self.embed(obs[:, :self.view].reshape(n, cells, planes)))
            return self.head(torch.cat([grid.reshape(n, -1), obs[:, self.view:]], dim=1))

    return CellFeatures


def make_model(venv, net: str = "cells", seed: int | None = 0, view_radius: int = 5,
               ppo_kwargs: dict | None = None, algo: type | None = None) -> tuple[Any, dict]:
    """The example's learner over ``venv`` and its settings: ``algo`` (default
    sb3-contrib's ``MaskablePPO``, with :class:`~orgteams.envs.vector.sb3_learner.
    GatherRolloutBuffer`: the same minibatches, fewer copies) with ``MlpPolicy``;
    ``net`` as :func:`train`; ``seed=None`` for vector envs that take no seed
    (SuperSuit's)."""
    import torch
    from sb3_contrib import MaskablePPO

    from orgteams.envs.vector.sb3_learner import GatherRolloutBuffer

    # SB3 builds a Categorical for every batch; checking its arguments each time costs
    # more than the small network's forward pass.
    torch.distributions.Distribution.set_default_validate_args(False)
    policy_kwargs: dict[str, Any] = {"net_arch": [128, 128],
                                     "features_extractor_class": flat_extractor()}
    if net == "cells":
        policy_kwargs = {"net_arch": {"pi": [64], "vf": [64]},
                         "features_extractor_class": cell_extractor(view_radius)}
    ppo = {"n_steps": 256, "batch_size": 512, "n_epochs": 4, "learning_rate": 3e-4,
           "gamma": 0.99, "gae_lambda": 0.95, "ent_coef": 0.01,
           "policy_kwargs": policy_kwargs, **(ppo_kwargs or {})}
    algo = algo or MaskablePPO
    extra = {"rollout_buffer_class": GatherRolloutBuffer} if algo is MaskablePPO else {}
    return algo("MlpPolicy", venv, seed=seed, verbose=0, **{**extra, **ppo}), ppo


def train(timesteps: int, out: Path, copies: int = 8, seed: int = 0, eval_every: int = 100_000,
          eval_episodes: int = 30, threads: int = 1, net: str = "cells", core: str = "scalar",
          ppo_kwargs: dict | None = None, obs_dtype: str = "float32", **env_kwargs: Any
          ) -> dict:
    """Train MaskablePPO, evaluating on held-out seeds every ``eval_every`` steps.

    ``net``: ``"cells"`` (:func:`cell_extractor`, then 64-unit policy and value heads)
    or ``"mlp"`` (two separate 128x128 MLPs over the whole observation). ``core``:
    ``"scalar"`` or ``"batched"``, ``obs_dtype`` ``"float32"`` or ``"uint8"``
    (batched only; :func:`make_vec_env`: the same run bit for bit, and a saved model
    that then takes uint8 observations). The CPU seconds reported are this process's
    (``time.process_time``), with and without the evaluations.
    """
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(threads)
    env_kwargs = {**EASY, **env_kwargs}
    venv = make_vec_env(core, copies, seed, obs_dtype, **env_kwargs)
    model, ppo = make_model(venv, net, seed, env_kwargs["view_radius"], ppo_kwargs)
    # The held-out episodes run on the scalar env (float32): a uint8 model sees them raw.
    raw = venv.observation_space.high if obs_dtype == "uint8" else None
    curve: list[tuple[int, float, float]] = []
    eval_cpu = [0.0]  # CPU seconds spent evaluating, so training's own can be told apart
    start_cpu = time.process_time()

    def evaluate(deterministic: bool = False) -> float:
        def policy(obs, masks):
            if raw is not None:
                obs = to_uint8(obs, raw)
            acts, _ = model.predict(obs, action_masks=masks, deterministic=deterministic)
            return acts
        began = time.process_time()
        rate = play(policy, eval_episodes, **env_kwargs)
        eval_cpu[0] += time.process_time() - began
        return rate

    class Every(BaseCallback):
        def __init__(self):
            super().__init__()
            self.next = eval_every

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next:
                self.next += eval_every
                rate = evaluate()
                curve.append((self.num_timesteps, rate, time.process_time() - start_cpu))
                print(f"steps {self.num_timesteps:>8}  held-out success {rate:.2f}  "
                      f"(argmax {evaluate(True):.2f})  cpu {curve[-1][2]:.0f}s", flush=True)
            return True

    wall = time.time()
    with warnings.catch_warnings():
        # The batched core's observations are read-only (the core recycles them once
        # dropped); torch warns of "undefined behavior" when SB3 wraps one, though
        # nothing writes into it.
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        model.learn(timesteps, callback=Every())
    cpu = time.process_time() - start_cpu  # evaluations during training included
    final = evaluate()
    curve.append((model.num_timesteps, final, time.process_time() - start_cpu))
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.zip")
    if obs_dtype == "float32":  # what a policy member feeds it (orgteams.agents.policy_member)
        # Its observation settings beside it: `orgteams run --backend
        # planner,policy:<out>/model.zip` seats it (the task by name: same goals, scale).
        settings = {k: v.name if isinstance(v, TaskSpec) else v for k, v in env_kwargs.items()}
        (out / "model.json").write_text(json.dumps(settings, indent=1))
    train_cpu = cpu - eval_cpu[0]
    result = {"setting": env_kwargs, "timesteps": model.num_timesteps, "copies": copies,
              "core": core, "obs_dtype": obs_dtype, "seed": seed, "net": net,
              "ppo": {k: v for k, v in ppo.items() if k != "policy_kwargs"},
              "cpu_seconds": round(cpu, 1), "train_cpu_seconds": round(train_cpu, 1),
              "wall_seconds": round(time.time() - wall, 1),
              "agent_steps_per_cpu_s": round(model.num_timesteps / train_cpu),
              "held_out_success": final, "eval_episodes": eval_episodes, "curve": curve,
              "machine": machine()}
    (out / "results.json").write_text(json.dumps(result, indent=1, default=_describe))
    plot({f"{core} path" if core == "scalar" else f"{core} core": curve}, out / "curve.png")
    return result


# Environment variables that change which CPU kernels torch (and MKL, oneDNN) run.
KERNEL_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")


def machine() -> dict[str, str]:
    """What the run's floating-point arithmetic depended on, for results.json.

    Runs are bit-for-bit reproducible only on the same libraries *and* CPU kernels:
    torch picks its kernels by CPU (``cpu_capability``; ``ATEN_CPU_CAPABILITY`` and
    MKL's ``MKL_ENABLE_INSTRUCTIONS`` override it), and a different rounding sends a
    single seed's PPO run down another path (docs/rl-examples.md, Reference results).
    """
    import importlib.metadata
    import platform

    import torch

    found = {name: importlib.metadata.version(name) for name in
             ("stable-baselines3", "sb3-contrib", "numpy", "gymnasium")}
    # torch's own string keeps the build tag (2.14.1+cu130, 2.13.0+cpu) that the wheel's
    # metadata may drop; CPU and CUDA builds pick different kernels.
    found = {"torch": torch.__version__, **found}
    return {**found, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cpu": _cpu_model() or platform.processor() or platform.machine(),
            **{k: os.environ[k] for k in KERNEL_VARIABLES if k in os.environ}}


def _cpu_model() -> str:
    try:  # Linux; elsewhere platform's answer is the best there is
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""
    return next((line.split(":", 1)[1].strip() for line in text.splitlines()
                 if line.startswith("model name")), "")


def _describe(value: Any) -> Any:
    """JSON for what json cannot write: a task by its name and how it differs."""
    if isinstance(value, TaskSpec):
        return {"task": value.name, "container_prob": value.container_prob}
    return str(value)


def plot(runs: dict[str, list], path: Path) -> None:
    """Held-out success against agent-steps and against CPU seconds, one line per run
    (``label -> curve``, the ``curve`` of ``results.json``)."""
    try:
        import matplotlib
    except ImportError:  # the plot is a convenience: the numbers are in results.json
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for label, curve in runs.items():
        for ax, x in zip(axes, (0, 2)):
            ax.plot([c[x] for c in curve], [c[1] for c in curve], marker="o", label=label)
    axes[0].xaxis.set_major_formatter(lambda x, _: f"{x / 1000:.0f}k")
    axes[0].set_xlabel("agent-steps")
    axes[1].set_xlabel("CPU seconds (training process, evaluations included)")
    axes[0].set_ylabel("success on 30 held-out seeds")
    axes[0].set_ylim(-0.02, 1.02)
    axes[1].axvline(600, color="grey", linestyle=":")
    for ax in axes:
        ax.axhline(0.8, color="grey", linestyle=":")
    axes[1].legend(loc="lower right", fontsize=8)
    fig.suptitle("MaskablePPO, studio / put_dishwasher_easy, 1 unit (the easy setting)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def read_results(path: Path) -> dict:
    """A run's ``results.json`` for ``--plot``; else exits with one line naming the file
    and what is wrong with it."""
    try:
        run = json.loads(path.read_text())
    except OSError as e:
        raise SystemExit(f"{path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SystemExit(f"{path}: not JSON ({e})") from None
    fields = ("core", "seed", "copies", "ppo", "curve")
    missing = [k for k in fields if k not in run] if isinstance(run, dict) else list(fields)
    if not missing and not (isinstance(run["ppo"], dict) and "n_steps" in run["ppo"]):
        missing = ["ppo.n_steps"]
    if missing:
        raise SystemExit(f"{path}: not a results.json of train_ppo.py (no "
                         f"{', '.join(missing)})")
    return run


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--timesteps", type=positive(int), default=1_500_000)
    p.add_argument("--copies", type=positive(int), default=8,
                   help="env copies (x agents = SB3 envs)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-every", type=positive(int), default=100_000)
    p.add_argument("--episodes", type=positive(int), default=30,
                   help="held-out evaluation episodes")
    p.add_argument("--out", type=Path, default=Path("runs/ppo"))
    p.add_argument("--threads", type=positive(int), default=1, help="torch threads")
    p.add_argument("--net", choices=("cells", "mlp"), default="cells",
                   help="cells: a shared per-cell layer, then 64-unit heads; "
                        "mlp: two 128x128 MLPs")
    p.add_argument("--core", choices=("scalar", "batched"), default="scalar",
                   help="scalar: parallel_env copies stepped one by one; batched: the "
                        "batched numpy core (household_v0.vector_env)")
    p.add_argument("--obs-dtype", choices=OBS_DTYPES, default="float32",
                   help="uint8 (batched core only): the core's raw observations, a quarter "
                        "of the bytes; the same run bit for bit")
    p.add_argument("--n-steps", type=positive(int), default=256, help="rollout ticks per entry")
    p.add_argument("--batch-size", type=positive(int), default=512, help="PPO minibatch size")
    p.add_argument("--n-epochs", type=positive(int), default=4, help="PPO passes over each rollout")
    p.add_argument("--random", action="store_true", help="only the masked-random baseline")
    p.add_argument("--plot", type=Path, nargs="+", metavar="RESULTS",
                   help="only draw these runs' results.json into --out/curve.png")
    p.add_argument("--random-passes", type=positive(int), default=10,
                   help="passes of masked random play over the held-out seeds")
    args = p.parse_args(argv)
    if args.obs_dtype == "uint8" and args.core != "batched":
        p.error("--obs-dtype uint8 needs --core batched (the scalar path gives float32)")
    if args.plot:
        runs = [read_results(path) for path in args.plot]
        args.out.mkdir(parents=True, exist_ok=True)
        plot({f"{r['core']}, seed {r['seed']}, {r['copies']} households x "
              f"{r['ppo']['n_steps']} ticks": r["curve"] for r in runs}, args.out / "curve.png")
        return
    rates = random_baseline(args.random_passes, args.episodes, args.seed)
    print(f"masked random: held-out success {np.mean(rates):.3f} (mean of {len(rates)} "
          f"passes over {args.episodes} episodes; passes {min(rates):.2f}-{max(rates):.2f})")
    if args.random:
        return
    result = train(args.timesteps, args.out, args.copies, args.seed, args.eval_every,
                   args.episodes, args.threads, net=args.net, core=args.core,
                   ppo_kwargs={"n_steps": args.n_steps, "batch_size": args.batch_size,
                               "n_epochs": args.n_epochs}, obs_dtype=args.obs_dtype)
    saved = args.out / "results.json"
    saved.write_text(json.dumps({**json.loads(saved.read_text()),
                                 "masked_random_passes": rates}, indent=1))
    print(f"trained: held-out success {result['held_out_success']:.2f} after "
          f"{result['timesteps']} agent-steps, {result['cpu_seconds']} s CPU with "
          f"evaluations, {result['train_cpu_seconds']} s without "
          f"({result['agent_steps_per_cpu_s']} agent-steps per CPU second)")


if __name__ == "__main__":
    main()
