"""A lean masked PPO in plain torch on the batched core's arrays (no SB3).

A CleanRL-style experiment for issue #16's last goal: can a learner train within 3x
of the batched core's raw rate (agent-steps per CPU second)? It steps
``household_v0.vector_env`` (the easy setting of ``train_ppo.py``, raw uint8
observations, ``copy=False``) directly: every agent of every household is one batch
entry of one shared network; the env's action masks gate the sampled actions; a
household cut short at the step limit has ``gamma * V(final observation)`` added to
its last reward (the core resets it in the same step, its last observation is in
``infos["final_obs"]``); GAE, the clipped objective, an entropy bonus, few epochs of
big minibatches (runs of whole ticks) over preallocated rollout tensors. The
network: one ReLU layer of ``--hidden`` units over the whole flat observation, then
a policy and a value head; observations are stored as bfloat16 raw plane values
(``--bf16 0``: float32), the first layer's weights scaled to match.

Run (``pip install "orgteams[rl]"``; one torch thread; the defaults are the measured
configuration: 64 households, 32-tick rollouts, 16 units, 1 epoch, 4 minibatches)::

    python examples/lean_ppo.py --measure --updates 20    # raw core vs lean loop, side by side
    python examples/lean_ppo.py --timesteps 3000000 --out runs/lean   # train + evaluate

Training evaluates on the held-out seeds of ``train_ppo.py`` (1,000,000-1,000,029)
every ``--eval-every`` agent-steps and writes ``results.json`` into ``--out``.
``docs/rl-examples.md`` ("A lean learner") has the measured numbers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from orgteams.errors import script_needs_extra

try:  # one line naming the extra, not a traceback, when it is missing
    import torch
    from torch import nn
    from torch.nn import functional as F
except ImportError as exc:
    raise script_needs_extra(exc, "rl") from None

sys.path.insert(0, str(Path(__file__).parent))
from train_ppo import EASY, machine, play  # noqa: E402

from orgteams.cli.options import positive  # noqa: E402
from orgteams.envs import household_v0  # noqa: E402
from orgteams.envs.vector.flat_buffer import to_uint8  # noqa: E402

# copy=False observations are a read-only view; torch warns when it wraps one, but
# it is only ever copied from here.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
MASKED = -1e9  # a masked logit: exp() underflows to exactly 0, and 0 * MASKED is 0


def _opt(default: Any, help: str) -> Any:
    """A :class:`Config` field with its ``--help`` text."""
    return dataclasses.field(default=default, metadata={"help": help})


@dataclasses.dataclass
class Config:
    """The learner's settings (``--help`` names them)."""

    envs: int = _opt(64, "households; x agents = batch entries")
    ticks: int = _opt(32, "rollout ticks per update")
    hidden: int = _opt(16, "units of the one layer over the whole observation")
    epochs: int = _opt(1, "PPO passes over each rollout")
    minibatches: int = _opt(4, "minibatches per epoch (runs of whole ticks)")
    lr: float = _opt(1e-3, "Adam's learning rate")
    gamma: float = _opt(0.99, "discount")
    lam: float = _opt(0.95, "GAE lambda")
    clip: float = _opt(0.2, "PPO clip range")
    ent_coef: float = _opt(0.01, "entropy bonus weight")
    vf_coef: float = _opt(0.5, "value loss weight")
    max_grad_norm: float = _opt(0.5, "gradient norm clip")
    bf16: int = _opt(1, "1: observations and the first layer's matmul in bfloat16; 0: float32")


class Net(nn.Module):
    """uint8 flat observation -> (logits, value): one ReLU layer of ``hidden`` units over
    the whole observation, then a policy and a value head. The uint8 -> float scale is
    folded into the first layer's weights (``W * (1 / high)``: one multiply per weight
    per pass, not per input entry of every sample)."""

    def __init__(self, high: np.ndarray, actions: int, hidden: int):
        super().__init__()
        self.register_buffer("inverse", torch.as_tensor(1.0 / high.astype(np.float32)))
        self.body = nn.Linear(len(high), hidden)
        self.pi = nn.Linear(hidden, actions)
        self.v = nn.Linear(hidden, 1)
        nn.init.orthogonal_(self.pi.weight, 0.01)  # near-uniform first policy (CleanRL)
        nn.init.zeros_(self.pi.bias)

    def scaled(self) -> torch.Tensor:
        """The first layer's weights for raw uint8 inputs."""
        return self.body.weight * self.inverse

    def forward(self, obs: torch.Tensor, scaled: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """``obs``: raw plane values as float32 or bfloat16 (the first matmul runs in
        that type, the rest in float32); ``scaled``: :meth:`scaled`, when the caller
        reuses it (collection)."""
        weight = (self.scaled() if scaled is None else scaled).to(obs.dtype)
        h = F.relu(F.linear(obs, weight, self.body.bias.to(obs.dtype)).float())
        return self.pi(h), self.v(h).squeeze(-1)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.forward(obs)[1]


def sample(logits: torch.Tensor, masks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Masked actions (Gumbel-max over the valid ones) and their log-probabilities."""
    logits = logits.masked_fill(~masks, MASKED)
    noise = -torch.log(-torch.log(torch.rand_like(logits).clamp_(1e-20, 1.0)))
    actions = (logits + noise).argmax(1)
    logp = logits.log_softmax(1).gather(1, actions[:, None]).squeeze(1)
    return actions, logp


class Learner:
    """The rollout tensors, the network and its optimizer over one vector env."""

    def __init__(self, cfg: Config, seed: int = 0, **env_kwargs: Any):
        torch.manual_seed(seed)
        self.cfg = cfg
        self.env = household_v0.vector_env(cfg.envs, seed=seed, copy=False,
                                           obs_dtype=np.uint8, **{**EASY, **env_kwargs})
        space = self.env.single_observation_space
        self.agents = self.env.num_agents
        m, t, d = cfg.envs * self.agents, cfg.ticks, space.shape[0]
        n = int(self.env.single_action_space.n)
        self.high = space.high
        self.net = Net(space.high, n, cfg.hidden)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=cfg.lr, eps=1e-5,
                                    fused=True)
        # Slot t + 1 of obs/masks is what tick t led to; the last slot starts the next
        # rollout. Observations are converted from uint8 once, as they are stored, and
        # minibatches are runs of whole ticks: views of this buffer, never copied (a
        # fresh tensor this big would also get fresh pages from the OS each time).
        if cfg.ticks % cfg.minibatches:
            raise ValueError(f"--ticks ({cfg.ticks}) must be a multiple of --minibatches "
                             f"({cfg.minibatches})")
        self.dtype = torch.bfloat16 if cfg.bf16 else torch.float32
        self.obs = torch.zeros((t + 1, m, d), dtype=self.dtype)
        self.masks = torch.zeros((t + 1, m, n), dtype=torch.bool)
        self.actions = torch.zeros((t, m), dtype=torch.long)
        self.logp, self.values, self.rewards, self.dones = (
            torch.zeros((t, m)) for _ in range(4))
        self.masks_np = self.masks.numpy()
        self.rewards_np, self.dones_np = self.rewards.numpy(), self.dones.numpy()
        obs, infos = self.env.reset(seed=seed)
        self._store(t, obs, infos["action_mask"])  # the last slot: collect() starts there
        self.steps = 0
        self.episodes: list[tuple[float, bool]] = []  # (return, success) of finished ones
        self.invalid_sampled = 0  # actions the mask forbade: must stay 0

    def _store(self, t: int, obs: np.ndarray, masks: np.ndarray) -> None:
        m = self.cfg.envs * self.agents
        self.obs[t].copy_(torch.from_numpy(obs.reshape(m, -1)))
        self.masks_np[t] = masks.reshape(m, -1).view(np.bool_)

    def collect(self) -> None:
        """One rollout of ``ticks`` ticks into the preallocated tensors."""
        cfg, a = self.cfg, self.agents
        self.obs[0], self.masks[0] = self.obs[-1], self.masks[-1]
        with torch.no_grad():
            scaled = self.net.scaled().to(self.dtype)  # once per rollout, not per tick
            for t in range(cfg.ticks):
                logits, self.values[t] = self.net(self.obs[t], scaled)
                actions, self.logp[t] = sample(logits, self.masks[t])
                self.actions[t] = actions
                self.invalid_sampled += int((~self.masks[t].gather(
                    1, actions[:, None])).sum())
                obs, rew, term, trunc, infos = self.env.step(
                    actions.numpy().reshape(cfg.envs, a))
                self.rewards_np[t] = rew.reshape(-1)
                self.dones_np[t] = (term | trunc).reshape(-1)
                if "final_obs" in infos:
                    self._finish(t, infos, term[:, 0], trunc[:, 0])
                self._store(t + 1, obs, infos["action_mask"])
        self.steps += cfg.ticks * cfg.envs * a

    def _finish(self, t: int, infos: dict, term: np.ndarray, trunc: np.ndarray) -> None:
        """Bootstrap households cut short: ``reward += gamma * V(final observation)``."""
        episode = infos["final_info"]["episode"]
        ended = np.flatnonzero(infos["_final_obs"])
        self.episodes += [(float(episode["r"][i]), bool(episode["is_success"][i]))
                          for i in ended]
        cut = ended[trunc[ended] & ~term[ended]]
        if len(cut):
            last = torch.from_numpy(np.stack([infos["final_obs"][i] for i in cut])
                                    ).to(self.dtype)
            values = self.net.value(last.reshape(len(cut) * self.agents, -1))
            rows = (cut[:, None] * self.agents + np.arange(self.agents)).reshape(-1)
            self.rewards[t, torch.from_numpy(rows)] += self.cfg.gamma * values

    def advantages(self) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE over the rollout; a done step does not look past itself."""
        cfg = self.cfg
        with torch.no_grad():
            next_value = self.net.value(self.obs[-1])
        adv = torch.zeros_like(self.rewards)
        last = torch.zeros_like(next_value)
        for t in reversed(range(cfg.ticks)):
            live = 1.0 - self.dones[t]
            following = next_value if t == cfg.ticks - 1 else self.values[t + 1]
            delta = self.rewards[t] + cfg.gamma * following * live - self.values[t]
            last = delta + cfg.gamma * cfg.lam * live * last
            adv[t] = last
        return adv, adv + self.values

    def update(self) -> dict[str, float]:
        """``epochs`` passes of clipped PPO over the rollout in ``minibatches`` runs of
        whole ticks (each a view of the rollout tensors), in a fresh order each epoch."""
        cfg = self.cfg
        adv, returns = self.advantages()
        per = cfg.ticks // cfg.minibatches
        stats: dict[str, float] = {}
        for _ in range(cfg.epochs):
            for k in torch.randperm(cfg.minibatches).tolist():
                run = slice(k * per, (k + 1) * per)
                obs = self.obs[run].flatten(0, 1)
                logits, value = self.net(obs)
                valid = self.masks[run].flatten(0, 1)
                logp_all = logits.masked_fill(~valid, MASKED).log_softmax(1)
                logp = logp_all.gather(1, self.actions[run].reshape(-1, 1)).squeeze(1)
                entropy = -(logp_all.exp() * logp_all).sum(1).mean()
                a = adv[run].reshape(-1)
                a = (a - a.mean()) / (a.std() + 1e-8)
                ratio = (logp - self.logp[run].reshape(-1)).exp()
                pg = -torch.min(ratio * a, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * a).mean()
                vf = 0.5 * (value - returns[run].reshape(-1)).pow(2).mean()
                loss = pg + cfg.vf_coef * vf - cfg.ent_coef * entropy
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(self.net.parameters(), cfg.max_grad_norm)
                self.opt.step()
                stats = {"loss": loss.item(), "pg": pg.item(), "vf": vf.item(),
                         "entropy": entropy.item()}
        return stats

    def policy(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Sampled masked actions for float32 observations (the scalar env's), as
        ``train_ppo.play`` calls it."""
        with torch.no_grad():
            logits, _ = self.net(torch.from_numpy(to_uint8(obs, self.high)).to(self.dtype))
            return sample(logits, torch.from_numpy(np.asarray(masks, bool)))[0].numpy()


def raw_rate(envs: int, ticks: int, seed: int = 0, valid: bool = True) -> float:
    """The core's agent-steps per CPU second at ``envs`` households under uniform
    random valid actions (the same env settings as the learner's); ``valid=False``:
    uniform random action ids, invalid ones included (``benchmarks/rl/rl_throughput.py``'s
    raw core: a failed action changes nothing, so the core has less to rewrite)."""
    env = household_v0.vector_env(envs, seed=seed, copy=False, obs_dtype=np.uint8, **EASY)
    rng = np.random.default_rng(seed)
    _, infos = env.reset(seed=seed)
    start = time.process_time()
    for _ in range(ticks):
        # argmax of uniform noise on the valid entries: a uniform valid action
        mask = infos["action_mask"] if valid else 1
        acts = (rng.random(infos["action_mask"].shape) * mask).argmax(-1)
        infos = env.step(acts)[4]
    return ticks * envs * env.num_agents / (time.process_time() - start)


def lean_rate(cfg: Config, updates: int, seed: int = 0) -> float:
    """The lean loop's agent-steps per CPU second (collection + updates, no
    evaluation; the first update, which builds the env's tables, is not counted)."""
    learner = Learner(cfg, seed)
    learner.collect()
    learner.update()
    before, start = learner.steps, time.process_time()
    for _ in range(updates):
        learner.collect()
        learner.update()
    return (learner.steps - before) / (time.process_time() - start)


def measure(cfg: Config, slices: int = 2, updates: int = 10) -> dict[str, float]:
    """Raw core and lean loop side by side, alternating ``slices`` times; each rate is
    the best slice (the host is shared: the best is the least disturbed)."""
    raws, ids, leans = [], [], []
    for _ in range(slices):
        raws.append(raw_rate(cfg.envs, updates * cfg.ticks))
        ids.append(raw_rate(cfg.envs, updates * cfg.ticks, valid=False))
        leans.append(lean_rate(cfg, updates))
    raw, lean = max(raws), max(leans)
    return {"raw": raw, "raw_ids": max(ids), "lean": lean, "ratio": raw / lean}


def train(cfg: Config, timesteps: int, out: Path, seed: int = 0, eval_every: int = 100_000,
          episodes: int = 30) -> dict:
    """Train, evaluating on the held-out seeds every ``eval_every`` agent-steps;
    writes ``results.json``. CPU seconds are this process's, with and without the
    evaluations."""
    learner = Learner(cfg, seed)
    curve: list[tuple[int, float, float, float]] = []  # steps, success, cpu, train cpu
    start, eval_cpu, next_eval = time.process_time(), 0.0, eval_every
    while learner.steps < timesteps:
        learner.collect()
        stats = learner.update()
        if learner.steps >= next_eval or learner.steps >= timesteps:
            next_eval += eval_every
            began = time.process_time()
            rate = play(learner.policy, episodes, **EASY)
            eval_cpu += time.process_time() - began
            cpu = time.process_time() - start
            curve.append((learner.steps, rate, round(cpu, 1), round(cpu - eval_cpu, 1)))
            print(f"steps {learner.steps:>9}  held-out success {rate:.2f}  cpu {cpu:.0f}s "
                  f"(train {cpu - eval_cpu:.0f}s)  entropy {stats['entropy']:.2f}",
                  flush=True)
    cpu = time.process_time() - start
    result = {"config": dataclasses.asdict(cfg), "seed": seed, "timesteps": learner.steps,
              "cpu_seconds": round(cpu, 1), "train_cpu_seconds": round(cpu - eval_cpu, 1),
              "agent_steps_per_cpu_s": round(learner.steps / (cpu - eval_cpu)),
              "held_out_success": curve[-1][1], "curve": curve,
              "invalid_sampled": learner.invalid_sampled, "machine": machine()}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1))
    return result


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--timesteps", type=positive(int), default=3_000_000, help="agent-steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/lean"))
    p.add_argument("--eval-every", type=positive(int), default=100_000)
    p.add_argument("--measure", action="store_true",
                   help="only the raw core's and the lean loop's rates, side by side")
    p.add_argument("--updates", type=positive(int), default=10, help="--measure: updates per slice")
    for field in dataclasses.fields(Config):
        # counts above zero (0 households or minibatches failed deep in the loop); bf16 a flag
        kind = (float if field.type == "float" else
                {"choices": (0, 1), "type": int} if field.name == "bf16" else positive(int))
        kw = kind if isinstance(kind, dict) else {"type": kind}
        p.add_argument(f"--{field.name.replace('_', '-')}", **kw, default=field.default,
                       help=f"{field.metadata['help']} (default {field.default})")
    args = p.parse_args(argv)
    torch.set_num_threads(1)  # rates are per CPU second; one thread wastes none
    cfg = Config(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Config)})
    if args.measure:
        r = measure(cfg, updates=args.updates)
        print(f"{cfg}\nraw core {r['raw']:,.0f}  lean loop {r['lean']:,.0f} agent-steps "
              f"per CPU s  ratio {r['ratio']:.2f}x  (raw core under random ids, invalid "
              f"ones included: {r['raw_ids']:,.0f}, {r['raw_ids'] / r['lean']:.2f}x)",
              flush=True)
        return
    result = train(cfg, args.timesteps, args.out, args.seed, args.eval_every)
    print(f"done: {result['timesteps']} agent-steps, held-out success "
          f"{result['held_out_success']:.2f}, {result['train_cpu_seconds']} CPU s "
          f"training ({result['agent_steps_per_cpu_s']:,} agent-steps per CPU s)")


if __name__ == "__main__":
    main()
