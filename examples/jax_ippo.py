"""Masked IPPO on ``household_v0.jax_env``, end to end in one jitted function (PureJaxRL style).

Environment stepping, action masks, rollouts, GAE and the PPO updates all run inside
one ``jax.jit``-compiled ``train(key)``: ``lax.scan`` over updates, inside it a
``lax.scan`` over rollout ticks of ``--envs`` households ``vmap``-ed, then epochs of
minibatch updates. One policy is shared by every agent (parameter sharing, as
JaxMARL's IPPO baselines); illegal actions get ``-1e9`` logits from
``env.get_avail_actions``. The network, written with ``jax.nn`` (no framework): one
ReLU layer of ``--hidden`` units over the flat observation, then the policy and value
heads (the lean PyTorch example's network, ``examples/lean_ppo.py``). Adam from optax.

The setting is the examples' easy one (``docs/rl-examples.md``): studio, two agents,
put one dish into the dishwasher (``put_dishwasher_easy`` with ``container_prob=0``),
full observability at ``view_radius=5``, ``reward_shaping="subgoals"``, 80 ticks.
Training draws from the env's episodes seeded 0 .. 9,999; after training the policy
(sampling from its masked distribution) plays ``--eval-episodes`` episodes seeded from
1,000,000 (held out: none of them was trained on).

Run: ``pip install -e ".[jax,report]"`` (optax comes with jax, matplotlib with report), then
``python examples/jax_ippo.py [--updates 1000] [--out runs/jax_ippo]``; it prints a
line per ``--log-every`` updates, writes ``results.json`` and ``curve.png`` into
``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from orgteams.errors import script_needs_extra

try:  # one line naming the extra, not a traceback, when it is missing
    import jax
    import jax.numpy as jnp
    import optax
except ImportError as exc:
    raise script_needs_extra(exc, "jax") from None

from orgteams.envs import household_v0
from orgteams.envs.core import load_task

HELD_OUT = 1_000_000  # evaluation episodes are seeded from here; training ones from 0


def easy_env(seed: int = 0, episodes: int = 10_000):
    """The examples' easy setting as a JAX env (``examples/train_ppo.py``'s ``EASY``)."""
    task = dataclasses.replace(load_task("put_dishwasher_easy"), container_prob=0.0)
    return household_v0.jax_env(layout="studio", task=task, num_agents=2, units=1,
                                full_observability=True, view_radius=5, obs_mode="flat",
                                reward_shaping="subgoals", max_ticks=80, seed=seed,
                                episodes=episodes)


@dataclasses.dataclass(frozen=True)
class Config:
    envs: int = 64  # households; x agents = actors
    ticks: int = 32  # rollout ticks per update
    updates: int = 1000
    hidden: int = 16
    epochs: int = 1
    minibatches: int = 4
    lr: float = 1e-3
    gamma: float = 0.99
    lam: float = 0.95
    clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5


def init_params(key: jax.Array, inputs: int, hidden: int, actions: int) -> dict:
    """Orthogonal weights (PureJaxRL's scales), zero biases."""
    ortho = jax.nn.initializers.orthogonal
    k1, k2, k3 = jax.random.split(key, 3)
    return {"w": ortho(np.sqrt(2))(k1, (inputs, hidden)), "b": jnp.zeros(hidden),
            "wpi": ortho(0.01)(k2, (hidden, actions)), "bpi": jnp.zeros(actions),
            "wv": ortho(1.0)(k3, (hidden, 1)), "bv": jnp.zeros(1)}


def policy(params: dict, obs: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(masked log-probabilities, value) of a batch of observations."""
    h = jax.nn.relu(obs @ params["w"] + params["b"])
    logits = jnp.where(mask > 0, h @ params["wpi"] + params["bpi"], -1e9)
    return jax.nn.log_softmax(logits), (h @ params["wv"] + params["bv"])[:, 0]


class Transition(NamedTuple):
    obs: jax.Array
    mask: jax.Array
    action: jax.Array
    logp: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array


def make_train(cfg: Config, env: Any):
    """``train(key)``: the whole run, for ``jax.jit``. Returns the final parameters and
    per-update metrics (mean episode return and success rate of the episodes that
    ended in the update's rollout, and how many ended)."""
    agents, n = env.agents, cfg.envs
    actors = n * len(agents)
    dim = env.observation_space(agents[0]).shape[0]
    num_actions = env.action_space(agents[0]).n
    tx = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm),
                     optax.adam(cfg.lr, eps=1e-5))

    def batchify(per_agent: dict) -> jax.Array:  # {agent: (N, ...)} -> (A * N, ...)
        return jnp.concatenate([per_agent[a] for a in agents]).reshape(actors, -1)

    def unbatchify(x: jax.Array) -> dict:
        return {a: x[i * n:(i + 1) * n] for i, a in enumerate(agents)}

    def loss_fn(params, batch: Transition, advantages, targets):
        logp_all, value = policy(params, batch.obs, batch.mask)
        logp = jnp.take_along_axis(logp_all, batch.action[:, None], axis=1)[:, 0]
        ratio = jnp.exp(logp - batch.logp)
        adv = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - cfg.clip, 1 + cfg.clip) * adv)
        v_clipped = batch.value + jnp.clip(value - batch.value, -cfg.clip, cfg.clip)
        vf = 0.5 * jnp.maximum((value - targets) ** 2, (v_clipped - targets) ** 2)
        probs = jnp.exp(logp_all)
        entropy = -(probs * jnp.where(batch.mask > 0, logp_all, 0.0)).sum(axis=1)
        return pg.mean() + cfg.vf_coef * vf.mean() - cfg.ent_coef * entropy.mean()

    def train(key: jax.Array):
        key, k_init, k_reset = jax.random.split(key, 3)
        params = init_params(k_init, dim, cfg.hidden, num_actions)
        opt_state = tx.init(params)
        obs, state = jax.vmap(env.reset)(jax.random.split(k_reset, n))
        episode_return = jnp.zeros(n)

        def rollout_tick(carry, key):
            params, state, obs, episode_return = carry
            k_act, k_step = jax.random.split(key)
            x = batchify(obs).astype(jnp.float32)
            mask = batchify(jax.vmap(env.get_avail_actions)(state))
            logp_all, value = policy(params, x, mask)
            action = jax.random.categorical(k_act, logp_all)
            logp = jnp.take_along_axis(logp_all, action[:, None], axis=1)[:, 0]
            obs, state, reward, dones, info = jax.vmap(env.step)(
                jax.random.split(k_step, n), state, unbatchify(action))
            ended = dones["__all__"]
            episode_return = episode_return + reward[agents[0]]
            success = info["is_success"][:, 0] & ended
            t = Transition(x, mask, action, logp, value, batchify(reward)[:, 0],
                           batchify(dones)[:, 0].astype(jnp.float32))
            stats = (ended, success, jnp.where(ended, episode_return, 0.0))
            episode_return = jnp.where(ended, 0.0, episode_return)
            return (params, state, obs, episode_return), (t, stats)

        def update(carry, key):
            params, opt_state, state, obs, episode_return = carry
            k_roll, k_perm = jax.random.split(key)
            (_, state, obs, episode_return), (traj, stats) = jax.lax.scan(
                rollout_tick, (params, state, obs, episode_return),
                jax.random.split(k_roll, cfg.ticks))
            x = batchify(obs).astype(jnp.float32)
            _, last_value = policy(params, x, batchify(jax.vmap(env.get_avail_actions)(state)))

            def gae(carry, t: Transition):
                advantage, next_value = carry
                delta = t.reward + cfg.gamma * next_value * (1 - t.done) - t.value
                advantage = delta + cfg.gamma * cfg.lam * (1 - t.done) * advantage
                return (advantage, t.value), advantage

            _, advantages = jax.lax.scan(gae, (jnp.zeros_like(last_value), last_value),
                                         traj, reverse=True)
            targets = advantages + traj.value

            def epoch(carry, key):
                params, opt_state = carry
                size = cfg.ticks * actors
                perm = jax.random.permutation(key, size)
                flat = jax.tree.map(lambda z: z.reshape(size, *z.shape[2:]),
                                    (traj, advantages, targets))
                shuffled = jax.tree.map(
                    lambda z: z[perm].reshape(cfg.minibatches, -1, *z.shape[1:]), flat)

                def minibatch(carry, batch):
                    params, opt_state = carry
                    t, adv, tgt = batch
                    grads = jax.grad(loss_fn)(params, t, adv, tgt)
                    updates, opt_state = tx.update(grads, opt_state)
                    return (optax.apply_updates(params, updates), opt_state), None

                return jax.lax.scan(minibatch, (params, opt_state), shuffled)[0], None

            (params, opt_state), _ = jax.lax.scan(epoch, (params, opt_state),
                                                  jax.random.split(k_perm, cfg.epochs))
            ended, success, returns = stats
            count = ended.sum()
            metrics = {"episodes": count,
                       "success": success.sum() / jnp.maximum(count, 1),
                       "return": returns.sum() / jnp.maximum(count, 1)}
            return (params, opt_state, state, obs, episode_return), metrics

        (params, *_), metrics = jax.lax.scan(
            update, (params, opt_state, state, obs, episode_return),
            jax.random.split(key, cfg.updates))
        return params, metrics

    return train


def make_evaluate(env: Any, households: int, ticks: int):
    """``evaluate(params, key)``: ``households`` households each play one episode (the
    first, within ``ticks`` ticks) with the policy; returns (episodes ended, of which
    successes)."""
    agents = env.agents

    def evaluate(params, key):
        key, k_reset = jax.random.split(key)
        obs, state = jax.vmap(env.reset)(jax.random.split(k_reset, households))

        def tick(carry, key):
            state, obs, finished = carry
            k_act, k_step = jax.random.split(key)
            x = jnp.concatenate([obs[a] for a in agents]).astype(jnp.float32)
            masks = jax.vmap(env.get_avail_actions)(state)
            mask = jnp.concatenate([masks[a] for a in agents])
            logp, _ = policy(params, x, mask)
            action = jax.random.categorical(k_act, logp)
            acts = {a: action[i * households:(i + 1) * households]
                    for i, a in enumerate(agents)}
            obs, state, _, dones, info = jax.vmap(env.step)(
                jax.random.split(k_step, households), state, acts)
            first = dones["__all__"] & ~finished  # only each household's first episode
            return (state, obs, finished | first), (
                first.sum(), (info["is_success"][:, 0] & first).sum())

        _, (ended, success) = jax.lax.scan(tick, (state, obs, jnp.zeros(households, bool)),
                                           jax.random.split(key, ticks))
        return ended.sum(), success.sum()

    return evaluate


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for field in dataclasses.fields(Config):
        parser.add_argument(f"--{field.name.replace('_', '-')}", type=type(field.default),
                            default=field.default)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--episodes", type=int, default=10_000,
                        help="training episodes drawn (seeded 0 .. episodes - 1)")
    parser.add_argument("--eval-episodes", type=int, default=1000,
                        help="held-out episodes, seeded from 1,000,000")
    parser.add_argument("--log-every", type=int, default=25)
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for results.json and curve.png")
    args = parser.parse_args(argv)
    cfg = Config(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Config)})
    env = easy_env(episodes=args.episodes)
    train = jax.jit(make_train(cfg, env))
    start = time.perf_counter()
    compiled = train.lower(jax.random.PRNGKey(args.seed)).compile()
    compile_s = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    params, metrics = compiled(jax.random.PRNGKey(args.seed))
    metrics = jax.tree.map(np.asarray, jax.block_until_ready(metrics))
    train_s, train_cpu = time.perf_counter() - start, time.process_time() - cpu
    per_update = cfg.envs * cfg.ticks * env.num_agents
    for u in range(0, cfg.updates, args.log_every):
        window = slice(u, min(u + args.log_every, cfg.updates))
        done = metrics["episodes"][window]
        rate = (metrics["success"][window] * done).sum() / max(done.sum(), 1)
        ret = (metrics["return"][window] * done).sum() / max(done.sum(), 1)
        print(f"updates {u + 1:>4}-{window.stop:<4} agent-steps {window.stop * per_update:>9,} "
              f"episodes {int(done.sum()):>5}  success {rate:5.2f}  return {ret:5.2f}")
    held_out = easy_env(seed=HELD_OUT, episodes=args.eval_episodes)
    ticks = 80  # max_ticks: every household's first episode ends within them
    households = args.eval_episodes
    ended, success = jax.jit(make_evaluate(held_out, households, ticks))(
        params, jax.random.PRNGKey(args.seed + 1))
    result = {"config": dataclasses.asdict(cfg), "seed": args.seed,
              "agent_steps": cfg.updates * per_update, "compile_s": round(compile_s, 1),
              "train_s": round(train_s, 1), "train_cpu_s": round(train_cpu, 1),
              "agent_steps_per_s": round(cfg.updates * per_update / train_s),
              "held_out": {"households": households, "ticks": ticks,
                           "episodes": int(ended), "successes": int(success),
                           "success_rate": round(float(success) / max(int(ended), 1), 3)},
              "curve": {k: np.round(v.astype(float), 4).tolist() for k, v in metrics.items()}}
    print(f"{result['agent_steps']:,} agent-steps in {train_s:.1f} s ({train_cpu:.1f} CPU s; "
          f"compile {compile_s:.1f} s); held-out success {result['held_out']['success_rate']:.2f}"
          f" ({int(success)} of {int(ended)} episodes)")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(result, indent=1))
        plot(result, args.out / "curve.png")
    return result


def plot(result: dict, path: Path, window: int = 10) -> None:
    """Training success rate (moving average over ``window`` updates, weighted by
    episodes) against agent-steps, and the held-out rate at the end."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = result["curve"]
    done = np.asarray(curve["episodes"], float)
    wins = np.asarray(curve["success"]) * done
    kernel = np.ones(window)
    rate = np.convolve(wins, kernel, "valid") / np.maximum(np.convolve(done, kernel, "valid"), 1)
    per_update = result["agent_steps"] / len(done)
    steps = (np.arange(len(rate)) + window) * per_update
    fig, ax = plt.subplots(figsize=(5, 3), dpi=80)
    ax.plot(steps, rate, label=f"training episodes ({window}-update mean)")
    ax.scatter([result["agent_steps"]], [result["held_out"]["success_rate"]], color="C3",
               zorder=3, label="held-out episodes, end")
    ax.set_xlabel("agent-steps")
    ax.set_ylabel("success rate")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(f"IPPO on jax_env (studio, 2 agents), {result['train_s']:.0f} s", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
