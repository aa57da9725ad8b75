"""An LLM leader assigns planner members valid subgoals through its reply schema, and
the planners follow them."""

from __future__ import annotations

import re

import pytest
from doubles import fill_reply, records_of

from orgteams.agents import LLMAgent, ScriptedBackend
from orgteams.agents.llm.replies import parse_communicate
from orgteams.agents.llm.schemas import ReplyError, communicate_spec
from orgteams.agents.planner.planner_member import PlannerMember
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.runner import TeamRunner

TEAM = {"agent_0": "Alice", "agent_1": "Bob", "agent_2": "Charlie"}


def last_options(messages, schema):
    """Fill every enum with its last value (not the first: shows the choice is used)."""
    assign = schema["properties"].get("assignments", {"properties": {}})
    return fill_reply(schema, action=-1,
                      messages=[{"receivers": ["everyone"], "message": "Follow my assignments."}],
                      assignments={n: p["enum"][-1] for n, p in assign["properties"].items()})


def test_llm_leader_assigns_and_planners_follow():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    backend = ScriptedBackend(last_options)
    members = {"agent_0": LLMAgent("agent_0", backend, seed=0, prompts="compact"),
               "agent_1": PlannerMember("agent_1"), "agent_2": PlannerMember("agent_2")}
    result = TeamRunner(env, load_organization("leader"), members, max_rounds=1).run(seed=0)
    leader_call = backend.calls[0]
    assert 'As the leader, assign Bob and Charlie one action each.' in leader_call[1]["content"]
    sent = [r for r in records_of(result) if r.get("agent") == "agent_0"
            and r.get("message_kind") == "assign"]
    assert len(sent) == 2
    acted = {r["agent"]: r["action"] for r in records_of(result) if r.get("phase") == "act"}
    for rec in sent:  # each member did exactly what it was assigned
        member = rec["delivered"][0]
        name, _, label = rec["message"].partition(": ")
        assert name == TEAM[member]
        assert acted[member] == label.replace(" ", ":", 1), (rec, acted)
    assert acted["agent_1"] != acted["agent_2"] or acted["agent_1"].startswith("explore")


def test_assignment_schema_offers_only_each_teammates_actions():
    spec = communicate_spec("message", ("Bob", "Charlie"),
                            assignees=(("Bob", ("explore kitchen", "grab apple_1")),
                                       ("Charlie", ("check fridge",))))
    schema = spec.schema["properties"]["assignments"]
    assert schema["properties"]["Bob"]["enum"] == ["explore kitchen", "grab apple_1"]
    assert schema["required"] == ["Bob", "Charlie"]
    assert '"assignments": one action for each teammate (Bob: one of explore kitchen, ' \
           'grab apple_1; Charlie: one of check fridge)' in spec.fields
    ok = parse_communicate({"receivers": [], "message": "", "thoughts": "",
                            "assignments": {"Bob": "grab apple_1", "Charlie": "check fridge"}},
                           spec, TEAM, ["agent_1", "agent_2"])
    assert ok.assignments == {"agent_1": "grab apple_1", "agent_2": "check fridge"}
    with pytest.raises(ReplyError, match=re.escape(
            "assignment for Charlie 'grab apple_1' is not one of check fridge")):
        parse_communicate({"receivers": [], "message": "", "thoughts": "",
                           "assignments": {"Bob": "grab apple_1", "Charlie": "grab apple_1"}},
                          spec, TEAM, ["agent_1", "agent_2"])


def test_members_and_leaderless_orgs_get_no_assignments():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    backend = ScriptedBackend(last_options)
    members = {a: LLMAgent(a, backend, seed=0) for a in env.possible_agents}
    TeamRunner(env, load_organization("decentralized"), members, max_rounds=1).run(seed=0)
    assert backend.calls and not any("\"assignments\"" in m["content"] for c in backend.calls
                                     for m in c)
