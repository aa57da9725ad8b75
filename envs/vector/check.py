"""Differential check: the batched core beside scalar envs, compared at every tick.

:func:`compare_with_scalar` steps one :class:`VectorHouseholdEnv` and ``num_envs``
scalar :class:`HouseholdEnv` (seeded ``seed + i``, reset plainly when an episode ends,
as the vector env's autoreset does) with the same joint actions: uniform random ids,
masked-random ones (valid actions, interactions preferred, so containers open and
objects move), or a mix. At every tick it compares, household by household: the
state (tick, positions, hands, contents, open flags, goal progress), observations,
action masks, rewards, terminations, truncations, each agent's ``invalid_action`` /
``collision`` events, and at an episode's end the final observation and the
``episode`` statistics. The first difference raises ``AssertionError`` naming the
tick, household and what differs. Used by ``tests/envs/vector/test_vector_differential.py``.

:func:`compare_jax_env_with_scalar` does the same for the pure JAX env
(``household_v0.jax_env``, ``vmap``-ed over the households and ``jit``-compiled):
each scalar env is reset with the seed of the episode the JAX env drew
(``state.episode``), and rewards are compared as float32 (the JAX env's dtype).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from orgteams.envs.core.actions import NUM_ACTIONS
from orgteams.envs.household import HouseholdEnv
from orgteams.envs.vector.batch import BatchState
from orgteams.envs.vector.env import VectorHouseholdEnv
from orgteams.envs.vector.flat_buffer import to_uint8

POLICIES = ("random", "masked", "mixed")
JAX_ENV_ONLY = ("obs_dtype",)  # JAX env arguments the scalar env has not
VECTOR_ONLY = ("obs_dtype", "copy")  # vector env arguments the scalar env has not


@dataclass
class CheckStats:
    """What a comparison covered."""

    ticks: int = 0  # household-ticks compared (steps x households)
    episodes: int = 0  # episodes that ended (autoreset exercised)
    successes: int = 0  # of which by reaching the goal
    picks_or_puts: int = 0  # household-ticks in which objects moved
    collisions: int = 0


def _choose(rng: np.random.Generator, masks: np.ndarray, policy: str) -> np.ndarray:
    n, agents, _ = masks.shape
    acts = rng.integers(0, NUM_ACTIONS, size=(n, agents))
    if policy == "random":
        return acts
    for e in range(n):
        for a in range(agents):
            if policy == "mixed" and rng.random() < 0.3:
                continue
            valid = np.flatnonzero(masks[e, a])
            weights = np.where(valid >= 5, 6.0, 1.0)
            acts[e, a] = rng.choice(valid, p=weights / weights.sum())
    return acts


def _fail(tick: int, i: int, what: str) -> AssertionError:
    return AssertionError(f"tick {tick}, household {i}: {what} differs from the scalar env")


def compare_with_scalar(num_envs: int, steps: int, seed: int = 0, policy: str = "mixed",
                        backend: str = "numpy", **env_kwargs) -> CheckStats:
    """Step both cores ``steps`` times side by side; raise on the first difference.
    ``backend``: the vector env's (``"numpy"`` or ``"jax"``)."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    env_kwargs.setdefault("obs_mode", "flat")  # the vector env's default, not the scalar's
    vec_only = {k: env_kwargs.pop(k) for k in VECTOR_ONLY if k in env_kwargs}
    vec = VectorHouseholdEnv(num_envs, seed=seed, backend=backend, **env_kwargs, **vec_only)
    # rich_infos: the reference's events and episode statistics, compared below
    scalar = [HouseholdEnv(**env_kwargs, rich_infos=True) for _ in range(num_envs)]
    obs, info = vec.reset()
    ref = [env.reset(seed=seed + i) for i, env in enumerate(scalar)]
    for i, (env, (o, inf)) in enumerate(zip(scalar, ref)):
        _compare_tick(0, i, vec, env, obs[i], info["action_mask"][i], o, inf)
    rng = np.random.default_rng(seed)
    stats = CheckStats()
    for _ in range(steps):
        acts = _choose(rng, vec.action_masks(), policy)
        obs, rew, term, trunc, info = vec.step(acts)
        for i, env in enumerate(scalar):
            names = env.possible_agents
            o, r, te, tr, inf = env.step(dict(zip(names, acts[i].tolist())))
            tick = env.world.tick
            first = names[0]
            # rewards as float32, the vector APIs' dtype
            if (np.float32(r[first]), te[first], tr[first]) != (rew[i, 0], term[i, 0],
                                                                 trunc[i, 0]):
                raise _fail(tick, i, f"reward/terminated/truncated ({r[first]}, {te[first]}, "
                                     f"{tr[first]}) vs ({rew[i, 0]}, {term[i, 0]}, "
                                     f"{trunc[i, 0]})")
            if not ((rew[i] == rew[i, 0]).all() and (term[i] == term[i, 0]).all()
                    and (trunc[i] == trunc[i, 0]).all()):
                raise _fail(tick, i, "the team's reward or done flags across agents")
            for a, name in enumerate(names):
                kinds = {e["type"] for e in inf[name]["events"] if e.get("agent") == a}
                if (("invalid_action" in kinds) != info["invalid_action"][i, a]
                        or ("collision" in kinds) != info["collision"][i, a]):
                    raise _fail(tick, i, f"agent {a}'s events {sorted(kinds)}")
                stats.collisions += "collision" in kinds
            stats.picks_or_puts += any(e["type"] in ("picked", "placed")
                                       for n in names for e in inf[n]["events"])
            if te[first] or tr[first]:
                if not info["_final_obs"][i]:
                    raise _fail(tick, i, "the end of the episode (no final_obs)")
                _same(tick, i, "final observation", _expected(vec, o, names),
                      info["final_obs"][i])
                want = inf[first]["episode"]
                got = {k: v[i].item() for k, v in info["final_info"]["episode"].items()}
                if want != got:
                    raise _fail(tick, i, f"episode statistics {want} vs {got}")
                stats.episodes += 1
                stats.successes += bool(te[first])
                o, inf = env.reset()
            elif info.get("_final_obs", np.zeros(num_envs, bool))[i]:
                raise _fail(tick, i, "the end of the episode (final_obs without an end)")
            _compare_tick(tick, i, vec, env, obs[i], info["action_mask"][i], o, inf)
        stats.ticks += num_envs
    return stats


def compare_jax_env_with_scalar(num_envs: int, steps: int, seed: int = 0,
                                policy: str = "mixed", episodes: int = 64,
                                **env_kwargs) -> CheckStats:
    """Step ``household_v0.jax_env`` (``num_envs`` households in one ``vmap``, drawing
    from ``episodes`` episodes seeded from ``seed``) beside ``num_envs`` scalar envs;
    raise on the first difference: state, observations (through ``get_obs``), masks
    (``get_avail_actions``), rewards (``np.float32`` of the scalar's), dones and
    ``__all__``, each agent's events, ``is_success`` / ``truncated`` / ``tick``, and
    at an episode's end its statistics (all of ``info["episode"]`` but the return ``r``,
    a float64 sum the JAX env leaves to ``LogWrapper``). The JAX env's autoreset is
    followed: when it ends an episode the scalar env is reset with the seed of the one
    it drew next."""
    import jax  # the caller has the jax extra (jax_env raises MissingExtraError)

    from orgteams.envs.vector.functional.env import HouseholdJaxEnv

    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    env_kwargs.setdefault("obs_mode", "flat")
    jax_only = {k: env_kwargs.pop(k) for k in JAX_ENV_ONLY if k in env_kwargs}
    env = HouseholdJaxEnv(seed=seed, episodes=episodes, **env_kwargs, **jax_only)
    # rich_infos: the reference's events and episode statistics, compared below
    scalar = [HouseholdEnv(**env_kwargs, rich_infos=True) for _ in range(num_envs)]
    names = env.agents
    space = env.observation_space(names[0])
    scale = np.asarray(space.high) if np.dtype(space.dtype) == np.uint8 \
        and env_kwargs["obs_mode"] == "flat" else None
    reset, step = jax.jit(jax.vmap(env.reset)), jax.jit(jax.vmap(env.step))
    avail = jax.jit(jax.vmap(env.get_avail_actions))

    def arrays(per_agent: dict) -> np.ndarray:  # {agent: (N, ...)} -> (N, A, ...)
        return np.stack([np.asarray(per_agent[a]) for a in names], axis=1)

    def expected(ref_obs: dict) -> np.ndarray:
        want = np.stack([ref_obs[a] for a in names])
        return want if scale is None else to_uint8(want, scale)

    def compare(tick: int, i: int, ref: HouseholdEnv, state: Any, obs: np.ndarray,
                masks: np.ndarray, ref_obs: dict, ref_info: dict) -> None:
        world = {k: np.asarray(getattr(state, k)) for k in _JAX_WORLD}
        got = BatchState(**world, step_limit=np.zeros(num_envs, np.int64)).unpack(
            i, ref.world.scene)
        want = ref.world
        if got._key() != want._key() or got.progress != want.progress:
            raise _fail(tick, i, f"state {got.to_dict()} vs {want.to_dict()}"[:2000])
        _same(tick, i, "observation", expected(ref_obs), obs[i])
        _same(tick, i, "action mask", np.stack([ref_info[a]["action_mask"] for a in names]),
              masks[i])

    key = jax.random.PRNGKey(seed)
    key, sub = jax.random.split(key)
    obs, state = reset(jax.random.split(sub, num_envs))
    obs, masks = arrays(obs), arrays(avail(state))
    for i, ref in enumerate(scalar):
        o, inf = ref.reset(seed=seed + int(state.episode[i]))
        compare(0, i, ref, state, obs, masks, o, inf)
    rng = np.random.default_rng(seed)
    stats = CheckStats()
    first = names[0]
    for _ in range(steps):
        acts = _choose(rng, masks, policy)
        key, sub = jax.random.split(key)
        obs, state, rew, dones, info = step(jax.random.split(sub, num_envs), state,
                                            {a: acts[:, j] for j, a in enumerate(names)})
        obs, masks, rew, done = arrays(obs), arrays(avail(state)), arrays(rew), arrays(dones)
        info = {k: np.asarray(v) for k, v in info.items()}
        everyone = np.asarray(dones["__all__"])
        for i, ref in enumerate(scalar):
            o, r, te, tr, inf = ref.step(dict(zip(names, acts[i].tolist())))
            tick = ref.world.tick
            want = (np.float32(r[first]), te[first] or tr[first])
            if want != (rew[i, 0], done[i, 0]) or everyone[i] != want[1]:
                raise _fail(tick, i, f"reward/done ({want[0]}, {want[1]}) vs ({rew[i, 0]}, "
                                     f"{done[i, 0]}, __all__ {everyone[i]})")
            if not ((rew[i] == rew[i, 0]).all() and (done[i] == done[i, 0]).all()):
                raise _fail(tick, i, "the team's reward or done flags across agents")
            for a, name in enumerate(names):
                kinds = {e["type"] for e in inf[name]["events"] if e.get("agent") == a}
                if (("invalid_action" in kinds) != info["invalid_action"][i, a]
                        or ("collision" in kinds) != info["collision"][i, a]):
                    raise _fail(tick, i, f"agent {a}'s events {sorted(kinds)}")
                stats.collisions += "collision" in kinds
            flags = (inf[first]["is_success"], tr[first], inf[first]["tick"])
            if flags != (info["is_success"][i, 0], info["truncated"][i, 0], info["tick"][i, 0]):
                raise _fail(tick, i, f"is_success/truncated/tick {flags} vs "
                                     f"({info['is_success'][i, 0]}, {info['truncated'][i, 0]}, "
                                     f"{info['tick'][i, 0]})")
            stats.picks_or_puts += any(e["type"] in ("picked", "placed")
                                       for n in names for e in inf[n]["events"])
            if te[first] or tr[first]:
                episode = dict(inf[first]["episode"])
                del episode["r"]
                got = {"l": info["tick"][i, 0].item(),
                       "is_success": info["is_success"][i, 0].item(),
                       **{k: info[k][i, 0].item() for k in ("units_done", "units_total",
                                                             "invalid_actions", "collisions")}}
                if episode != got:
                    raise _fail(tick, i, f"episode statistics {episode} vs {got}")
                stats.episodes += 1
                stats.successes += bool(te[first])
                o, inf = ref.reset(seed=seed + int(state.episode[i]))
            compare(tick, i, ref, state, obs, masks, o, inf)
        stats.ticks += num_envs
    return stats


# The fields of the JAX env's state that BatchState has.
_JAX_WORLD = ("tick", "pos", "hands", "held", "contents", "count", "container_open",
              "door_open", "progress", "object_class", "goal_class", "goal_target",
              "goal_count")


def _compare_tick(tick: int, i: int, vec: VectorHouseholdEnv, env: HouseholdEnv,
                  obs: np.ndarray, masks: np.ndarray, ref_obs: dict, ref_info: dict) -> None:
    names = env.possible_agents
    got, want = vec.state(i), env.world
    if got._key() != want._key() or got.progress != want.progress:
        raise _fail(tick, i, f"state {got.to_dict()} vs {want.to_dict()}"[:2000])
    _same(tick, i, "observation", _expected(vec, ref_obs, names), obs)
    _same(tick, i, "action mask", np.stack([ref_info[n]["action_mask"] for n in names]), masks)


def _expected(vec: VectorHouseholdEnv, ref_obs: dict, names: list[str]) -> np.ndarray:
    """The scalar env's observations as the vector env encodes them (``obs_dtype``)."""
    want = np.stack([ref_obs[n] for n in names])
    return to_uint8(want, vec._scale) if vec.obs_dtype == np.uint8 else want


def _same(tick: int, i: int, what: str, want: np.ndarray, got: np.ndarray) -> None:
    if want.shape != got.shape or want.dtype != got.dtype or not np.array_equal(want, got):
        where = np.argwhere(want != got)[:3].tolist() if want.shape == got.shape else "shape"
        raise _fail(tick, i, f"{what} ({want.shape} {want.dtype} vs {got.shape} "
                             f"{got.dtype}; first differences at {where})")


__all__ = ["compare_with_scalar", "compare_jax_env_with_scalar", "CheckStats", "POLICIES"]
