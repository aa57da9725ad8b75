"""``household_v0.jax_env``: the pure JAX env against the scalar env, and its API
(jit / vmap / scan, JaxMARL's interface, autoreset, spaces, errors)."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

from orgteams.envs import household_v0
from orgteams.envs.vector.check import compare_jax_env_with_scalar
from orgteams.errors import MissingExtraError

jax = pytest.importorskip("jax", reason="needs the jax extra")
jnp = jax.numpy

SMALL = dict(layout="studio", task="put_dishwasher_easy", units=1, num_agents=2,
             view_radius=2, episodes=16)


def test_jax_env_equals_the_scalar_env():
    """Eight households of studio, masked-random actions, 60-tick episodes: every tick
    equal to the scalar env, through resets, picks and puts, and two successes."""
    stats = compare_jax_env_with_scalar(8, 400, seed=14, policy="masked", layout="studio",
                                        num_agents=2, task="put_dishwasher_easy", units=1,
                                        max_ticks=60, reward_shaping="subgoals",
                                        view_radius=3)
    assert stats.ticks == 8 * 400 and stats.episodes >= 40
    assert stats.successes >= 1 and stats.picks_or_puts > 100


@pytest.mark.slow  # a compile and a few thousand scalar ticks per configuration
@pytest.mark.parametrize(("layout", "agents", "policy", "extra"), [
    ("apartment", 3, "masked", {"reward_shaping": "subgoals"}),
    ("apartment", 3, "mixed", {"obs_dtype": np.uint8, "reward_shaping": True}),
    ("house", 5, "masked", {"obs_mode": "image", "view_radius": 4}),
    ("house", 4, "mixed", {"obs_mode": "image", "view_radius": 2, "image_scale": 1,
                           "reward_shaping": "subgoals"}),
    ("generated:6:1", 8, "masked", {"full_observability": True, "reward_shaping": "subgoals"}),
    ("generated:12:3", 6, "mixed", {"obs_dtype": np.uint8, "reward_shaping": "units"}),
    ("studio", 16, "masked", {"view_radius": 3, "reward_shaping": "subgoals"}),
    ("studio", 1, "masked", {"reward_shaping": "subgoals"}),
])
def test_jax_env_equals_the_scalar_env_over_long_runs(layout, agents, policy, extra):
    stats = compare_jax_env_with_scalar(6, 600, seed=agents * 5, policy=policy,
                                        layout=layout, task="put_dishwasher_easy", units=1,
                                        num_agents=agents, max_ticks=40, **extra)
    assert stats.ticks == 6 * 600 and stats.episodes >= 6 * 15 and stats.picks_or_puts > 0


@pytest.mark.slow
def test_jax_env_equals_the_scalar_env_on_a_full_task():
    """The default task's goal sizes and step limit (episodes end by truncation at the
    layout's limit, not a short max_ticks)."""
    stats = compare_jax_env_with_scalar(4, 900, seed=1, policy="masked", layout="apartment",
                                        task="prepare_afternoon_tea", num_agents=3,
                                        reward_shaping="subgoals")
    assert stats.ticks == 4 * 900 and stats.episodes >= 4 and stats.picks_or_puts > 100


def test_the_check_catches_a_difference(monkeypatch):
    """A JAX mask that drifts from the scalar rule fails the comparison."""
    from orgteams.envs.vector.functional.core import JaxCore

    real = JaxCore._masks_one
    monkeypatch.setattr(JaxCore, "_masks_one", lambda self, st: real(self, st).at[:, 0].set(0))
    with pytest.raises(AssertionError, match=re.escape(
            "tick 0, household 0: action mask ((2, 53) int8 vs (2, 53) int8; "
            "first differences at [[0, 0]")):
        compare_jax_env_with_scalar(2, 5, layout="studio", num_agents=2, view_radius=2)


def test_the_check_catches_a_reward_difference(monkeypatch):
    """Rewards one float32 step off the scalar's fail the comparison."""
    from orgteams.envs.vector.functional import env as jax_env

    real = jax_env._reward_table
    monkeypatch.setattr(jax_env, "_reward_table", lambda *a: np.nextafter(
        real(*a), np.float32(2)))
    with pytest.raises(AssertionError, match=r"tick 1, household 0: reward/done \(0\.0, "):
        compare_jax_env_with_scalar(2, 3, layout="studio", num_agents=2, view_radius=2,
                                    reward_shaping=True)


def rollout_scan(env, keys, steps):
    """``steps`` random ticks of ``len(keys)`` households in one jitted lax.scan."""
    n = len(keys)

    def run(keys):
        obs, state = jax.vmap(env.reset)(keys)

        def tick(state, key):
            k_act, k_step = jax.random.split(key)
            acts = jax.random.randint(k_act, (n, env.num_agents), 0, 53)
            obs, state, rew, dones, info = jax.vmap(env.step)(
                jax.random.split(k_step, n), state, acts)
            return state, (obs[env.agents[0]], rew[env.agents[0]], dones["__all__"],
                           info["tick"][:, 0], acts)

        return jax.lax.scan(tick, state, jax.random.split(keys[0], steps))

    return jax.jit(run)(keys)


def test_scan_equals_step_by_step_calls():
    """The same ticks through jit(vmap) in a lax.scan and one env.step call at a time
    (pure functions: equal outputs)."""
    env = household_v0.jax_env(max_ticks=5, **SMALL)
    keys = jax.random.split(jax.random.PRNGKey(3), 3)
    final, (obs0, rew0, done, tick, acts) = rollout_scan(env, keys, 12)
    assert done.sum() >= 3 * 2  # episodes of 5 ticks ended and reset inside the scan
    for i in range(3):
        _, state = env.reset(keys[i])
        k_steps = jax.random.split(keys[0], 12)
        for t in range(12):
            k_step = jax.random.split(jax.random.split(k_steps[t])[1], 3)[i]
            obs, state, rew, dones, info = env.step(
                k_step, state, {a: acts[t, i, j] for j, a in enumerate(env.agents)})
            np.testing.assert_array_equal(obs[env.agents[0]], obs0[t, i])
            assert (float(rew[env.agents[0]]), bool(dones["__all__"]),
                    int(info["tick"][0])) == (rew0[t, i], done[t, i], tick[t, i])
        for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(final)):
            np.testing.assert_array_equal(a, b[i])


@pytest.mark.parametrize("kwargs", [{}, {"obs_mode": "image", "image_scale": 1}])
def test_each_agents_observation_is_its_row_of_observations(kwargs):
    """get_obs encodes each agent's window on its own (one array per agent); it equals
    that agent's row of observations(), which encodes all at once, through ticks where
    teammates come into view, leave it and hold objects (4 agents, view radius 2)."""
    env = household_v0.jax_env(**{**SMALL, "num_agents": 4, **kwargs})
    n = 6

    def run(keys):
        _, state = jax.vmap(env.reset)(keys)

        def tick(state, key):
            acts = jax.random.randint(key, (n, 4), 0, 53)
            _, state, *_ = jax.vmap(env.step)(keys, state, acts)
            obs = jax.vmap(env.get_obs)(state)
            pos = state.pos
            seen = jax.vmap(env._core._window_slot)(pos[:, :, None], pos[:, None, :])
            return state, (jnp.stack([obs[a] for a in env.agents], axis=1),
                           jax.vmap(env.observations)(state), (seen < 0).sum())

        return jax.lax.scan(tick, state, jax.random.split(keys[0], 40))[1]

    per_agent, together, hidden = jax.jit(run)(jax.random.split(jax.random.PRNGKey(5), n))
    np.testing.assert_array_equal(per_agent, together)
    assert int(hidden.sum()) > 0  # some teammates were out of view


def test_autoreset_follows_jaxmarl():
    """At the tick an episode ends: rewards, dones and infos of that tick; state and
    observations of the next episode (``reset_state`` when given, else drawn)."""
    env = household_v0.jax_env(max_ticks=2, **SMALL)
    _, state = env.reset(jax.random.PRNGKey(0))
    _, nxt = env.reset(jax.random.PRNGKey(7))
    wait = {a: 0 for a in env.agents}
    _, state, _, dones, info = env.step(jax.random.PRNGKey(1), state, wait)
    assert not dones["__all__"] and int(state.tick) == 1
    obs, after, rew, dones, info = env.step(jax.random.PRNGKey(2), state, wait, nxt)
    assert bool(dones["__all__"]) and all(bool(dones[a]) for a in env.agents)
    assert info["tick"].tolist() == [2, 2] and info["truncated"].tolist() == [True, True]
    assert not info["is_success"].any() and float(rew[env.agents[0]]) == 0.0
    for a, b in zip(jax.tree.leaves(after), jax.tree.leaves(nxt)):
        np.testing.assert_array_equal(a, b)
    for agent, o in env.get_obs(nxt).items():
        np.testing.assert_array_equal(obs[agent], o)
    # Without reset_state the next episode is drawn with the step's key.
    _, drawn, *_ = env.step(jax.random.PRNGKey(2), state, wait)
    assert int(drawn.tick) == 0 and 0 <= int(drawn.episode) < env.num_episodes


def test_episodes_are_the_scalar_envs_seeded_episodes():
    """Episode j of the env is the scalar env's reset(seed=seed + j): same world."""
    env = household_v0.jax_env(seed=40, **SMALL)
    scalar = household_v0.parallel_env(layout="studio", task="put_dishwasher_easy",
                                       units=1, num_agents=2)
    seen = set()
    for k in range(6):
        _, state = env.reset(jax.random.PRNGKey(k))
        j = int(state.episode)
        seen.add(j)
        scalar.reset(seed=40 + j)
        world = scalar.world
        assert np.asarray(state.pos).tolist() == world.agent_pos
        counts = np.asarray(state.count).tolist()
        assert counts == [len(c) for c in world.contents]
    assert len(seen) > 1


def test_actions_as_dict_or_array_and_clipped():
    """Actions: a dict by agent or one (A,) array; ids outside [0, 53) are clipped."""
    env = household_v0.jax_env(**SMALL)
    _, state = env.reset(jax.random.PRNGKey(1))
    key = jax.random.PRNGKey(0)
    as_dict = env.step(key, state, {"agent_0": 52, "agent_1": 0})
    as_array = env.step(key, state, jnp.array([52, 0]))
    clipped = env.step(key, state, jnp.array([99, -4]))
    for a, b, c in zip(jax.tree.leaves(as_dict), jax.tree.leaves(as_array),
                       jax.tree.leaves(clipped)):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize(("kwargs", "shape", "dtype", "high"), [
    ({}, (8764,), np.float32, 1.0),
    ({"view_radius": 2, "obs_dtype": np.uint8}, (1164,), np.uint8, None),
    ({"obs_mode": "image", "view_radius": 2, "image_scale": 1}, (38, 5, 5), np.uint8, 255),
])
def test_spaces_describe_the_observations(kwargs, shape, dtype, high):
    env = household_v0.jax_env(layout="studio", task="put_dishwasher_easy", num_agents=2,
                               episodes=4, **kwargs)
    space = env.observation_space("agent_1")
    obs, state = env.reset(jax.random.PRNGKey(0))
    assert space.shape == shape and np.dtype(space.dtype) == dtype
    assert obs["agent_1"].shape == shape and obs["agent_1"].dtype == dtype
    assert bool(space.contains(obs["agent_1"]))
    if high is not None:
        assert np.all(np.asarray(space.high) == high)
    else:  # uint8 flat: each entry's bound is its scale (counts up to their most)
        assert np.asarray(space.high).max() > 1 and np.asarray(space.high).min() == 1
    act = env.action_space("agent_0")
    assert act.n == 53 and bool(act.contains(act.sample(jax.random.PRNGKey(2))))
    masks = env.get_avail_actions(state)
    assert set(masks) == set(env.agents) and masks["agent_0"].shape == (53,)
    assert masks["agent_0"].dtype == jnp.int8 and int(masks["agent_0"][0]) == 1  # wait


def test_bad_arguments_get_one_clear_line():
    with pytest.raises(ValueError, match=re.escape(
            "obs_mode must be one of ('flat', 'image') for the JAX env, got 'array'")):
        household_v0.jax_env(obs_mode="array")
    with pytest.raises(ValueError, match=re.escape(
            "obs_dtype=np.uint8 is for obs_mode='flat', got 'image'")):
        household_v0.jax_env(obs_mode="image", obs_dtype=np.uint8)
    with pytest.raises(ValueError, match=re.escape(
            "obs_dtype must be np.float32 or np.uint8, got 'float64'")):
        household_v0.jax_env(obs_dtype="float64")
    with pytest.raises(ValueError, match=re.escape(
            "episodes must be a positive integer, got 0")):
        household_v0.jax_env(episodes=0)
    with pytest.raises(ValueError, match=re.escape(
            "seed must be a non-negative integer, got -1")):
        household_v0.jax_env(seed=-1)
    with pytest.raises(ValueError, match=re.escape("view_radius must be from 1 to 512, got 0")):
        household_v0.jax_env(view_radius=0)  # the scalar env's own checks


def test_without_jax_the_extra_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)  # import jax raises ImportError
    monkeypatch.delitem(sys.modules, "orgteams.envs.vector.functional.env", raising=False)
    with pytest.raises(MissingExtraError, match=re.escape(
            'household_v0.jax_env needs the "jax" extra: pip install "orgteams[jax]"')):
        household_v0.jax_env()


def test_jaxmarl_log_wrapper_runs_on_it():
    """JaxMARL's own LogWrapper (jaxmarl installed) over the env in a vmap: it logs the
    episodes' returns and lengths."""
    wrappers = pytest.importorskip("jaxmarl.wrappers.baselines",
                                   reason="needs jaxmarl (pip install jaxmarl)")
    env = wrappers.LogWrapper(household_v0.jax_env(max_ticks=4, reward_shaping=True,
                                                   **SMALL))
    n = 3
    obs, state = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), n))
    for t in range(4):
        acts = {a: jnp.zeros(n, jnp.int32) for a in env.agents}
        obs, state, rew, dones, info = jax.vmap(env.step)(
            jax.random.split(jax.random.PRNGKey(t), n), state, acts)
    assert info["returned_episode"].all()
    assert info["returned_episode_lengths"].tolist() == [[4.0, 4.0]] * n
    assert info["returned_episode_returns"].tolist() == [[0.0, 0.0]] * n  # waited
    assert info["tick"].tolist() == [[4, 4]] * n
