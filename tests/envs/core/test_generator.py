"""Procedural layouts: valid, deterministic per seed, big enough, playable by every task."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from orgteams.envs import household_v0
from orgteams.envs.core.catalog import load_catalog, room_type
from orgteams.envs.core.generator import (
    MAX_ROOMS,
    ROOM_KEYS,
    generate_layout,
    parse_generated_name,
)
from orgteams.envs.core.layout import DIRECTIONS, FLOOR, FURNITURE, WALL, Layout, load_layout
from orgteams.envs.core.limits import MAX_SEED
from orgteams.envs.core.tasks import list_tasks, load_task

SIZES = (4, 8, 16, 32)
NAME_HELP = "expected 'generated:<rooms>' or 'generated:<rooms>:<seed>' with integers"


def raises(msg: str):
    return pytest.raises(ValueError, match=re.escape(msg))


def agents_for(rooms: int) -> int:
    return 256 if rooms >= 30 else 64


@pytest.mark.parametrize("rooms", SIZES)
def test_generated_layout_is_valid_and_round_trips(rooms):
    layout = generate_layout(rooms, seed=1)
    assert isinstance(layout, Layout)
    assert layout.name == f"generated:{rooms}:1"
    assert len(layout.rooms) == rooms
    assert list(layout.rooms[:4]) == list(load_catalog().required_rooms)
    assert all(room_type(r) in load_catalog().room_colors for r in layout.rooms)
    # The dict form goes back through the same validation and gives the same layout.
    assert Layout.from_dict(layout.to_dict()) == layout


@pytest.mark.parametrize("rooms", SIZES)
def test_doors_connect_every_room_and_some_are_closed(rooms):
    layout = generate_layout(rooms, seed=2)
    doored = Counter(r for d in layout.doors for r in d.rooms)
    assert set(doored) == set(range(rooms))
    assert len(layout.doors) >= rooms - 1
    assert any(not d.initially_open for d in layout.doors)
    assert any(d.initially_open for d in layout.doors)


@pytest.mark.parametrize("rooms", SIZES)
def test_furniture_stands_against_a_wall_beside_floor(rooms):
    layout = generate_layout(rooms, seed=3)
    h, w = layout.tiles.shape
    for f in layout.furniture:
        around = [layout.tiles[f.cell[0] + dr, f.cell[1] + dc] for dr, dc in DIRECTIONS
                  if 0 <= f.cell[0] + dr < h and 0 <= f.cell[1] + dc < w]
        assert WALL in around, f.name
        assert FLOOR in around, f.name
        assert layout.tiles[f.cell] == FURNITURE


@pytest.mark.parametrize("rooms", SIZES)
def test_holds_64_agents_and_256_from_30_rooms(rooms):
    layout = generate_layout(rooms, seed=0)
    floor = int((layout.tiles == FLOOR).sum())
    assert floor >= agents_for(rooms)
    if rooms >= 30:
        assert floor >= 256


@pytest.mark.parametrize("rooms", SIZES)
def test_same_seed_same_layout_other_seed_other_layout(rooms):
    assert generate_layout(rooms, seed=5) == generate_layout(rooms, seed=5)
    assert generate_layout(rooms, seed=5).grid == generate_layout(rooms, seed=5).grid
    assert generate_layout(rooms, seed=5) != generate_layout(rooms, seed=6)


@pytest.mark.parametrize("rooms", SIZES)
def test_every_task_resets_on_generated_layouts(rooms):
    layout = generate_layout(rooms, seed=4)
    n = agents_for(rooms)
    for task in list_tasks():
        assert load_task(task).targets() <= {f.type for f in layout.furniture}
        env = household_v0.parallel_env(layout=layout, task=task, num_agents=n)
        obs, infos = env.reset(seed=0)
        assert len(obs) == n
        cells = env.unwrapped.world.agent_pos
        assert len(set(cells)) == n
        obs, *_ = env.step({a: 1 for a in env.agents})
        assert len(obs) == n


def test_more_than_26_rooms_use_other_lowercase_letters():
    layout = generate_layout(40, seed=0)
    keys = set(layout.room_legend)
    assert len(keys) == 40
    assert keys - set("abcdefghijklmnopqrstuvwxyz")
    assert all(len(k) == 1 and k.islower() for k in keys)
    assert generate_layout(MAX_ROOMS, seed=0).rooms[-1]  # the largest size builds


def test_layout_grid_accepts_a_greek_room_key():
    grid = ["######", "#kk+α#", "######"]
    layout = Layout.from_grid(grid, {"k": "kitchen", "α": "office"}, require_rooms=False)
    assert layout.rooms == ("kitchen", "office")
    assert layout.doors[0].rooms == (0, 1)


def test_load_layout_dispatches_generated_names():
    assert load_layout("generated:8:2") == generate_layout(8, 2)
    assert load_layout("generated:8") == generate_layout(8, 0)


@pytest.mark.parametrize(("name", "expected"), [
    ("generated:12:3", {"rooms": 12, "seed": 3}),
    ("generated:12", {"rooms": 12, "seed": 0}),
    ("generated:4:0", {"rooms": 4, "seed": 0}),
])
def test_parse_generated_name(name, expected):
    assert parse_generated_name(name) == expected


@pytest.mark.parametrize("name", ["generated", "generated:", "generated:x", "generated:8:",
                                  "generated:8:-1", "generated:8:1:2", "generated:8.5",
                                  "generatedd:8", "generated: 8"])
def test_malformed_generated_names_raise(name):
    with raises(f"malformed generated layout name {name!r}: {NAME_HELP}"):
        parse_generated_name(name)
    with raises(f"malformed generated layout name {name!r}: {NAME_HELP}"):
        load_layout(name)


@pytest.mark.parametrize("rooms", [0, 3, MAX_ROOMS + 1, "8", 8.0])
def test_room_count_out_of_range_raises(rooms):
    with raises(f"rooms must be an integer from 4 to {MAX_ROOMS}, got {rooms!r}"):
        generate_layout(rooms)


def test_too_few_rooms_by_name_raises():
    with raises("rooms must be an integer from 4 to 83, got 3"):
        load_layout("generated:3:1")


def test_seeds_out_of_range_raise():
    with raises(f"seed must be an integer from 0 to {MAX_SEED}, got -1"):
        generate_layout(8, -1)
    with raises(f"seed must be an integer from 0 to {MAX_SEED}, got {MAX_SEED + 1}"):
        generate_layout(8, MAX_SEED + 1)
    name = "generated:10:99999999999999999999"  # issue 24: was accepted
    with raises(f"generated layout {name!r}: the seed must be from 0 to {MAX_SEED}, got "
                "99999999999999999999"):
        load_layout(name)
    assert load_layout(f"generated:4:{MAX_SEED}").name == f"generated:4:{MAX_SEED}"


def test_room_keys_are_distinct_single_lowercase_letters():
    assert len(set(ROOM_KEYS)) == len(ROOM_KEYS) == MAX_ROOMS
    assert all(len(k) == 1 and k.islower() for k in ROOM_KEYS)


def test_parallel_api_on_a_generated_layout():
    env = household_v0.parallel_env(layout="generated:8:1", num_agents=4)
    parallel_api_test(env, num_cycles=200)


def test_generated_episode_is_seeded():
    def rollout():
        env = household_v0.parallel_env(layout="generated:16:2", num_agents=8)
        obs, _ = env.reset(seed=9)
        rng = np.random.default_rng(0)
        frames = [obs["agent_3"]["image"]]
        for _ in range(30):
            obs, *_ = env.step({a: int(rng.integers(0, 21)) for a in env.agents})
            frames.append(obs["agent_3"]["image"])
        return np.stack(frames)

    assert np.array_equal(rollout(), rollout())
