"""The high-level action wrapper: contract, plans, failure reasons, memory honesty."""

from __future__ import annotations

import re

import pytest

from orgteams.envs.core.tasks import Predicate
from orgteams.envs.highlevel.highlevel_env import STUCK_LIMIT, HighLevelAction, HighLevelEnv

CUPCAKE_IN_FRIDGE = (Predicate("inside", "cupcake", "fridge", 1),)


@pytest.fixture
def make_env(two_rooms, make_state):
    """A HighLevelEnv on the two-room layout, started from a hand-made state."""

    def build(agents, **state_kwargs):
        env = HighLevelEnv(layout=two_rooms, task="put_fridge", num_agents=len(agents))
        state_kwargs.setdefault("goal", CUPCAKE_IN_FRIDGE)
        return env, env.load_state(make_state(two_rooms, agents, **state_kwargs))

    return build


def test_contract_reset_and_step_on_a_shipped_layout():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=2)
    obs, infos = env.reset(seed=3)
    assert set(obs) == set(infos) == {"agent_0", "agent_1"}
    assert obs["agent_0"].startswith("You are agent_0")
    info = infos["agent_0"]
    assert set(info) == {"needs_decision", "status", "failure_reason", "ticks_elapsed",
                         "events", "available", "current", "is_success"}
    assert info["is_success"] is False
    assert info["needs_decision"] and info["status"] == "idle" and info["current"] is None
    first = info["available"][0]
    assert isinstance(first, HighLevelAction) and first.kind == "explore"
    assert first.label == f"[goexplore] <{first.target}>" and first.id == f"explore:{first.target}"
    assert env.available_actions("agent_0")[-1] == HighLevelAction("wait", "wait", "", "[wait]")
    obs, rew, terms, truncs, infos = env.step({"agent_0": "explore:bathroom",
                                               "agent_1": "wait"})
    assert env.rounds == 1 and env.ticks == 1  # agent_1's wait ends the round after a tick
    assert infos["agent_1"]["needs_decision"] and infos["agent_1"]["status"] == "done"
    assert infos["agent_0"]["status"] == "running" and not env.needs_decision("agent_0")
    assert infos["agent_0"]["current"].id == "explore:bathroom"
    assert "continue" in [a.id for a in env.available_actions("agent_0")]
    assert infos["agent_0"]["ticks_elapsed"] == 1
    assert set(rew) == set(terms) == set(truncs) == {"agent_0", "agent_1"}
    env.step({"agent_0": "continue", "agent_1": "goto:kitchen"})
    assert env.rounds == 2 and env.ticks >= 2


def test_unknown_action_lists_valid_ids(make_env):
    env, _ = make_env([(2, 1)], contents={"kitchen_table": ["cupcake_1"]})
    valid = ", ".join(a.id for a in env.available_actions("agent_0"))
    with pytest.raises(ValueError, match=re.escape(
            f"agent_0: unknown or unavailable action 'grab:cupcake_2'. Did you mean "
            f"'grab:cupcake_1'? Valid ids for agent_0: {valid}")):
        env.step({"agent_0": "grab:cupcake_2"})
    with pytest.raises(ValueError, match="unavailable action 'continue'"):
        env.step({"agent_0": "continue"})  # nothing is running


def test_explore_opens_every_container_then_grab_and_put(make_env):
    env, _ = make_env([(2, 2)], contents={"kitchen_table": ["cupcake_1"]}, doors_open=[False])
    mem = env.memory("agent_0")
    assert mem.containers_unobserved("kitchen") == ["fridge"]
    _, _, _, _, infos = env.step({"agent_0": "explore:kitchen"})
    assert infos["agent_0"]["status"] == "done"
    assert [e["type"] for e in infos["agent_0"]["events"]] == ["opened"]
    assert mem.room_explored("kitchen") and mem.furniture["fridge"].contents == ()
    env.step({"agent_0": "grab:cupcake_1"})
    assert mem.held == ("cupcake_1",)
    _, rew, terms, _, infos = env.step({"agent_0": "put:fridge"})
    assert terms["agent_0"] and rew["agent_0"] == 1.0 and env.agents == []


def test_goto_opens_a_closed_door(make_env):
    env, _ = make_env([(2, 3)], doors_open=[False])
    _, _, _, _, infos = env.step({"agent_0": "goto:living_room"})
    assert infos["agent_0"]["status"] == "done"
    assert infos["agent_0"]["events"][0]["type"] == "opened"
    assert env.memory("agent_0").room == "living_room"


def test_grab_fails_when_the_object_is_gone(make_env):
    env, _ = make_env([(2, 6)], contents={"sofa": ["cupcake_1"]})
    env.memory("agent_0").note_object("cupcake_1", "kitchen_table")  # a stale rumour
    env.base.world.contents[-1] = ()  # nobody saw it go
    env.base.world.contents[1] = ()
    _, _, _, _, infos = env.step({"agent_0": "grab:cupcake_1"})
    assert infos["agent_0"]["status"] == "failed"
    assert infos["agent_0"]["failure_reason"] == "cupcake_1 is not on the kitchen_table any more"
    assert env.needs_decision("agent_0")


def test_grab_fails_with_full_hands(make_env):
    env, _ = make_env([(2, 1)], contents={"kitchen_table": ["cupcake_1"]},
                      hands=[["plate_1", "fork_1"]])
    _, _, _, _, infos = env.step({"agent_0": "grab:cupcake_1"})
    assert infos["agent_0"]["failure_reason"] == "both hands are full"
    assert infos["agent_0"]["ticks_elapsed"] == 1


def test_put_places_only_what_the_goal_wants_there(make_env):
    env, _ = make_env([(2, 1)], hands=[["plate_1", "cupcake_1"]])
    env.step({"agent_0": "put:fridge"})
    assert env.memory("agent_0").held == ("plate_1",)
    assert env.memory("agent_0").furniture["fridge"].contents == ("cupcake_1",)


def test_put_places_everything_when_nothing_matches(make_env):
    env, _ = make_env([(2, 1)], hands=[["plate_1", "fork_1"]])
    env.step({"agent_0": "put:kitchen_table"})
    assert env.memory("agent_0").held == ()


def test_blocked_path_fails_after_bounded_ticks(inline_layout, make_state):
    corridor = inline_layout(["#######", "#Fkkkk#", "##k####", "##k####", "#kkkkT#",
                              "#######"], furniture={"F": "fridge", "T": "kitchen_table"})
    env = HighLevelEnv(layout=corridor, task="put_fridge", num_agents=2)
    env.load_state(make_state(corridor, [(4, 3), (2, 2)], goal=CUPCAKE_IN_FRIDGE))
    env.set_idle("agent_1", True)  # a removed agent standing in the only corridor
    assert not env.needs_decision("agent_1")
    _, _, _, _, infos = env.step({"agent_0": "check:fridge"})
    assert infos["agent_0"]["status"] == "failed"
    assert infos["agent_0"]["failure_reason"] == (
        f"could not reach the fridge: blocked for {STUCK_LIMIT + 1} ticks")
    assert infos["agent_0"]["ticks_elapsed"] <= STUCK_LIMIT + 5
    assert infos["agent_1"]["status"] == "idle" and not infos["agent_1"]["needs_decision"]
    assert [e for e in infos["agent_1"]["events"] if e["type"] != "collision"] == []


@pytest.mark.parametrize("seed", range(5))
def test_memory_never_reveals_unseen_things(seed):
    env = HighLevelEnv(layout="apartment", task="put_fridge", num_agents=2)
    obs, infos = env.reset(seed=seed)
    for _ in range(6):
        for agent in env.agents:
            mem = env.memory(agent)
            seen_text = obs[agent]
            for room in mem.furniture.values():
                assert room.room in mem.rooms_seen
            if env.rounds == 0:  # at the start, memory is exactly what the agent sees
                for obj in mem.objects:
                    assert obj in seen_text
                for b in mem.furniture.values():
                    assert b.name in seen_text
            for action in env.available_actions(agent):
                if action.kind == "grab":
                    assert action.target in mem.objects
        actions = {a: ("explore:kitchen" if env.needs_decision(a) else "continue")
                   for a in env.agents}
        obs, _, _, _, infos = env.step(actions)
        if not env.agents:
            break


def test_objects_believed_on_furniture_are_among_its_believed_contents():
    # a memory skips forgetting at furniture seen with the contents it believed it
    # held, which holds only while every object believed there is among them: checked
    # after every tick of a planner team whose members hear, grab and put objects
    from orgteams.organizations.rounds.runner import TeamRunner
    from orgteams.organizations.spec.library import load_organization
    from orgteams.run import build_team

    org = load_organization("shared")
    env = HighLevelEnv(layout="generated:32:0", task="prepare_afternoon_tea", num_agents=8)
    checked = {"beliefs": 0, "heard": 0}

    def check(*_):
        for agent in env.possible_agents:
            mem = env.memory(agent)
            for obj, b in mem.objects.items():
                seen = mem.furniture.get(b.location)  # heard of, maybe never seen
                contents = None if seen is None else seen.contents
                if contents is not None:
                    assert obj in contents, (agent, obj, b, contents)
                    checked["beliefs"] += 1
                    checked["heard"] += b.source == "heard"

    env.on_tick = check
    TeamRunner(env, org, build_team("planner", 8, org), max_rounds=40).run(seed=1)
    assert checked["beliefs"] > 200 and checked["heard"] > 20, checked


def test_every_round_runs_at_least_one_tick():
    env = HighLevelEnv(layout="studio", num_agents=1)
    env.reset(seed=0)
    room = env.memory("agent_0").room or "kitchen"
    env.step({"agent_0": f"goto:{room}"})  # already there: done at once
    assert env.ticks == 1 and env.rounds == 1


def test_memory_text_and_dict():
    env = HighLevelEnv(layout="studio", num_agents=1)
    env.reset(seed=1)
    mem = env.memory("agent_0")
    assert mem.render_text().startswith("Rooms seen: ")
    d = mem.to_dict()
    assert d["agent"] == "agent_0" and set(d["rooms_seen"]) == set(mem.rooms_seen)
    with pytest.raises(ValueError, match="unknown location 'moon'"):
        mem.note_object(env.base.world.scene.objects[0], "moon")


# ---- primitive:<id>: one tick of a primitive action (keyboard play beside planners) ----
def test_primitive_action_runs_exactly_one_tick_while_a_plan_keeps_running(make_env):
    from orgteams.envs.core.actions import Verb, encode

    env, _ = make_env([(2, 1), (2, 6)])
    env.step({"agent_1": "goto:kitchen"})  # a long walk through the closed door
    assert env.current("agent_1").id == "goto:kitchen"
    ticks = env.ticks
    obs, _, _, _, infos = env.step({"agent_0": f"primitive:{encode(Verb.MOVE, 1)}",
                                    "agent_1": "continue"})
    assert env.ticks == ticks + 1
    assert env.base.world.agent_pos[0] == 2 * env.base.world.scene.width + 2  # moved right
    assert infos["agent_0"]["needs_decision"] and infos["agent_0"]["status"] == "done"
    assert env.current("agent_1").id == "goto:kitchen"  # the planner kept its plan


def test_primitive_is_never_offered(make_env):
    env, _ = make_env([(2, 1)])
    assert all(a.kind != "primitive" for a in env.available_actions("agent_0"))
    env.step({"agent_0": "primitive:0"})
    assert all(a.kind != "primitive" for a in env.available_actions("agent_0"))


@pytest.mark.parametrize("ident", ["primitive:", "primitive:x", "primitive:-1",
                                   "primitive:9999", "primitive:²"])
def test_bad_primitive_ids_are_rejected(make_env, ident):
    env, _ = make_env([(2, 1)])
    n = env.base.action_space("agent_0").n
    with pytest.raises(ValueError, match=re.escape(
            f"agent_0: bad primitive action {ident!r}: expected 'primitive:<id>' with an "
            f"integer id from 0 to {n - 1} (see orgteams.envs.core.actions)")):
        env.step({"agent_0": ident})
    assert env.ticks == 0


def test_primitive_player_is_not_pushed_aside(make_env):
    from orgteams.envs.core.actions import Verb, encode

    # agent_0 (right of way) walks right into agent_1, who only waits by keyboard.
    env, _ = make_env([(2, 1), (2, 2)])
    env.step({"agent_0": "primitive:0", "agent_1": "primitive:0"})
    w = env.base.world.scene.width
    env.step({"agent_0": f"primitive:{encode(Verb.MOVE, 1)}", "agent_1": "primitive:0"})
    assert env.base.world.agent_pos == [2 * w + 1, 2 * w + 2]  # a collision, no push
    env.step({"agent_0": f"primitive:{encode(Verb.MOVE, 1)}", "agent_1": "wait"})
    assert env.base.world.agent_pos[1] != 2 * w + 2  # a waiting planner is pushed aside


@pytest.mark.parametrize("layout", ["studio", "apartment", "house"])
def test_highlevel_env_passes_pettingzoo_parallel_api_and_seed_tests(layout):
    from pettingzoo.test import parallel_api_test, parallel_seed_test

    parallel_api_test(HighLevelEnv(layout=layout, num_agents=3), num_cycles=300)
    parallel_seed_test(lambda: HighLevelEnv(layout=layout, num_agents=3))


def test_action_space_samples_and_accepts_only_available_ids():
    env = HighLevelEnv(layout="studio", num_agents=2)
    space = env.action_space("agent_0")
    assert space is env.action_space("agent_0") and space is not env.action_space("agent_1")
    # no episode yet: a plain Text space (any short string over the id charset)
    assert space.contains("grab:unicorn_1") and not space.contains("no spaces!")
    env.reset(seed=0)
    space.seed(3)
    valid = {a.id for a in env.available_actions("agent_0")}
    draws = {space.sample() for _ in range(50)}
    assert draws <= valid and len(draws) > 1
    assert space.contains("wait") and space.contains("primitive:52")
    assert not space.contains("grab:unicorn_1") and not space.contains("primitive:53")
    assert not space.contains(7)
    # a random baseline drives the env with nothing but the spaces
    for _ in range(20):
        if not env.agents:
            break
        env.step({a: env.action_space(a).sample() for a in env.agents})
    assert env.ticks > 0


def test_reset_starts_from_a_given_state_through_options():
    from orgteams.envs.household import HouseholdEnv

    source = HouseholdEnv(layout="studio", num_agents=2)
    obs, _ = source.reset(seed=3)
    state = source.world
    other = HouseholdEnv(layout="studio", num_agents=2)
    again, infos = other.reset(options={"state": state})
    assert other.world is state and infos["agent_0"]["tick"] == 0
    assert all((again[a]["image"] == obs[a]["image"]).all() for a in obs)
    high = HighLevelEnv(layout="studio", num_agents=2)
    assert high.base.observations is False  # the wrapper builds its own, per round
    high.reset(options={"state": state})
    assert high.base.world is state and high.ticks == 0
    with pytest.raises(ValueError, match=re.escape(
            "options['state'] has 2 agents, env has 3")):
        HouseholdEnv(layout="studio", num_agents=3).reset(options={"state": state})


def test_pickles_mid_plan_and_the_copy_goes_on_identically():
    import pickle

    import numpy as np

    env = HighLevelEnv(layout="apartment", num_agents=2, render_mode="rgb_array")
    obs, infos = env.reset(seed=3)
    env.render()  # a window's surfaces must not stop the env from pickling
    rng = np.random.default_rng(3)

    def choose(infos):
        return {a: i["available"][int(rng.integers(len(i["available"])))].id
                for a, i in infos.items() if i["needs_decision"]}

    for _ in range(4):
        obs, _, _, _, infos = env.step(choose(infos))
    assert any(env.current(a) is not None for a in env.agents)  # a plan is mid-way
    copy = pickle.loads(pickle.dumps(env))
    state = rng.bit_generator.state
    trace = []
    for e in (env, copy):
        rng.bit_generator.state = state
        i = infos
        steps = []
        for _ in range(8):
            if not e.agents:
                break
            o, r, _, _, i = e.step(choose(i))
            steps.append((o, r, {a: (x["status"], x["ticks_elapsed"]) for a, x in i.items()},
                          e.base.world.to_dict()))
        trace.append(steps)
    assert trace[0] == trace[1] and len(trace[0]) == 8
    env.close()


def test_an_action_is_one_action_id_from_decision_to_plan():
    """``ActionId`` is the string id, with its kind and target read from it once."""
    import json

    from orgteams.agents.member import ActDecision, DecisionRecord, safe_action
    from orgteams.envs.highlevel import ActionId

    grab = ActionId("grab:cupcake_2")
    assert (grab.kind, grab.target) == ("grab", "cupcake_2") and grab == "grab:cupcake_2"
    assert ActionId.of("wait") == "wait" and ActionId.of("wait").target == ""
    assert json.dumps({"action": grab}) == '{"action": "grab:cupcake_2"}'
    assert type(HighLevelAction.make("explore", "kitchen").id) is ActionId
    decided = ActDecision("explore:kitchen", "", DecisionRecord("act", "agent_0", 0))
    assert type(decided.action_id) is ActionId  # a member's plain str becomes one
    assert type(safe_action([HighLevelAction.make("wait")])[0]) is ActionId
    env = HighLevelEnv(layout="studio", num_agents=1)
    env.reset(seed=0)
    offered = env.available_actions("agent_0")[0].id
    env.step({"agent_0": offered})
    assert env.current("agent_0") is None or env.current("agent_0").id == offered


def test_available_actions_follow_what_the_agent_hears_and_does_between_calls():
    # Asked several times a round (kept between changes): a heard object, a started
    # plan and a caller editing its copy all show in the next answer.
    env = HighLevelEnv(layout="house", num_agents=2)
    env.reset(seed=0)
    first = env.available_actions("agent_0")
    ids = [a.id for a in first]
    first.clear()
    assert [a.id for a in env.available_actions("agent_0")] == ids
    obj = next(o for o in env.world.scene.objects if f"grab:{o}" not in ids)
    furniture = env.world.scene.layout.furniture[0].name
    env.memory("agent_0").note_object(obj, furniture)
    assert f"grab:{obj}" in [a.id for a in env.available_actions("agent_0")]
    assert "continue" not in [a.id for a in env.available_actions("agent_0")]
    env.step({"agent_0": ids[0]})
    assert "continue" in [a.id for a in env.available_actions("agent_0")]


def test_is_available_answers_as_the_available_actions_do_as_the_memory_grows():
    # is_available looks the one id up in the memory (not in the listed actions): for
    # every id an agent could send (and malformed ones), while agents explore, grab,
    # hold, put and hear things, its answer is whether the list has that id
    import numpy as np

    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    env.reset(seed=3)
    scene = env.world.scene
    rooms, furniture = scene.layout.rooms, [f.name for f in scene.layout.furniture]
    candidates = ([f"{k}:{r}" for k in ("explore", "goto") for r in rooms]
                  + [f"{k}:{f}" for k in ("check", "put") for f in furniture]
                  + [f"grab:{o}" for o in scene.objects]
                  + ["wait", "continue", "wait:", "explore:", "grab:", "put:nowhere",
                     "grab:no_such_thing", "dance:" + rooms[0], "explore:" + furniture[0],
                     "primitive:0", ""])
    rng = np.random.default_rng(0)
    asked = {"put": 0, "grab": 0, "continue": 0}
    for step in range(40):
        for agent in env.agents:
            ids = {a.id for a in env.available_actions(agent)}
            for ident in candidates:
                assert env.is_available(agent, ident) == (ident in ids), (agent, ident)
            for kind in asked:
                asked[kind] += any(i.startswith(kind) for i in ids)
        if step == 5:  # heard: an object on a piece of furniture not seen yet
            env.memory(env.agents[0]).note_object(scene.objects[0], furniture[-1])
        actions = {}
        for a in env.agents:
            if env.needs_decision(a):
                ids = [x.id for x in env.available_actions(a)]
                grabs = [i for i in ids if i.startswith(("grab", "put"))]
                pool = grabs if grabs and rng.random() < 0.7 else ids
                actions[a] = pool[rng.integers(len(pool))]
        env.step(actions)
        if not env.agents:
            break
    assert all(asked.values()), asked  # the lists had every kind in them

def test_a_rounds_infos_without_observations_are_each_agents_info_to_the_last_round():
    # step(observe=False) builds the 256 agents' infos in one loop: each is the info
    # the env gives one agent (same keys, same order, same values), through idle
    # members, failed and finished plans and the episode's last round
    import random

    env = HighLevelEnv(layout="generated:32:0", num_agents=24, max_ticks=60)
    env.reset(seed=4)
    rng = random.Random(4)
    rounds = 0
    seen = set()
    while env.agents:
        if rounds == 3:
            env.set_idle("agent_5", True)
        actions = {a: rng.choice(env.available_actions(a)).id for a in env.agents
                   if env.needs_decision(a)}
        _, _, _, _, infos = env.step(actions, observe=False)
        for a, info in infos.items():
            want = env._info(a, info["ticks_elapsed"], info["events"], observe=False)
            assert list(info.items()) == list(want.items())
            seen.add((info["status"], info["needs_decision"]))
        rounds += 1
    assert {"running", "done", "failed", "idle"} <= {status for status, _ in seen}
    assert ("done", True) in seen and ("failed", True) in seen
    # the last round (truncated): nobody needs a decision any more
    assert infos and not any(info["needs_decision"] for info in infos.values())
    assert rounds > 10
