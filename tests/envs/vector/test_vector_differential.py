"""The batched core against the scalar env, tick by tick (``orgteams.envs.vector.check``).

Every layout (the three shipped ones and a generated house), 2 to 16 agents, both
observation modes, every reward shaping level, random, masked-random and mixed joint
actions; short episodes (``max_ticks``) so that autoreset is exercised too.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from orgteams.envs.vector import check, masks
from orgteams.envs.vector.check import compare_with_scalar

FAST = [
    # (layout, agents, obs_mode, policy, shaping, extra kwargs)
    ("studio", 2, "flat", "random", False, {}),
    ("apartment", 3, "flat", "mixed", "subgoals", {}),
    ("house", 5, "image", "masked", True, {"view_radius": 4}),
    ("generated:6:1", 8, "flat", "mixed", "subgoals", {"full_observability": True}),
    ("studio", 16, "flat", "masked", "units", {"view_radius": 3}),
    # The flat buffer's options: raw uint8 entries, the live (copy=False) array.
    ("apartment", 3, "flat", "mixed", "subgoals", {"obs_dtype": np.uint8}),
    ("house", 6, "flat", "masked", True, {"copy": False, "obs_dtype": "uint8",
                                          "view_radius": 4}),
    ("generated:6:1", 4, "flat", "mixed", "units", {"copy": False}),
]


@pytest.mark.parametrize(("layout", "agents", "obs_mode", "policy", "shaping", "extra"), FAST)
def test_batched_core_equals_the_scalar_env(layout, agents, obs_mode, policy, shaping, extra):
    stats = compare_with_scalar(3, 70, seed=agents, policy=policy, layout=layout,
                                task="put_dishwasher_easy", units=1, num_agents=agents,
                                obs_mode=obs_mode, reward_shaping=shaping, max_ticks=30,
                                **extra)
    assert stats.ticks == 3 * 70
    assert stats.episodes >= 6  # every household ended (and was reset) at least twice
    if policy != "random":
        assert stats.picks_or_puts > 0


# (layout, agents, obs_mode, policy, shaping, task, units, max_ticks, households, steps)
SLOW = [
    ("studio", 2, "flat", "masked", "subgoals", "put_dishwasher_easy", 1, 60, 8, 1650),
    ("studio", 3, "image", "mixed", True, "put_dishwasher_easy", 1, None, 8, 1650),
    ("apartment", 3, "flat", "masked", "subgoals", "prepare_afternoon_tea", None, 200, 8, 1650),
    ("apartment", 6, "flat", "random", False, "setup_table", None, None, 8, 1650),
    ("house", 4, "flat", "mixed", "units", "put_fridge", 2, 150, 8, 1650),
    ("house", 12, "image", "masked", "subgoals", "prepare_food", None, 100, 4, 1650),
    ("generated:6:1", 8, "flat", "masked", "subgoals", "put_dishwasher_easy", 1, 120, 8, 1650),
    ("generated:12:3", 16, "flat", "mixed", True, "prepare_afternoon_tea", None, 100, 4, 1650),
    ("studio", 16, "flat", "masked", "units", "put_dishwasher_easy", 1, 80, 8, 1650),
]


@pytest.mark.slow
def test_batched_core_equals_the_scalar_env_over_100k_ticks():
    total = check.CheckStats()
    for layout, agents, mode, policy, shaping, task, units, limit, n, steps in SLOW:
        stats = compare_with_scalar(n, steps, seed=agents * 7, policy=policy, layout=layout,
                                    task=task, units=units, num_agents=agents,
                                    obs_mode=mode, reward_shaping=shaping, max_ticks=limit)
        for field in ("ticks", "episodes", "successes", "picks_or_puts", "collisions"):
            setattr(total, field, getattr(total, field) + getattr(stats, field))
    print(f"\ncompared {total}")
    assert total.ticks >= 100_000
    assert total.successes > 0 and total.picks_or_puts > 1000 and total.collisions > 1000


@pytest.mark.slow
@pytest.mark.parametrize(("layout", "agents", "policy", "extra"), [
    ("apartment", 3, "masked", {"copy": False}),
    ("house", 6, "mixed", {"copy": False, "obs_dtype": np.uint8}),
    ("generated:12:3", 8, "masked", {"obs_dtype": np.uint8}),
])
def test_the_flat_buffer_equals_the_scalar_env_over_long_runs(layout, agents, policy, extra):
    stats = compare_with_scalar(6, 1200, seed=agents * 11, policy=policy, layout=layout,
                                task="prepare_afternoon_tea", num_agents=agents,
                                obs_mode="flat", reward_shaping="subgoals", max_ticks=150,
                                **extra)
    assert stats.ticks == 6 * 1200 and stats.episodes >= 40 and stats.picks_or_puts > 100


@pytest.mark.slow  # compiling takes 10-40 s per configuration on this machine
@pytest.mark.parametrize(("layout", "agents", "policy", "extra"), [
    ("studio", 2, "mixed", {}),
    ("apartment", 3, "masked", {}),
    ("house", 5, "masked", {"view_radius": 4}),
    ("generated:6:1", 8, "masked", {"full_observability": True}),
    ("studio", 16, "masked", {"view_radius": 3}),
    ("apartment", 3, "masked", {"obs_mode": "image"}),
    ("house", 4, "mixed", {"obs_mode": "image", "view_radius": 2, "image_scale": 1}),
])
def test_jax_backend_equals_the_scalar_env(layout, agents, policy, extra):
    pytest.importorskip("jax", reason="needs the jax extra")
    extra = {"obs_mode": "flat", **extra}
    stats = compare_with_scalar(3, 70, seed=agents, policy=policy, backend="jax",
                                layout=layout, task="put_dishwasher_easy", units=1,
                                num_agents=agents, reward_shaping="subgoals", max_ticks=30,
                                **extra)
    assert stats.ticks == 3 * 70 and stats.episodes >= 6 and stats.picks_or_puts > 0


def test_the_check_catches_a_difference(monkeypatch):
    """A batched mask that drifts from the scalar rule fails the comparison."""
    real = masks.batch_masks

    def drifted(t, s, *idx):
        out = real(t, s, *idx)
        out[..., 0] = 0  # "wait is invalid": not the scalar rule
        return out

    monkeypatch.setattr("orgteams.envs.vector.env.batch_masks", drifted)
    with pytest.raises(AssertionError, match=re.escape("tick 0, household 0: action mask "
                                                       "((2, 53) int8 vs (2, 53) int8; "
                                                       "first differences at [[0, 0]")):
        compare_with_scalar(2, 5, layout="studio", num_agents=2)


def test_the_check_catches_a_dynamics_difference(monkeypatch):
    """A batched core in which nobody ever moves fails on the state."""
    monkeypatch.setattr("orgteams.envs.vector.dynamics._moves", lambda *args: None)
    with pytest.raises(AssertionError, match=r"tick \d+, household \d: state \{"):
        compare_with_scalar(2, 20, policy="masked", layout="studio", num_agents=2)


def test_the_check_catches_a_stale_flat_buffer(monkeypatch):
    """A flat buffer that forgets to clear last tick's teammates and objects fails."""
    from orgteams.envs.vector.flat_buffer import FlatBuffer

    real = FlatBuffer.write

    def forgetful(self, s, *args, **kwargs):
        self.dirty = self.dirty[:0]
        return real(self, s, *args, **kwargs)

    monkeypatch.setattr(FlatBuffer, "write", forgetful)
    with pytest.raises(AssertionError, match=r"tick \d+, household \d: observation \("):
        compare_with_scalar(2, 30, policy="masked", layout="studio", num_agents=3,
                            obs_dtype=np.uint8)


def test_the_check_catches_a_household_wrongly_kept(monkeypatch):
    """Observations and masks kept for a household whose state changed (an opened
    container not reported in the tick's ``changed``) fail."""
    from orgteams.envs.vector import dynamics

    def forgetful(t, s, actions):
        events = dynamics.step_batch(t, s, actions)
        events.changed[(events.opened_container >= 0).any(axis=1)] = False
        return events

    monkeypatch.setattr("orgteams.envs.vector.env.step_batch", forgetful)
    with pytest.raises(AssertionError, match=r"tick \d+, household \d: observation \("):
        compare_with_scalar(2, 40, policy="masked", layout="studio", num_agents=2,
                            copy=False)


def test_the_tick_reports_every_household_whose_state_changed():
    """``TickEvents.changed`` (what observations and masks are rebuilt from) covers
    every household whose state, all but the tick, differs after the tick; a household
    where everyone waits is not reported."""
    from orgteams.envs.vector.dynamics import step_batch
    from orgteams.envs.vector.env import VectorHouseholdEnv

    vec = VectorHouseholdEnv(32, layout="studio", task="put_dishwasher_easy", units=1,
                             num_agents=4, seed=3, observations=False)
    vec.reset()
    rng = np.random.default_rng(0)
    everyone = np.arange(32)
    differed = 0
    for _ in range(60):
        acts = check._choose(rng, vec.action_masks(), "masked")
        acts[::4] = 0  # every fourth household waits
        before = vec._batch.take(everyone)
        after = before.take(everyone)
        events = step_batch(vec._tables, after, acts)
        diff = np.zeros(32, bool)
        for name, value in after.__dict__.items():
            if name != "tick":
                diff |= (value != getattr(before, name)).reshape(32, -1).any(axis=1)
        assert not (diff & ~events.changed).any()
        assert not events.changed[::4].any()
        differed += int(diff.sum())
        vec.step(acts)
    assert differed > 100  # the masked policy moves agents and objects every tick
