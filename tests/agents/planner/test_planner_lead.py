"""A planner leader (``agents/planner/lead.py``): what it orders, and what it does not.

Each test is one cause of the led teams of ``benchmarks/teams/planner_table.py`` being 1.40x
slower than self-claiming ones (benchmarks/README.md); each failed on the leader
before the fix.
"""

from __future__ import annotations

from dataclasses import replace

from orgteams.agents.member_rules import MemberRules
from orgteams.agents.messages import TeamMessage
from orgteams.agents.planner.planner import PlannerAgent
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv

LEADER_RULES = MemberRules(assign_work="leader", leaders=("agent_0",),
                           reports=("agent_1", "agent_2"), assigns=True)
MEMBER_RULES = MemberRules(assign_work="leader", leaders=("agent_0",), report_to=("agent_0",),
                           boss="agent_0")


def _team(task: str = "prepare_afternoon_tea", seed: int = 0) -> tuple[HighLevelEnv,
                                                                      PlannerAgent]:
    """3 planners on the studio at the start (everyone must decide), and a leader that
    knows no object yet (tests tell it what they need)."""
    env = HighLevelEnv(layout="studio", task=task, num_agents=3)
    env.reset(seed=seed)
    leader = PlannerAgent("agent_0", role="leader")
    leader.rules = LEADER_RULES
    env.memory("agent_0").objects.clear()
    return env, leader


def _where(env: HighLevelEnv, obj: str) -> str:
    scene = env.base.world.scene
    return scene.layout.furniture[env.base.world.where(scene.objects.index(obj))[1]].name


def _orders(said: list[TeamMessage]) -> dict[str, str]:
    return {m.content["agent"]: m.content["action"] for m in said if m.kind == "assign"}


def _units(env: HighLevelEnv, cls: str) -> list[str]:
    return [o for o in env.base.world.scene.objects if o.rpartition("_")[0] == cls]


def test_no_goal_class_is_ordered_more_units_than_the_goal_needs():
    env, leader = _team()
    juice = next(p for p in env.base.world.scene.goal if p.cls == "juice")
    units = _units(env, "juice")
    assert juice.count == 1 and len(units) == 2  # one is needed, two are known
    for obj in units:
        env.memory("agent_0").note_object(obj, _where(env, obj))
    said = leader.communicate(env, [])
    # the leader's own decision counts too: it must not go for a unit it ordered
    goes = [a for a in _orders(said).values() if a.startswith("grab:juice")]
    goes += [leader.status(env)] if leader.status(env).startswith("grab:juice") else []
    assert len(goes) == 1, (_orders(said), leader.status(env))


def test_an_order_nobody_took_up_is_freed():
    env, leader = _team()
    obj = _units(env, "juice")[0]
    env.memory("agent_0").note_object(obj, _where(env, obj))
    # agent_1 was ordered to grab it rounds ago, never claimed it and must decide again
    leader.assigned[obj] = "agent_1"
    leader.assigned_at = {obj: -5}
    said = leader.communicate(env, [])
    takers = [a for a, act in _orders(said).items() if act == f"grab:{obj}"]
    takers += ["agent_0"] if leader.status(env) == f"grab:{obj}" else []
    assert len(takers) == 1, (_orders(said), leader.status(env))
    assert leader.assigned.get(obj, "agent_0") == takers[0]


def test_a_member_under_a_leader_reports_the_rooms_it_explored():
    env, _ = _team(seed=1)
    mem = env.memory("agent_1")
    explored = [r for r in mem.rooms if mem.room_explored(r)]
    assert explored == ["living_room"]  # it sees that room whole from where it starts
    member = PlannerAgent("agent_1")
    member.rules = MEMBER_RULES
    reports = [m for m in member.communicate(env, []) if m.kind == "done"]
    assert [m.content for m in reports] == [{"room": "living_room"}]
    assert reports[0].text == "done explore living_room"
    assert not [m for m in member.communicate(env, []) if m.kind == "done"]  # once each
    # not when no leader that assigns work hears it: claiming teams, a middle tier
    for rules in (MemberRules(assign_work="claim"),
                  replace(MEMBER_RULES, report_to=("agent_2",))):
        other = PlannerAgent("agent_1")
        other.rules = rules
        assert not [m for m in other.communicate(env, []) if m.kind == "done"], rules


def test_the_leader_sends_nobody_to_a_room_a_teammate_explored():
    env, leader = _team()
    rooms = [r for r in env.memory("agent_0").rooms
             if not env.memory("agent_0").room_explored(r)]
    assert len(rooms) >= 2
    last = rooms[-1]
    heard = [TeamMessage.structured("agent_1", ("agent_0",), "done", {"room": r})
             for r in rooms[:-1]]
    said = leader.communicate(env, heard)
    explores = [a for a in _orders(said).values() if a.startswith("explore:")]
    assert explores == [f"explore:{last}"], _orders(said)


def test_the_leader_does_not_reorder_the_room_an_agent_just_finished():
    env, leader = _team()
    rooms = [r for r in env.memory("agent_0").rooms
             if not env.memory("agent_0").room_explored(r)]
    last = rooms[-1]
    heard = [TeamMessage.structured("agent_2", ("agent_0",), "done", {"room": r})
             for r in rooms[:-1]]
    leader.assigned[f"room:{last}"] = "agent_1"  # its order ended: it must decide again
    leader.assigned_at = {f"room:{last}": -5}
    said = leader.communicate(env, heard)
    # agent_1's report on it comes after the leader speaks: no second order for it
    assert _orders(said).get("agent_1") != f"explore:{last}", _orders(said)


def _give(env: HighLevelEnv, agent: int, obj: str) -> str:
    """Put ``obj`` in ``agent``'s hand (as if it had just grabbed it); its old place."""
    world = env.base.world
    i = world.scene.objects.index(obj)
    f = world.where(i)[1]
    hands, contents = list(world.hands), list(world.contents)
    hands[agent] = (i,)
    contents[f] = tuple(o for o in contents[f] if o != i)
    env.load_state(replace(world, hands=hands, contents=contents))
    return world.scene.layout.furniture[f].name


def test_a_member_carrying_goal_objects_is_not_sent_exploring():
    env, leader = _team()
    _give(env, 1, _units(env, "apple")[0])
    env.memory("agent_0").objects.clear()
    said = leader.communicate(env, [])
    assert "agent_1" not in _orders(said), _orders(said)  # it delivers on its own
    assert _orders(said)["agent_2"].startswith("explore:")


def test_nobody_is_ordered_to_grab_what_a_teammate_carries():
    env, leader = _team()
    assert next(p.count for p in env.base.world.scene.goal if p.cls == "wine") == 2
    obj = _units(env, "wine")[0]  # one of the two wines the goal needs
    was = _give(env, 1, obj)  # agent_1 grabbed it (and must decide what next)
    env.memory("agent_0").objects.clear()
    env.memory("agent_0").note_object(obj, was, tick=0)  # the leader heard where it was
    leader.claims[obj] = ("agent_1", 0)  # and agent_1's claim
    said = leader.communicate(env, [])
    assert f"grab:{obj}" not in _orders(said).values(), _orders(said)
    assert leader.status(env) != f"grab:{obj}"


def test_a_budget_drops_room_reports_before_where_goal_objects_are():
    from orgteams.agents.member_rules import within_budget
    from orgteams.agents.planner.planner_member import priority

    room = TeamMessage.structured("agent_1", ("agent_0",), "done", {"room": "kitchen"})
    found = TeamMessage.structured("agent_1", ("agent_0",), "found",
                                   {"object": "apple_1", "location": "fridge"})
    placed = TeamMessage.structured("agent_1", ("agent_0",), "done",
                                    {"object": "apple_1", "target": "fridge"})
    ranked = sorted([room, found, placed], key=priority)
    assert ranked == [placed, found, room]
    kept, dropped = within_budget(ranked, MemberRules(max_messages=2), lambda m: 1)
    assert (kept, dropped) == ([placed, found], [room])
