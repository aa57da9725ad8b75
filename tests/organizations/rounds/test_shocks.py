"""Shocks: the four kinds of the self-organizing paper, and recovery (docs/shocks.md)."""

from __future__ import annotations

import re

import pytest
from doubles import records_of

from orgteams.agents.planner.planner_member import PlannerMember
from orgteams.agents.records import ActionLine
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.envs.highlevel.removal import remove_agent
from orgteams.errors import UserError
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.episode_log import EventLine, read_log
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.organizations.rounds.shocks import (
    Shock,
    pre_shock_rate,
    recovery_rounds,
    recovery_summary,
    recovery_ticks,
)
from orgteams.run import run_episode


# ---------------------------------------------------------------- recovery
def test_recovery_is_the_first_round_whose_rate_is_back():
    # 1 unit per round before the shock at round 4, then a stall of 2 rounds
    units = [0, 1, 2, 3, 4, 4, 4, 7]
    assert recovery_rounds(units, 4, success=True, baseline=4, window=4) == 3


def test_recovery_is_none_when_the_episode_failed_even_if_the_rate_came_back():
    units = [0, 1, 2, 3, 4, 4, 4, 7]
    assert recovery_rounds(units, 4, success=False, baseline=4, window=4) is None


def test_recovery_is_none_when_the_rate_never_returns_or_the_shock_never_hit():
    assert recovery_rounds([0, 1, 2, 2, 3], 2, success=True, baseline=2) is None
    assert recovery_rounds([0, 1, 2], 5, success=True, baseline=None) is None


def test_recovery_is_undefined_without_a_pre_shock_rate():
    # a shock before any goal progress (or at round 0) has nothing to recover: None,
    # counted as "no baseline", never "recovered in 0 rounds"
    assert pre_shock_rate([0, 0, 0, 1], 2) == 0.0
    assert recovery_rounds([0, 0, 0, 1], 2, success=True, baseline=0) is None
    assert recovery_rounds([0, 1, 2], 0, success=True, baseline=0) is None


def test_recovery_in_ticks_is_the_same_point_in_ticks():
    ticks = [0, 3, 6, 9, 12, 40, 41, 55]  # round 4 took 28 ticks, round 5 one
    assert recovery_ticks(ticks, 4, 3) == 55 - 12
    assert recovery_ticks(ticks, 4, None) is None


def test_a_shock_before_progress_on_a_running_episode_has_no_baseline(tmp_path):
    result = run_episode(organization="leader", layout="house", backend="planner", agents=3,
                         seed=1, shocks=["remove:agent_2@1"], log_path=str(tmp_path / "a.jsonl"))
    (shock,) = result.summary.shocks
    assert result.summary.success and shock["applied"] and shock["units_after"] == 0
    assert (shock["pre_shock_rate"], shock["recovery_rounds"], shock["recovery_ticks"]) == (
        0.0, None, None)
    rec = recovery_summary([result.summary])
    assert (rec["recovered"], rec["not_recovered"], rec["no_baseline"]) == (0, 0, 1)


def test_a_shock_after_the_first_unit_hits_where_a_baseline_exists(tmp_path):
    log = tmp_path / "b.jsonl"
    result = run_episode(organization="leader", layout="house", backend="planner", agents=3,
                         seed=1, shocks=["remove:agent_2@unit:1"], log_path=str(log))
    (shock,) = result.summary.shocks
    (event,) = [e for e in result.records if isinstance(e, EventLine) and e.type == "shock"]
    # it hit at the start of the first round with a unit done, as its log says
    assert shock["hit_round"] == event.round > 0 and shock["units_after"] >= 1
    assert shock["pre_shock_rate"] > 0
    assert isinstance(shock["recovery_rounds"], int) and shock["recovery_rounds"] >= 1
    ticks = [line.tick for line in read_log(log) if isinstance(line, ActionLine)]
    assert 0 < shock["recovery_ticks"] <= max(ticks) - event.tick


def test_recovery_after_a_priority_shift_counts_from_the_new_goals_baseline():
    # 2 units per round before; the new goal starts with 1 unit already done
    units = [0, 2, 4, 2, 3, 7]  # index 3 on: under the new goal
    assert recovery_rounds(units, 2, success=True, baseline=1, window=2) == 3
    # measured from the old goal's units the rate would never come back
    assert recovery_rounds(units, 2, success=True, baseline=4, window=2) is None


# ---------------------------------------------------------------- parsing
@pytest.mark.parametrize(("text", "shock"), [
    ("remove:agent_1@5", Shock(5, "remove", "agent_1")),
    ("substitute:agent_0=planner@2", Shock(2, "substitute", "agent_0", "planner")),
    ("regulate:protocol=shared@3", Shock(3, "regulate", field="protocol", value="shared")),
    ("regulate:allow_abstain=true@1", Shock(1, "regulate", field="allow_abstain", value=True)),
    ("priority:put_fridge@4", Shock(4, "priority", value="put_fridge")),
    ("remove:agent_0@unit:1", Shock(0, "remove", "agent_0", after_units=1)),
])
def test_shock_parse_round_trips(text, shock):
    assert Shock.parse(text) == shock
    assert Shock.parse(shock.text()) == shock


def test_shock_from_spec_names_where_it_is_wrong():
    assert Shock.from_spec({"kind": "priority", "round": 2, "value": "put_fridge"},
                           "spec.yaml: x") == Shock(2, "priority", value="put_fridge")
    with pytest.raises(UserError, match=re.escape(
            "spec.yaml: field 'shocks.a[0]': unknown shock field 'when'")):
        Shock.from_spec({"kind": "remove", "round": 1, "when": 3},
                        "spec.yaml: field 'shocks.a[0]'")
    with pytest.raises(UserError, match=re.escape(
            "s: malformed shock 'melt:agent_1@2': unknown kind 'melt'")):
        Shock.from_spec("melt:agent_1@2", "s")


def test_regulate_validates_the_field_before_the_episode():
    with pytest.raises(UserError, match=re.escape(
            "regulate shock: field 'name' cannot change mid-episode")):
        Shock(1, "regulate", field="name", value="x").validate(["agent_0"], None)


# ---------------------------------------------------------------- removal
def test_removed_agent_sets_down_what_it_holds_and_everyone_knows_where():
    env = HighLevelEnv(layout="apartment", task="prepare_afternoon_tea", num_agents=3)
    env.reset(seed=0)
    world = env.base.world
    obj = 0
    name = world.scene.objects[obj]
    f = next(i for i, c in enumerate(world.contents) if obj in c)
    contents = [tuple(o for o in c if o != obj) for c in world.contents]
    hands = [(), (obj,), ()]
    from dataclasses import replace
    env.base.world = replace(world, contents=contents, hands=hands, progress=())
    assert f is not None
    placed = remove_agent(env, "agent_1")
    assert [o for o, _ in placed] == [name]
    spot = placed[0][1]
    assert env.base.world.hands[1] == ()
    assert any(obj in c for c in env.base.world.contents)
    for agent in env.possible_agents:
        assert env.memory(agent).objects[name].location == spot
    assert not env.needs_decision("agent_1")


@pytest.mark.parametrize("seed", [1, 2, 5])
def test_leader_team_on_the_house_recovers_from_losing_a_member(seed):
    # Before #11 these failed at the step limit: the removed member stood idle in a
    # doorway, its claims and the leader's assignments to it never lapsed, and what
    # it held was lost with it.
    result = run_episode(organization="leader", layout="house", backend="planner", agents=3,
                         seed=seed, shocks=["remove:agent_1@5"], log_path=None)
    summary = result.summary.to_dict()
    assert summary["success"], summary["units_done"]
    assert summary["ticks"] < summary["step_limit"]
    (shock,) = summary["shocks"]
    assert shock["applied"] and shock["kind"] == "remove"
    assert shock["recovery_rounds"] is not None


def test_failed_episode_reports_recovery_none():
    result = run_episode(organization="leader", layout="studio", backend="planner", agents=3,
                         seed=0, shocks=["remove:agent_1@1"], max_ticks=20, log_path=None)
    assert not result.summary.success
    assert result.summary.shocks[0]["recovery_rounds"] is None


# ---------------------------------------------------------------- regulation change
def test_regulation_change_puts_the_new_protocol_in_force_mid_episode():
    from tests.organizations.protocols.test_protocol_fidelity import Tracer

    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    trace: list = []
    members = {f"agent_{i}": Tracer(f"agent_{i}", trace) for i in range(3)}
    for m in members.values():
        m.acts_every_round = True  # every agent decides in both rounds
    runner = TeamRunner(env, load_organization("sequential"), members, max_rounds=2,
                        shocks=[Shock.parse("regulate:protocol=shared@1")])
    result = runner.run(seed=0)
    by_round = [[k for k, _, r in trace if r == rnd] for rnd in (0, 1)]
    assert by_round[0] == ["communicate", "act"] * 3  # sequential: each acts in turn
    assert by_round[1] == ["communicate"] * 3 + ["act"] * 3  # shared: all at once
    ctxs = members["agent_1"].comm
    assert ctxs[0].history is None and ctxs[1].history is not None
    assert result.summary.protocol == "sequential"
    assert result.summary.final_protocol == "shared"
    (event,) = [e for e in result.summary.to_dict()["events"] if e["type"] == "shock"]
    assert (event["field"], event["before"], event["after"]) == ("protocol", "sequential",
                                                                 "shared")


def test_regulation_change_of_the_instruction_reaches_the_members():
    from tests.organizations.protocols.test_protocol_fidelity import Tracer

    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=2)
    trace: list = []
    members = {f"agent_{i}": Tracer(f"agent_{i}", trace) for i in range(2)}
    TeamRunner(env, load_organization("decentralized"), members, max_rounds=2,
               shocks=[Shock(1, "regulate", field="instruction",
                             value="New rule: report only on completion.")]).run(seed=0)
    before, after = (c.instruction for c in members["agent_0"].comm)
    assert "New rule" not in before and after.startswith("New rule: report only on completion.")


def test_regulation_change_of_one_rule_reaches_every_member_kind():
    from tests.organizations.protocols.test_protocol_fidelity import Tracer

    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    trace: list = []
    members = {f"agent_{i}": Tracer(f"agent_{i}", trace) for i in range(3)}
    result = TeamRunner(env, load_organization("leader"), members, max_rounds=2,
                        shocks=[Shock.parse("regulate:rules.assign_work=claim@1")]).run(seed=0)
    rules = [c.rules for c in members["agent_1"].comm]
    assert rules[0].assign_work == "leader" and rules[1].assign_work == "claim"
    assert rules[1].report_when == rules[0].report_when  # the other rules are kept
    (event,) = [e for e in result.summary.to_dict()["events"] if e["type"] == "shock"]
    assert event["before"]["assign_work"] == "leader"
    assert event["after"]["assign_work"] == "claim"
    with pytest.raises(UserError, match=re.escape("regulate shock rules.assign_work='boss'")):
        TeamRunner(env, load_organization("leader"), members,
                   shocks=[Shock.parse("regulate:rules.assign_work=boss@1")])


def test_regulation_change_from_a_library_organization_changes_the_channels():
    from tests.organizations.protocols.test_protocol_fidelity import Tracer

    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=4)
    trace: list = []
    members = {f"agent_{i}": Tracer(f"agent_{i}", trace) for i in range(4)}
    org = load_organization("chain").updated(channels="all")
    TeamRunner(env, org, members, max_rounds=2,
               shocks=[Shock.parse("regulate:channels=chain@1")]).run(seed=0)
    reach = [c.can_message for c in members["agent_0"].comm]
    assert reach[0] == ("agent_1", "agent_2", "agent_3") and reach[1] == ("agent_1",)


def test_bad_regulation_is_one_line_before_the_episode():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=2)
    members = {f"agent_{i}": PlannerMember(f"agent_{i}") for i in range(2)}
    with pytest.raises(UserError, match=re.escape(
            "regulate shock protocol='bogus': organization 'leader': field 'protocol': "
            "unknown protocol 'bogus'")):
        TeamRunner(env, load_organization("leader"), members,
                   shocks=[Shock.parse("regulate:protocol=bogus@2")])


# ---------------------------------------------------------------- priority shift
def test_priority_shift_changes_the_goal_the_env_checks_and_the_summary_records_it():
    result = run_episode(organization="leader", layout="apartment", backend="planner",
                         agents=3, seed=1, shocks=["priority:put_fridge@4"], log_path=None)
    s = result.summary.to_dict()
    assert s["task"] == "prepare_afternoon_tea" and s["final_task"] == "put_fridge"
    assert s["goal"] == ["ON(wine, coffee_table): 2", "ON(cupcake, coffee_table): 1",
                         "ON(pudding, coffee_table): 1"]
    assert s["final_goal"] == ["INSIDE(wine, fridge): 2", "INSIDE(cupcake, fridge): 1",
                               "INSIDE(pudding, fridge): 1"]
    (shock,) = s["shocks"]
    assert shock["goal_before"] == s["goal"] and shock["goal_after"] == s["final_goal"]
    assert s["success"] and s["units_done"] == s["units_total"] == 4
    assert s["units_total"] == sum(int(g.rsplit(": ", 1)[1]) for g in s["final_goal"])


def test_priority_shift_updates_what_members_see_of_the_goal():
    from orgteams.envs.highlevel.goal_shift import shift_goal

    env = HighLevelEnv(layout="apartment", task="prepare_afternoon_tea", num_agents=2)
    env.reset(seed=1)
    shift_goal(env, "put_fridge")
    assert "fridge" in env.base.describe_goal() and "coffee_table" not in \
        env.base.describe_goal()
    obs = env.base._observer.observe(env.base.world, 0)
    assert obs["goal"].any()
    assert not env.base.world.success


def test_priority_shift_to_an_unrelated_task_is_one_line_before_any_round():
    with pytest.raises(UserError, match=re.escape(
            "priority shift to task 'setup_table': it uses none of the goal's object "
            "classes (cupcake, pudding, wine)")):
        run_episode(organization="leader", layout="apartment", backend="planner", agents=2,
                    seed=1, shocks=["priority:setup_table@2"], log_path=None)
    with pytest.raises(UserError, match=re.escape(
            "priority shock: Unknown task 'put_fridg'. Did you mean 'put_fridge'?")):
        Shock.parse("priority:put_fridg@2").validate(["agent_0"], None)


def test_regulation_value_is_taken_literally_before_a_library_organization():
    from orgteams.organizations.rounds.shocks import regulated

    leader = load_organization("leader")
    assert regulated(leader, "channels", "none").channels == "none"  # not org 'none''s
    flat = load_organization("decentralized")
    assert regulated(flat, "topology", "chain").topology == load_organization("chain").topology
    with pytest.raises(UserError, match=re.escape(
            "regulate shock topology='chain': organization 'leader': protocol 'leader_first' "
            "with leadership_rule 'fixed' needs a leader")):
        regulated(leader, "topology", "chain")


def test_regulation_cutting_channels_changes_what_planners_hear():
    base = run_episode(organization="leader", layout="apartment", backend="planner",
                       agents=3, seed=0, log_path=None)
    cut = run_episode(organization="leader", layout="apartment", backend="planner", agents=3,
                      seed=0, shocks=["regulate:channels=none@1"], log_path=None)
    delivered = [r for r in records_of(cut) if r.get("phase") == "communicate"
                 and r.get("round", 0) >= 1 and r.get("delivered")]
    assert delivered == []
    assert cut.summary.message_tokens_delivered < base.summary.message_tokens_delivered
