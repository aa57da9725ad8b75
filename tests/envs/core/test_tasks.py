"""Tasks: loading, validation messages, goal sampling and episode construction."""

from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

from orgteams.envs import HouseholdEnv
from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.layout import list_layouts, load_layout
from orgteams.envs.core.start import make_episode
from orgteams.envs.core.tasks import (
    MAX_GOAL_PREDICATES,
    Predicate,
    list_tasks,
    load_task,
    task_from_dict,
)

SRC = "t.yaml"
BASE = {"name": "t", "description": "a test task", "candidates": ["ON(cupcake, coffee_table)"]}


def raises(msg: str):
    return pytest.raises(ValueError, match=re.escape(msg))


def with_fields(**fields) -> dict:
    return {**BASE, **fields}


# ---- shipped tasks ----

def test_shipped_tasks_are_listed():
    assert set(list_tasks()) == {"prepare_afternoon_tea", "prepare_food", "put_dishwasher_easy",
                                 "put_dishwasher_hard", "put_fridge", "read_book",
                                 "setup_table", "watch_tv"}


@pytest.mark.parametrize("name", list_tasks())
def test_shipped_task_loads(name):
    task = load_task(name)
    assert task.name == name
    assert task.description
    assert task.candidates
    assert 1 <= task.units[0] <= task.units[1] <= 5
    catalog = load_catalog()
    for rel, cls, target in task.candidates + task.required:
        assert cls in catalog.object_glyphs
        assert rel in ("on", "inside")
        assert (rel == "inside") == catalog.furniture[target].is_container


@pytest.mark.parametrize("name", list_tasks())
def test_goal_sampling_respects_units_and_is_seeded(name):
    task = load_task(name)
    allowed = set(task.candidates) | set(task.required)
    goals = []
    for seed in range(40):
        goal = task.sample_goal(np.random.default_rng(seed))
        assert goal == task.sample_goal(np.random.default_rng(seed))
        units = sum(p.count for p in goal)
        assert task.units[0] <= units <= task.units[1], (seed, goal)
        keys = [(p.relation, p.cls, p.target) for p in goal]
        assert len(keys) == len(set(keys))
        assert set(keys) <= allowed
        assert set(task.required) <= set(keys)
        assert all(1 <= p.count <= task.max_per_predicate for p in goal)
        goals.append(goal)
    assert len(set(goals)) > 5


def test_unit_counts_cover_the_range():
    task = load_task("prepare_afternoon_tea")
    totals = {sum(p.count for p in task.sample_goal(np.random.default_rng(s)))
              for s in range(60)}
    assert totals == {3, 4, 5}
    easy = load_task("put_dishwasher_easy")
    assert {sum(p.count for p in easy.sample_goal(np.random.default_rng(s)))
            for s in range(20)} == {3}


def test_read_book_always_asks_for_the_book():
    task = load_task("read_book")
    for seed in range(30):
        goal = task.sample_goal(np.random.default_rng(seed))
        assert Predicate("on", "book", "coffee_table", 1) in goal or any(
            p.cls == "book" and p.target == "coffee_table" for p in goal)


def test_predicate_text_and_dict():
    p = Predicate("on", "cupcake", "coffee_table", 2)
    assert str(p) == "ON(cupcake, coffee_table): 2"
    assert Predicate(**p.to_dict()) == p


def test_step_limit_scales_with_rooms():
    task = load_task("prepare_afternoon_tea")
    assert task.step_limit("studio", 4) == task.step_limits["studio"]  # from the file
    # a layout the file does not list: the default, scaled by rooms beyond six
    assert task.step_limit("generated:4:0", 4) == task.default_step_limit
    assert task.step_limit("generated:9:0", 9) == int(task.default_step_limit * 1.5)
    custom = task_from_dict(with_fields(step_limits={"studio": 50}), SRC)
    assert custom.step_limit("studio", 4) == 50


# ---- validation ----

def test_unknown_task_name_suggests_the_closest():
    with raises(f"Unknown task 'read_bok'. Did you mean 'read_book'? "
                f"Known: {', '.join(list_tasks())}"):
        load_task("read_bok")


def test_unknown_relation():
    with raises(f"{SRC}: candidates: relation 'near' must be one of on, inside"):
        task_from_dict(with_fields(candidates=["NEAR(cupcake, sofa)"]), SRC)


def test_inside_a_surface():
    with raises(f"{SRC}: required: INSIDE needs a container, and 'sofa' is a surface"):
        task_from_dict(with_fields(required=["INSIDE(cupcake, sofa)"]), SRC)


def test_unknown_object_class():
    known = ", ".join(sorted(load_catalog().object_glyphs))
    with raises(f"{SRC}: candidates: Unknown object class 'cupcak'. Did you mean 'cupcake'? "
                f"Known: {known}"):
        task_from_dict(with_fields(candidates=["ON(cupcak, sofa)"]), SRC)


def test_unknown_target():
    with raises(f"{SRC}: candidates: Unknown furniture type 'coffe_table'. "
                "Did you mean 'coffee_table'?"):
        task_from_dict(with_fields(candidates=[["on", "cupcake", "coffe_table"]]), SRC)


def test_unknown_field():
    known = sorted(set(BASE) | {"required", "units", "max_per_predicate", "extra_objects",
                                "distractors", "container_prob", "far", "default_step_limit",
                                "step_limits"})
    with raises(f"{SRC}: unknown field(s) ['colour']; known: {known}"):
        task_from_dict(with_fields(colour="red"), SRC)


def test_missing_name_is_a_value_error():
    # Regression: a task without name/description raised TypeError from the dataclass.
    with raises(f"{SRC}: missing field(s) ['description', 'name']"):
        task_from_dict({"candidates": ["ON(cupcake, sofa)"]}, SRC)


def test_malformed_predicate_and_empty_candidates_and_units():
    with raises(f"{SRC}: candidates: predicate 'ON(cupcake)' must look like ON(class, target)"):
        task_from_dict(with_fields(candidates=["ON(cupcake)"]), SRC)
    with raises(f"{SRC}: field 'candidates' must list at least one predicate"):
        task_from_dict(with_fields(candidates=[]), SRC)
    with raises(f"{SRC}: field 'units' must be [min, max] with 1 <= min <= max"):
        task_from_dict(with_fields(units=[4, 3]), SRC)


def test_malformed_task_files(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(with_fields(candidates=["INSIDE(cupcake, coffee_table)"])))
    with raises(f"{path}: candidates: INSIDE needs a container, and 'coffee_table' is a surface"):
        load_task(path)
    path.write_text("name: [oops\n")
    with raises(f"{path}: not valid YAML: "):
        load_task(path)
    path.write_text("- a\n- list\n")
    with raises(f"{path}: expected a mapping of task fields"):
        load_task(path)
    with raises(f"{tmp_path / 'absent.yaml'}: cannot read a task file: No such file or "
                "directory"):
        load_task(tmp_path / "absent.yaml")
    path.write_text(yaml.safe_dump(with_fields(units=[2, 2])))
    assert load_task(path).units == (2, 2)


def test_goal_never_has_more_than_five_predicates():
    classes = ["cupcake", "pudding", "apple", "juice", "wine", "plate", "fork"]
    task = task_from_dict(with_fields(
        candidates=[f"ON({c}, coffee_table)" for c in classes], units=[7, 7]), SRC)
    env = HouseholdEnv(layout="apartment", task=task)
    for seed in range(10):
        env.reset(seed=seed)
        assert len(env.world.scene.goal) <= MAX_GOAL_PREDICATES
        assert sum(p.count for p in env.world.scene.goal) == 7


def test_units_beyond_what_five_predicates_can_hold_are_rejected():
    with raises(f"{SRC}: field 'units' allows at most 10 units "
                "(5 predicates x max_per_predicate)"):
        task_from_dict(with_fields(units=[3, 11]), SRC)


# ---- episodes ----

def _goal_classes_on_target(state):
    scene = state.scene
    count = 0
    for pred, targets in zip(scene.goal, scene.goal_targets):
        count += sum(1 for f in targets for o in state.contents[f]
                     if scene.object_class[o] == pred.cls)
    return count


@pytest.mark.parametrize("layout_name", list_layouts())
@pytest.mark.parametrize("task_name", list_tasks())
def test_make_episode_starts_with_nothing_done(layout_name, task_name):
    layout, task = load_layout(layout_name), load_task(task_name)
    closed_goal_objects = 0
    for seed in range(6):
        state = make_episode(layout, task, 3, np.random.default_rng(seed))
        scene = state.scene
        assert state.tick == 0
        assert _goal_classes_on_target(state) == 0
        assert state.progress == tuple(0 for _ in scene.goal)
        assert not state.success
        placed = sorted(o for c in state.contents for o in c)
        assert placed == list(range(len(scene.objects)))
        assert len(set(scene.objects)) == len(scene.objects)
        for pred in scene.goal:
            have = sum(1 for c in scene.object_class if c == pred.cls)
            assert pred.count <= have <= pred.count + task.extra_objects
        assert len(set(state.agent_pos)) == 3
        assert all(scene.floor[c] for c in state.agent_pos)
        assert all(state.hands[a] == () for a in range(3))
        assert [d.initially_open for d in layout.doors] == state.door_open
        goal_classes = {p.cls for p in scene.goal}
        closed_goal_objects += sum(
            1 for f, inside in enumerate(state.contents) if not state.container_open[f]
            for o in inside if scene.object_class[o] in goal_classes)
    assert closed_goal_objects > 0, "goal objects never start in closed containers"


def test_make_episode_is_deterministic_per_seed():
    layout, task = load_layout("apartment"), load_task("prepare_food")
    a = make_episode(layout, task, 3, np.random.default_rng(7))
    b = make_episode(layout, task, 3, np.random.default_rng(7))
    c = make_episode(layout, task, 3, np.random.default_rng(8))
    assert a == b
    assert a.to_dict() == b.to_dict()
    assert a != c


def test_far_task_places_goal_objects_away_from_the_target_room():
    layout, task = load_layout("house"), load_task("put_dishwasher_hard")
    assert task.far
    for seed in range(5):
        state = make_episode(layout, task, 2, np.random.default_rng(seed))
        scene = state.scene
        target_rooms = {f.room for f in layout.furniture if f.type == "dishwasher"}
        goal_classes = {p.cls for p in scene.goal}
        for f, inside in enumerate(state.contents):
            for o in inside:
                if scene.object_class[o] in goal_classes:
                    assert layout.furniture[f].room not in target_rooms


def test_task_needing_missing_furniture(inline_layout):
    layout = inline_layout(["#####", "#kkF#", "#kkk#", "#####"], {"k": "kitchen"},
                           {"F": "fridge"})
    task = load_task("prepare_afternoon_tea")
    msg = "task 'prepare_afternoon_tea' needs coffee_table, which layout 'inline' does not have"
    with raises(msg):
        make_episode(layout, task, 1, np.random.default_rng(0))
    with raises(msg):
        HouseholdEnv(layout=layout, task=task)


def test_too_many_agents_for_the_floor(inline_layout):
    layout = inline_layout(["#####", "#kkF#", "#kkQ#", "#####"], {"k": "kitchen"},
                           {"F": "fridge", "Q": "coffee_table"})
    task = task_from_dict(with_fields(units=[1, 1], extra_objects=0, distractors=0))
    with raises("layout 'inline' has 4 floor cells; cannot place 5 agents"):
        make_episode(layout, task, 5, np.random.default_rng(0))
