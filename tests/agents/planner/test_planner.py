"""PlannerAgent (alone, in teams, led), its messages, RandomAgent, and the task table."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from doubles import load_script

from orgteams.agents.member_rules import MemberRules
from orgteams.agents.messages import TeamMessage
from orgteams.agents.planner.planner import PlannerAgent
from orgteams.agents.random_agent import RandomAgent
from orgteams.agents.team import Team
from orgteams.envs import list_tasks
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations.rounds.planner_team import everyone_hears_everyone, run_team
from orgteams.organizations.spec.library import load_organization


def _cell(layout: str, task: str, n: int, seeds, leader: bool = False,
          messages: list | None = None) -> list[dict]:
    env = HighLevelEnv(layout=layout, task=task, num_agents=n)
    org = everyone_hears_everyone(load_organization("leader")) if leader else None
    return [run_team(env, [PlannerAgent(f"agent_{i}", "leader" if leader and i == 0
                                        else "member") for i in range(n)], seed=s,
                     organization=org, messages=messages)
            for s in seeds]


def _check_task(layout: str, task: str, seeds) -> None:
    solo = _cell(layout, task, 1, seeds)
    team = _cell(layout, task, 3, seeds)
    assert all(r["success"] for r in solo), (layout, task, solo)
    assert all(r["success"] for r in team), (layout, task, team)
    mean_solo = statistics.fmean(r["ticks"] for r in solo)
    mean_team = statistics.fmean(r["ticks"] for r in team)
    assert mean_team < mean_solo, (layout, task, mean_team, mean_solo)


@pytest.mark.parametrize("task", list_tasks())
def test_planners_solve_every_task_on_studio(task):
    _check_task("studio", task, range(3))


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["studio", "apartment", "house"])
def test_planners_solve_every_task_over_20_seeds(layout):
    for task in list_tasks():
        _check_task(layout, task, range(20))


def test_a_leader_team_solves_tasks():
    said: list[TeamMessage] = []
    results = _cell("apartment", "put_fridge", 3, range(3), leader=True, messages=said)
    assert all(r["success"] for r in results)
    assert {m.sender for m in said if m.kind == "assign"} == {"agent_0"}  # it did lead


def _planner_table():
    """benchmarks/teams/planner_table.py as a module (benchmarks/ is not a package)."""
    return load_script(Path(__file__).resolve().parents[3] / "benchmarks" / "teams"
                       / "planner_table.py")


def test_planner_table_leader_column_is_led_and_its_orders_are_followed():
    table = _planner_table()
    led = table.run_cell("studio", "prepare_afternoon_tea", 3, 2, leader=True)
    plain = table.run_cell("studio", "prepare_afternoon_tea", 3, 2)
    # Under the named leader organization's rules agent_0 gives orders and the ordered
    # agent does them in that round; without those rules nobody orders anything. An
    # order a member cannot do is dropped, so not all of them, but nearly. (11 orders
    # over these 2 seeds since the leader stopped re-ordering rooms already explored.)
    assert led["orders"] >= 8 and led["orders_followed"] >= 0.9 * led["orders"], led
    assert plain["orders"] == 0 and plain["orders_followed"] == 0, plain
    assert led["mean_ticks"] != plain["mean_ticks"]


def test_everyone_hears_everyone_takes_the_other_organizations_topology_and_rules():
    org = everyone_hears_everyone(load_organization("leader"))
    assert (org.protocol, org.channels, org.rules.assign_work) == ("free", "all", "leader")
    resolved = org.resolve(Team.of(["agent_0", "agent_1", "agent_2"]))
    assert resolved.member_rules("agent_0").assigns
    assert not resolved.member_rules("agent_1").assigns


def test_second_speaker_hears_the_claim_and_picks_another_object():
    env = HighLevelEnv(layout="studio", task="setup_table", num_agents=2)
    env.reset(seed=0)
    a, b = PlannerAgent("agent_0"), PlannerAgent("agent_1")
    mem_a, mem_b = env.memory("agent_0"), env.memory("agent_1")
    # Both know the same two objects (as if both had seen them).
    scene = env.base.world.scene
    wanted = {p.cls for p in scene.goal}
    objs = [o for o in scene.objects if o.rpartition("_")[0] in wanted]
    where = {o: scene.layout.furniture[env.base.world.where(i)[1]].name
             for i, o in enumerate(scene.objects) if o in objs}
    for o in objs:
        mem_a.note_object(o, where[o])
        mem_b.note_object(o, where[o])
    said_a = a.communicate(env, [])
    said_b = b.communicate(env, said_a)
    claims_a = {m.content["object"] for m in said_a if m.kind == "claim" and "object" in m.content}
    claims_b = {m.content["object"] for m in said_b if m.kind == "claim" and "object" in m.content}
    assert claims_a and claims_b and not claims_a & claims_b
    act_a, act_b = a.act(env), b.act(env)
    assert act_a.startswith("grab:") and act_b.startswith("grab:") and act_a != act_b


def test_simultaneous_claims_the_lower_index_wins():
    b = PlannerAgent("agent_1")
    b.claims["cupcake_1"] = ("agent_1", 5)
    b.receive([TeamMessage.structured("agent_0", "everyone", "claim",
                                      {"object": "cupcake_1", "target": "coffee_table",
                                       "tick": 5})])
    assert b.claims["cupcake_1"] == ("agent_0", 5)
    a = PlannerAgent("agent_0")
    a.claims["cupcake_1"] = ("agent_0", 5)
    a.receive([TeamMessage.structured("agent_1", "everyone", "claim",
                                      {"object": "cupcake_1", "tick": 5})])
    assert a.claims["cupcake_1"] == ("agent_0", 5)


def test_leader_assigns_and_member_follows():
    env = HighLevelEnv(layout="studio", task="prepare_food", num_agents=2)
    env.reset(seed=1)
    leader, member = PlannerAgent("agent_0", role="leader"), PlannerAgent("agent_1")
    # a leader assigns only when told to, and only to its reports
    leader.rules = MemberRules(assign_work="leader", reports=("agent_1",), assigns=True)
    scene = env.base.world.scene
    # The leader alone knows where a wanted object is; the member has not seen it.
    obj = next(o for i, o in enumerate(scene.objects)
               if o.rpartition("_")[0] in {p.cls for p in scene.goal}
               and o not in env.memory("agent_1").objects)
    where = scene.layout.furniture[env.base.world.where(scene.objects.index(obj))[1]].name
    env.memory("agent_0").note_object(obj, where)
    said = leader.communicate(env, [])
    assigns = [m for m in said if m.kind == "assign"]
    assert len(assigns) == 1 and assigns[0].receivers == ("agent_1",)
    assert assigns[0].text.startswith("agent_1: ")
    assert assigns[0].content["action"] == f"grab:{obj}"
    member.communicate(env, said)
    assert env.memory("agent_1").location_of(obj) == where  # heard from the leader
    assert member.act(env) == f"grab:{obj}"


def test_message_rendering():
    m = TeamMessage.structured("agent_0", "everyone", "claim",
                               {"object": "cupcake_2", "target": "coffee_table"})
    assert m.text == "claim cupcake_2 -> coffee_table"
    assert TeamMessage.structured("agent_0", "everyone", "found", {
        "object": "apple_1", "location": "fridge"}).text == "seen apple_1 in fridge"
    assert TeamMessage.structured("agent_0", ("agent_1",), "assign", {
        "agent": "agent_1", "action": "grab:cupcake_2",
        "target": "coffee_table"}).text == "agent_1: grab cupcake_2 -> coffee_table"
    assert TeamMessage("agent_0", "everyone", "hello").text == "hello"
    with pytest.raises(ValueError, match="message kind 'shout' must be one of"):
        TeamMessage.structured("agent_0", "everyone", "shout", {})
    with pytest.raises(ValueError, match="message kind 'shout' must be one of"):
        TeamMessage("agent_0", "everyone", "hi", "shout")
    with pytest.raises(ValueError, match="receivers must be a tuple"):
        TeamMessage("agent_0", "agent_1", "text")
    with pytest.raises(ValueError, match="role must be one of"):
        PlannerAgent("agent_0", role="boss")


def test_random_agent_plays_valid_actions():
    env = HighLevelEnv(layout="studio", num_agents=2, max_ticks=60)
    result = run_team(env, [RandomAgent("agent_0", seed=0), RandomAgent("agent_1", seed=1)],
                      seed=0)
    assert result["ticks"] <= 60 and result["messages"] == 0


def test_collect_demos_writes_npz_and_index(tmp_path):
    import json

    import numpy as np

    from orgteams.experiments.demos import INDEX_FILE, collect_demos

    records = collect_demos("studio", "put_fridge", 2, [0, 1], tmp_path)
    lines = [json.loads(x) for x in (tmp_path / INDEX_FILE).read_text().splitlines()]
    assert lines == records and [r["seed"] for r in lines] == [0, 1]
    data = np.load(tmp_path / records[0]["file"])
    t = records[0]["ticks"]
    assert data["obs_image"].shape[:2] == (t, 2) and data["actions"].shape == (t, 2)
    assert data["rewards"][-1] == 1.0 and records[0]["success"]
    assert len(json.loads(str(data["events"]))) == t
    assert all(a.split(":")[0] in ("explore", "goto", "check", "grab", "put", "wait")
               for a in data["decision_action"])
    assert (np.diff(data["decision_tick"]) >= 0).all()


def test_a_planner_releases_before_it_claims_in_one_turn(tmp_path: Path) -> None:
    """A planner that gives up one object and claims another in the same turn sends the
    release first: teammates who hear both in order must not end up seeing the claim
    undone. (With claims first, this pyramid, its leader removed at round 5 and no
    successor, queued on ``wine_2`` in the storage and ran to the 850-tick limit.)"""
    from doubles import read_dicts

    from orgteams.run import run_episode

    org = load_organization("pyramid")
    org = org.updated(rules={**org.model_dump(mode="json")["rules"], "succession": "none"})
    log = tmp_path / "pyramid.jsonl"
    result = run_episode(task="prepare_afternoon_tea", layout="house", organization=org,
                         agents=5, backend="planner", seed=10,
                         shocks=["remove:agent_0@5"], log_path=log)
    turns = [line["parsed"]["messages"] for line in read_dicts(log)
             if line.get("phase") == "communicate" and line.get("parsed")]
    both = [[m["kind"] for m in said if m["kind"] in ("release", "claim")]
            for said in turns]
    both = [kinds for kinds in both if "release" in kinds and "claim" in kinds]
    assert both, "no turn both released and claimed: the episode no longer tests this"
    assert all(kinds.index("release") < kinds.index("claim") for kinds in both), both
    assert result.summary.success and result.summary.ticks < 850, result.summary
