"""Array and text observations on the ``two_rooms`` layout (drawn in test_dynamics)."""

from __future__ import annotations

import numpy as np
import pytest

from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.tasks import Predicate
from orgteams.envs.observe.array_obs import (
    BASE_CHANNELS,
    MAX_GOAL,
    T_CLOSED,
    T_DOOR_CLOSED,
    T_DOOR_OPEN,
    T_FLOOR,
    T_OPEN,
    T_SURFACE,
    T_WALL,
    ArrayObserver,
    observation_space,
)
from orgteams.envs.observe.text import describe, describe_goal

R = 3  # view radius: the image is 7x7, the agent at [3, 3]
CAT = load_catalog()
K = len(CAT.object_classes)


def channel(cls: str) -> int:
    return BASE_CHANNELS + CAT.class_id(cls)


def at(image, agent_cell, cell):
    """The image pixel of a world cell, for an agent standing at ``agent_cell``."""
    return image[R + cell[0] - agent_cell[0], R + cell[1] - agent_cell[1]]


def observe(state, agent=0, full=False):
    return ArrayObserver(state.scene, R, full).observe(state, agent)


def test_space_shapes():
    space = observation_space(7)
    assert space["image"].shape == (15, 15, BASE_CHANNELS + K)
    assert space["image"].dtype == np.uint8
    assert space["hands"].shape == (2,)
    assert space["goal"].shape == (MAX_GOAL, 3)


def test_observation_fits_the_space(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 2), (2, 6)], contents={"fridge": ["apple_1"]})
    obs = observe(state)
    assert observation_space(R).contains(obs)


def test_self_teammate_tiles_and_rooms(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 2), (2, 3)])
    image = observe(state)["image"]
    me = (2, 2)
    assert image[R, R, 2] == 1
    assert at(image, me, (2, 3))[2] == 2
    assert at(image, me, (1, 2))[0] == T_FLOOR
    assert at(image, me, (0, 2))[0] == T_WALL
    assert at(image, me, (2, 4))[0] == T_DOOR_CLOSED
    assert at(image, me, (3, 3))[0] == T_SURFACE
    assert at(image, me, (1, 1))[0] == T_CLOSED
    kitchen = list(CAT.room_colors).index("kitchen") + 1
    assert at(image, me, (1, 2))[1] == kitchen
    assert at(image, me, (1, 1))[3] == CAT.furniture_type_id("fridge") + 1
    assert at(image, me, (3, 3))[3] == CAT.furniture_type_id("kitchen_table") + 1
    # The teammate sees itself as 1 and this agent as 2.
    other = observe(state, agent=1)["image"]
    assert other[R, R, 2] == 1 and at(other, (2, 3), (2, 2))[2] == 2


def test_other_rooms_are_unseen(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3), (2, 5)], contents={"sofa": ["cup_1"]})
    image = observe(state)["image"]
    me = (2, 3)
    for cell in [(1, 5), (2, 5), (3, 5), (2, 6)]:
        assert not at(image, me, cell).any(), cell
    # Beyond the grid's edge is zero too (rows -2 and -1 for an agent on row 1).
    assert not observe(make_state(two_rooms, [(1, 2)]))["image"][:R - 1].any()
    # Full observability shows the other room, the teammate and the sofa's cup.
    image = observe(state, full=True)["image"]
    assert at(image, me, (2, 5))[2] == 2
    assert at(image, me, (2, 5))[1] == list(CAT.room_colors).index("living_room") + 1


def test_doorway_sees_both_rooms(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 4), (2, 6), (2, 2)], doors_open=[True])
    image = observe(state)["image"]
    me = (2, 4)
    assert at(image, me, (2, 4))[0] == T_DOOR_OPEN
    assert at(image, me, (2, 6))[2] == 2
    assert at(image, me, (2, 2))[2] == 2


def test_closed_container_hides_contents_open_shows_them(two_rooms, make_state):
    contents = {"fridge": ["apple_1", "apple_2"], "kitchen_table": ["cup_1"]}
    closed = make_state(two_rooms, [(1, 2)], contents=contents)
    image = observe(closed)["image"]
    assert not at(image, (1, 2), (1, 1))[BASE_CHANNELS:].any()
    assert at(image, (1, 2), (3, 3))[channel("cup")] == 1
    opened = make_state(two_rooms, [(1, 2)], contents=contents, opened=["fridge"])
    pixel = at(observe(opened)["image"], (1, 2), (1, 1))
    assert pixel[0] == T_OPEN
    assert pixel[channel("apple")] == 2
    assert pixel[BASE_CHANNELS:].sum() == 2


def test_hands_and_held_objects(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 2), (2, 3)], hands=[["cup_1", "apple_1"], ["fork_1"]])
    obs = observe(state)
    assert obs["hands"].tolist() == [CAT.class_id("cup") + 1, CAT.class_id("apple") + 1]
    assert obs["image"][R, R, channel("cup")] == 1
    assert at(obs["image"], (2, 2), (2, 3))[channel("fork")] == 1
    assert observe(state, agent=1)["hands"].tolist() == [CAT.class_id("fork") + 1, 0]


def test_goal_rows(two_rooms, make_state):
    goal = [Predicate("on", "apple", "kitchen_table", 2), Predicate("inside", "cup", "fridge", 1)]
    state = make_state(two_rooms, [(2, 2)], goal=goal,
                       contents={"kitchen_table": ["apple_1"], "sofa": ["cup_1"]})
    rows = observe(state)["goal"]
    assert rows.tolist() == [
        [CAT.class_id("apple") + 1, CAT.furniture_type_id("kitchen_table") + 1, 1],
        [CAT.class_id("cup") + 1, CAT.furniture_type_id("fridge") + 1, 1],
        [0, 0, 0], [0, 0, 0], [0, 0, 0]]


def test_observer_does_not_serve_a_stale_state(two_rooms, make_state):
    # Regression: features were cached by id(state), which Python reuses once a state
    # is freed, so a new state at the same tick got the old picture (here: a closed
    # fridge's apple showing, or a table's apple missing).
    def fresh(on_table: bool):
        return make_state(two_rooms, [(1, 2)],
                          contents={"kitchen_table" if on_table else "fridge": ["apple_1"]})

    observer = ArrayObserver(fresh(True).scene, R)  # same objects in every fresh state

    for i in range(40):
        on_table = i % 2 == 0
        seen = observer.observe(fresh(on_table), 0)["image"][..., channel("apple")].sum()
        assert seen == int(on_table), i


@pytest.mark.parametrize("full", [False, True])
def test_small_team_path_large_team_path_and_reused_tables_agree(monkeypatch, full):
    # Teams of up to _PAIRWISE agents get images from cached windows plus per-pair marks;
    # larger teams from a whole-house buffer; a new episode's observer reuses the last
    # one's layout tables. All three must draw the same picture, every tick, held
    # objects and teammates included.
    from orgteams.envs import household_v0
    from orgteams.envs.core.actions import NUM_ACTIONS
    from orgteams.envs.core.dynamics import transition
    from orgteams.envs.observe import array_obs as observations

    env = household_v0.parallel_env(layout="apartment", num_agents=6, full_observability=full)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    state, reused, held_seen = env.unwrapped.world, None, 0
    for tick in range(600):
        if tick % 200 == 0:  # a new episode: an observer built over the previous one
            reused = ArrayObserver(state.scene, 7, full, previous=reused)
        agents = [0, 2, 5] if tick % 3 else list(range(6))
        fresh = ArrayObserver(state.scene, 7, full)
        small = reused.observe_many(state, agents)
        monkeypatch.setattr(observations, "_PAIRWISE", 0)
        large = fresh.observe_many(state, agents)
        monkeypatch.setattr(observations, "_PAIRWISE", 8)
        for a, b in zip(small, large):
            for key in ("image", "hands", "goal"):
                np.testing.assert_array_equal(a[key], b[key], err_msg=f"{key} at tick {tick}")
                assert a[key].flags.c_contiguous and b[key].flags.c_contiguous, key
        held_seen += sum(int(o["hands"].any()) for o in small)
        state, _ = transition(state, rng.integers(0, NUM_ACTIONS, 6).tolist())
    assert held_seen > 0  # the run did exercise held objects


def test_window_cache_respects_its_memory_budget(monkeypatch):
    from orgteams.envs import household_v0
    from orgteams.envs.observe import view_tables as observation_tables

    monkeypatch.setattr(observation_tables, "WINDOW_CACHE_BYTES", 0)
    env = household_v0.parallel_env(layout="studio", num_agents=2)
    obs, _ = env.reset(seed=0)
    observer = env.unwrapped._observer
    assert observer._window_cache is None  # the small-team cache was never allocated
    monkeypatch.setattr(observation_tables, "WINDOW_CACHE_BYTES", 64 << 20)
    fresh = ArrayObserver(env.unwrapped.world.scene, 7)
    again = fresh.observe_many(env.unwrapped.world, [0, 1])
    assert fresh._window_cache is not None
    for a, b in zip(obs.values(), again):
        np.testing.assert_array_equal(a["image"], b["image"])


# ---- text ----

def test_describe_names_stable_ids_and_hides_closed_contents(two_rooms, make_state):
    state = make_state(two_rooms, [(1, 2), (3, 1), (2, 6)], hands=[["cup_1"], [], []],
                       contents={"fridge": ["apple_1"], "kitchen_table": ["fork_1", "plate_1"],
                                 "sofa": ["wine_1"]})
    assert describe(state, 0) == (
        "You are agent_0, in the kitchen. You hold: cup_1.\n"
        "In the kitchen: fridge (closed); kitchen_table (on it: fork_1, plate_1).\n"
        "Also in the kitchen: agent_1.\n"
        "Doors: to the living_room (closed).")
    assert "apple" not in describe(state, 0)
    assert "wine" not in describe(state, 0)
    opened = make_state(two_rooms, [(1, 2)], contents={"fridge": ["apple_1"]},
                        opened=["fridge"], doors_open=[True])
    assert describe(opened, 0, names=["Alice"]) == (
        "You are Alice, in the kitchen. You hold: nothing.\n"
        "In the kitchen: fridge (open, inside: apple_1); kitchen_table.\n"
        "Doors: to the living_room (open).")


def test_describe_full_observability_and_doorway(two_rooms, make_state):
    state = make_state(two_rooms, [(1, 2), (2, 6)], contents={"sofa": ["wine_1"]})
    text = describe(state, 0, full_observability=True)
    assert "In the living_room: sofa (on it: wine_1)." in text
    assert "Also in the living_room: agent_1." in text
    doorway = make_state(two_rooms, [(2, 4)], doors_open=[True])
    assert describe(doorway, 0).splitlines()[0] == (
        "You are agent_0, in the doorway between the kitchen and living_room. "
        "You hold: nothing.")


@pytest.mark.parametrize("crowd", [0, 16])  # up to 16 agents in Python, more with numpy
def test_full_observability_lists_a_teammate_only_in_its_own_room(two_rooms, make_state,
                                                                  crowd):
    # A teammate sharing the viewer's view was listed under every room of the house
    # ("Also in the living_room: agent_1" with agent_1 in the kitchen beside it).
    state = make_state(two_rooms, [(1, 2), (2, 2), *[(3, 7)] * crowd])
    lines = describe(state, 0, full_observability=True).splitlines()
    living = ", ".join(f"agent_{a}" for a in range(2, 2 + crowd))
    assert [ln for ln in lines if ln.startswith("Also in")] == [
        "Also in the kitchen: agent_1.", *([f"Also in the living_room: {living}."] if crowd
                                          else [])]
    # what the viewer's own view lists is as before
    assert describe(state, 0).splitlines()[2] == "Also in the kitchen: agent_1."


def test_describe_goal(two_rooms, make_state):
    goal = [Predicate("on", "apple", "kitchen_table", 2)]
    state = make_state(two_rooms, [(2, 2)], goal=goal, contents={"kitchen_table": ["apple_1"]})
    assert describe_goal(state) == "ON(apple, kitchen_table): 2 (1 done)"


@pytest.mark.parametrize("full", [False, True])
def test_text_hides_what_the_image_hides(two_rooms, make_state, full):
    state = make_state(two_rooms, [(2, 2)], contents={"fridge": ["apple_1"]})
    assert "apple_1" not in describe(state, 0, full_observability=full)
    assert observe(state, full=full)["image"][..., channel("apple")].sum() == 0


@pytest.mark.parametrize("obs_mode", ["array", "flat"])
def test_a_copied_env_observes_as_the_original(obs_mode):
    """The observer's buffers are views of its arrays with the extra zero row; a deepcopy
    (or pickle) made them separate, so the copy drew doors opened after the copy shut."""
    import copy

    from orgteams.envs import household_v0

    env = household_v0.parallel_env(layout="apartment", num_agents=3, obs_mode=obs_mode)
    _, infos = env.reset(seed=0)
    twin = copy.deepcopy(env)
    rng = np.random.default_rng(0)
    houses = set()
    for _ in range(150):
        actions = {a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"])))
                   for a in env.agents}
        first, second = env.step(actions), twin.step(actions)
        infos = first[4]
        for a in actions:
            obs, other = first[0][a], second[0][a]
            if obs_mode == "array":
                assert all(np.array_equal(obs[k], other[k]) for k in obs)
            else:
                assert np.array_equal(obs, other)
        w = env.world
        houses.add(repr((w.door_open, w.container_open, w.contents)))
        if not env.agents:
            break
    assert len(houses) > 3
