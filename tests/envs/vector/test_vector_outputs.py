"""copy=True hands out read-only arrays of the caller's own, recycled only once the caller
let go, and brought up to date with only what changed unless the caller made them
writeable (:mod:`orgteams.envs.vector.outputs`)."""

from __future__ import annotations

import gc
import re
import weakref

import numpy as np
import pytest

from orgteams.envs import household_v0
from orgteams.envs.core.actions import NUM_ACTIONS
from orgteams.envs.vector.outputs import OutputPool

KWARGS = dict(layout="studio", num_agents=2, seed=5, task="put_dishwasher_easy",
              max_ticks=7)  # short episodes: households reset along the way


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def twins(**kwargs):
    """A copy=True env and its copy=False twin (the reference values), both reset."""
    mine = household_v0.vector_env(3, **KWARGS, **kwargs)
    ref = household_v0.vector_env(3, copy=False, **KWARGS, **kwargs)
    obs, _ = mine.reset()
    want, _ = ref.reset()
    np.testing.assert_array_equal(obs, want)
    return mine, ref


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_what_the_caller_holds_never_changes(dtype):
    mine, ref = twins(obs_dtype=dtype)
    rng = np.random.default_rng(0)
    kept = []  # (what the caller holds, its values when handed out)
    finished = 0
    for t in range(30):
        acts = rng.integers(0, NUM_ACTIONS, size=(3, 2))
        obs, _, term, trunc, _ = mine.step(acts)
        want = ref.step(acts)[0]
        np.testing.assert_array_equal(obs, want)
        finished += int((term | trunc).any())
        if t % 4 == 0:
            kept.append((obs, want.copy()))  # the array itself
        elif t % 4 == 1:
            kept.append((obs[1], want[1].copy()))  # only a view of it
        elif t % 4 == 2:
            kept.append((np.asarray(memoryview(obs)), want.copy()))  # a buffer export
        else:  # the caller may make its copy writeable and write (then drops it)
            obs.flags.writeable = True
            obs[...] = 0
        del obs
    assert finished  # resets happened while arrays were held
    for held, values in kept:
        np.testing.assert_array_equal(held, values)


def test_copies_are_read_only():
    mine, _ = twins()
    obs = mine.step(np.zeros((3, 2), np.int64))[0]
    with pytest.raises(ValueError, match=re.escape("assignment destination is read-only")):
        obs[0, 0, 0] = 1
    with pytest.raises(ValueError, match=re.escape("cannot set WRITEABLE flag to True of "
                                                   "this array")):
        obs[1].flags.writeable = True  # a view cannot be made writeable over its base


def test_recycled_arrays_get_only_what_changed(monkeypatch):
    """Most recycled arrays are updated with what the buffer wrote since they were
    filled (not copied whole), and equal the copy=False twin every tick: while
    agents walk and households reset, and after an array was held longer than the
    buffer's log (then it is copied whole)."""
    from orgteams.envs.vector import outputs

    calls = {"apply": 0, "whole": 0}
    real_apply, real_copyto = outputs._apply, np.copyto

    def apply(*args):
        calls["apply"] += 1
        return real_apply(*args)

    def copyto(*args, **kwargs):
        calls["whole"] += 1
        return real_copyto(*args, **kwargs)

    monkeypatch.setattr(outputs, "_apply", apply)
    monkeypatch.setattr(outputs.np, "copyto", copyto)
    mine, ref = twins()
    rng = np.random.default_rng(2)
    held = mine.step(np.zeros((3, 2), np.int64))[0]  # kept for 10 ticks
    ref.step(np.zeros((3, 2), np.int64))
    values = held.copy()
    obs = None
    for t in range(40):
        acts = rng.integers(1, 5, size=(3, 2))  # moves: windows change every tick
        if t == 10:
            np.testing.assert_array_equal(held, values)
            del held  # reused next: older than the log, so copied whole
            whole = calls["whole"]
        obs = mine.step(acts)[0]
        np.testing.assert_array_equal(obs, ref.step(acts)[0])
        if t == 10:
            assert calls["whole"] == whole + 1
    assert calls["apply"] >= 30


def test_dropped_arrays_are_reused():
    mine, ref = twins()
    rng = np.random.default_rng(1)
    seen = set()
    obs = None
    for _ in range(20):
        acts = rng.integers(0, NUM_ACTIONS, size=(3, 2))
        obs = mine.step(acts)[0]  # the last one is held while the next is asked for
        np.testing.assert_array_equal(obs, ref.step(acts)[0])
        obs.flags.writeable = False  # frozen by the caller, then dropped
        seen.add(address(obs))
    assert len(seen) == 2


def test_pool_skips_held_weakly_held_and_other_shapes():
    pool = OutputPool(keep=2)
    a = pool.copy(np.ones(4))
    b = pool.copy(np.full(4, 2.0))
    assert not np.shares_memory(a, b)
    c = pool.copy(np.full(4, 3.0))  # both kept arrays held: a new one, not kept
    assert len(pool.arrays) == 2
    assert a.tolist() == [1.0] * 4 and b.tolist() == [2.0] * 4
    kept_b = address(b)
    watcher = weakref.ref(a)  # the first kept array, only weakly held from here on
    del a, b, c
    gc.collect()
    d = pool.copy(np.full(4, 5.0))
    assert address(d) == kept_b  # the dropped one; the weakly held one is not written
    assert watcher().tolist() == [1.0] * 4
    e = pool.copy(np.zeros(3))  # another shape: a new array
    assert e.shape == (3,) and d.tolist() == [5.0] * 4


def test_a_pickled_vector_env_steps_as_the_original():
    """ray ships envs pickled: the copy's kept output arrays came back read-only over
    the pickle's bytes, and its next step failed ("cannot set WRITEABLE flag to True of
    this array"). The pool is a cache: a copy starts it empty."""
    import pickle

    vec = household_v0.vector_env(3, layout="apartment", num_agents=3)
    _, info = vec.reset(seed=0)
    rng = np.random.default_rng(0)

    def actions(info):
        return np.array([[rng.choice(np.flatnonzero(row)) for row in house]
                         for house in info["action_mask"]])

    for _ in range(3):  # the pool holds arrays by now
        _, _, _, _, info = vec.step(actions(info))
    twin = pickle.loads(pickle.dumps(vec))
    for _ in range(40):
        a = actions(info)
        obs, rew, term, trunc, info = vec.step(a)
        obs2, rew2, term2, trunc2, _ = twin.step(a)
        assert np.array_equal(obs, obs2) and not obs2.flags.writeable
        assert np.array_equal(rew, rew2) and np.array_equal(term, term2)
