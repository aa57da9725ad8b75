"""Ad-hoc teamwork: an RL agent learns to work beside a planner that leads it.

The learner is ``agent_1`` of ``household_v0.single_agent_env``; its teammate
``agent_0`` is a planner, and the two play under the ``leader`` organization
(``make_teammates("planner", organization="leader")``), as Overcooked-AI is used with
fixed partners. The leader plans the whole goal and orders the learner to fetch some
of the dishes; the learner cannot read the orders (it sees only its observation), so
it has to learn to be useful: fetch dishes into the dishwasher and keep out of the
leader's way. Alone, the leader waits for its orders to lapse and the team often runs
out of time.

Run (``pip install "orgteams[rl]"``)::

    python examples/adhoc_teamwork.py --out runs/adhoc               # 600k learner steps
    python examples/adhoc_teamwork.py --baselines-only

It prints, on held-out seeds, the team's success rate and ticks with the learner
waiting, playing masked random, trained (every ``--eval-every`` steps), and the team
of two planners for reference, and writes ``results.json``, ``curve.png``, the model
(``model.zip``) and its observation settings (``model.json``), so the trained learner
can join a team run: ``orgteams run --layout studio --task put_dishwasher_easy
--agents 2 --org leader --backend planner,policy:runs/adhoc/model.zip``.
``docs/rl-examples.md`` has the measured curve.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from orgteams.cli.options import positive
from orgteams.envs import household_v0
from orgteams.play import make_teammates

sys.path.insert(0, str(Path(__file__).parent))
from train_ppo import cell_extractor, easy_task, machine  # noqa: E402  (train_ppo's network)

# The learner's observation settings (written beside the model as model.json). The
# episodes come from train_ppo's easy variant of the task (every dish starts on a
# surface, none in a closed cabinet): the same goals and observation scale.
SETTING = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 2,
           "full_observability": True, "view_radius": 5, "obs_mode": "flat",
           "reward_shaping": "subgoals", "max_ticks": 100}
TASK = easy_task()
ORGANIZATION = "leader"
LEARNER = "agent_1"  # agent_0 leads under `leader`
HELD_OUT = 1_000_000


def make_env(**overrides: Any):
    """The learner's env: a planner leader as its teammate (module docstring)."""
    return household_v0.single_agent_env(
        LEARNER, make_teammates("planner", organization=ORGANIZATION),
        **{**SETTING, "task": TASK, **overrides})


def evaluate(policy, episodes: int, seed: int = HELD_OUT) -> dict[str, float]:
    """The team's success rate and mean ticks over ``episodes`` held-out seeds, the
    learner playing ``policy(obs, mask) -> action``."""
    env = make_env()
    wins, ticks = 0, []
    for k in range(episodes):
        obs, info = env.reset(seed=seed + k)
        while True:
            obs, _, term, trunc, info = env.step(policy(obs, env.action_masks()))
            if term or trunc:
                break
        wins += int(term)
        ticks.append(info["tick"])
    env.close()
    return {"success": wins / episodes, "ticks": float(np.mean(ticks))}


def planner_team(episodes: int, seed: int = HELD_OUT) -> dict[str, float]:
    """Two planners under the organization, as ``orgteams run --backend planner`` plays
    them (on the same episodes): the reference the learner's seat would reach if it
    were a planner."""
    from orgteams.envs.highlevel import HighLevelEnv
    from orgteams.organizations import load_organization
    from orgteams.organizations.rounds.runner import TeamRunner
    from orgteams.run import build_team

    org = load_organization(ORGANIZATION)
    runs = []
    for k in range(episodes):
        env = HighLevelEnv(layout=SETTING["layout"], task=TASK,
                           num_agents=SETTING["num_agents"], max_ticks=SETTING["max_ticks"])
        team = build_team("planner", SETTING["num_agents"], org)
        runs.append(TeamRunner(env, org, team).run(seed + k).summary)
    return {"success": float(np.mean([r["success"] for r in runs])),
            "ticks": float(np.mean([r["ticks"] for r in runs]))}


def baselines(episodes: int, seed: int = 0) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    return {"learner waits": evaluate(lambda o, m: 0, episodes),
            "learner masked random": evaluate(
                lambda o, m: int(rng.choice(np.flatnonzero(m))), episodes),
            "two planners": planner_team(episodes)}


def train(timesteps: int, out: Path, copies: int = 8, seed: int = 0,
          eval_every: int = 50_000, episodes: int = 30, threads: int = 1) -> dict:
    """MaskablePPO on ``copies`` learner envs (SB3's ``DummyVecEnv``), evaluated on
    held-out seeds every ``eval_every`` learner steps."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(threads)
    torch.distributions.Distribution.set_default_validate_args(False)
    venv = DummyVecEnv([make_env for _ in range(copies)])
    venv.seed(seed)
    ppo = {"n_steps": 256, "batch_size": 512, "n_epochs": 4, "learning_rate": 3e-4,
           "gamma": 0.99, "gae_lambda": 0.95, "ent_coef": 0.01}
    model = MaskablePPO("MlpPolicy", venv, seed=seed, verbose=0, policy_kwargs={
        "net_arch": {"pi": [64], "vf": [64]},
        "features_extractor_class": cell_extractor(SETTING["view_radius"])}, **ppo)
    curve: list[tuple[int, float, float, float]] = []
    start = time.process_time()

    def policy(obs, mask):
        return int(model.predict(obs, action_masks=mask, deterministic=False)[0])

    def point() -> None:
        score = evaluate(policy, episodes)
        curve.append((model.num_timesteps, score["success"], score["ticks"],
                      time.process_time() - start))
        print(f"steps {model.num_timesteps:>7}  held-out success {score['success']:.2f}  "
              f"mean ticks {score['ticks']:.1f}  cpu {curve[-1][3]:.0f}s", flush=True)

    class Every(BaseCallback):
        def __init__(self):
            super().__init__()
            self.next = eval_every

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next:
                self.next += eval_every
                point()
            return True

    point()  # the untrained policy
    model.learn(timesteps, callback=Every())
    if curve[-1][0] != model.num_timesteps:
        point()
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.zip")
    # The observation settings beside the model: `orgteams run --backend
    # planner,policy:<out>/model.zip` seats the trained learner (orgteams.agents.policy_member).
    (out / "model.json").write_text(json.dumps(SETTING, indent=1))
    venv.close()
    return {"setting": SETTING, "organization": ORGANIZATION, "learner": LEARNER,
            "timesteps": model.num_timesteps, "copies": copies, "seed": seed, "ppo": ppo,
            "eval_episodes": episodes, "curve": curve,
            "cpu_seconds": round(time.process_time() - start, 1), "machine": machine()}


def plot(result: dict, path: Path) -> None:
    """Held-out success and mean ticks against learner steps, the baselines as lines."""
    try:
        import matplotlib
    except ImportError:  # the numbers are in results.json
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve, base = result["curve"], result["baselines"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, col, label in ((axes[0], 1, "success on held-out seeds"),
                           (axes[1], 2, "mean ticks (limit 100)")):
        ax.plot([c[0] for c in curve], [c[col] for c in curve], marker="o",
                label="trained learner")
        for (name, score), style in zip(base.items(), (":", "--", "-.")):
            ax.axhline(score["success" if col == 1 else "ticks"], color="grey",
                       linestyle=style, label=name)
        ax.set_xlabel("learner steps")
        ax.set_ylabel(label)
        ax.xaxis.set_major_formatter(lambda x, _: f"{x / 1000:.0f}k")
    axes[0].set_ylim(-0.02, 1.02)
    axes[1].legend(fontsize=7)
    fig.suptitle("Ad-hoc teamwork: MaskablePPO beside a planner leader (studio, 3 dishes)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--timesteps", type=positive(int), default=600_000)
    p.add_argument("--copies", type=positive(int), default=8, help="learner envs side by side")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-every", type=positive(int), default=50_000)
    p.add_argument("--episodes", type=positive(int), default=30,
                   help="held-out evaluation episodes")
    p.add_argument("--out", type=Path, default=Path("runs/adhoc"))
    p.add_argument("--threads", type=positive(int), default=1, help="torch threads")
    p.add_argument("--baselines-only", action="store_true")
    args = p.parse_args(argv)
    base = baselines(args.episodes, args.seed)
    for name, score in base.items():
        print(f"{name}: held-out success {score['success']:.2f}, mean ticks "
              f"{score['ticks']:.1f}")
    if args.baselines_only:
        return
    result = train(args.timesteps, args.out, args.copies, args.seed, args.eval_every,
                   args.episodes, args.threads)
    result["baselines"] = base
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    plot(result, args.out / "curve.png")
    last = result["curve"][-1]
    print(f"trained: held-out success {last[1]:.2f}, mean ticks {last[2]:.1f} after "
          f"{result['timesteps']} learner steps, {result['cpu_seconds']} s CPU")


if __name__ == "__main__":
    main()
