"""Leaders lead as their organization says, read from the running episode's log: every
leader tier orders its own reports only (a pyramid's top leader its vice leaders, each
vice leader its members), planner and LLM leaders alike, and two leaders each lead
their own half and coordinate by messages, never by orders (docs/leadership.md)."""

from __future__ import annotations

from collections import Counter

from doubles import fill_reply, records_of

from orgteams.agents import LLMAgent, ScriptedBackend
from orgteams.agents.planner.planner_member import PlannerMember
from orgteams.agents.team import Team
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.run import run_episode


def orders(result) -> Counter:
    """(who ordered, who was ordered) -> orders, from the episode log's lines."""
    return Counter((r["agent"], to) for r in records_of(result)
                   if r.get("phase") == "communicate" and r.get("message_kind") == "assign"
                   for to in r["delivered"])


def told(result, kind: str) -> Counter:
    """(sender, receiver) -> messages of ``kind`` delivered, from the log."""
    return Counter((r["agent"], to) for r in records_of(result)
                   if r.get("phase") == "communicate" and r.get("message_kind") == kind
                   for to in r["delivered"])


def play(org: str, agents: int, seed: int = 0):
    return run_episode(organization=org, layout="house", backend="planner", agents=agents,
                       seed=seed, log_path=None)


def test_a_planner_pyramid_orders_tier_by_tier():
    result = play("pyramid", 9)
    assert result.summary.success
    pyramid = load_organization("pyramid").resolve(Team.of_size(9))
    assert pyramid.members_of("agent_0") == ["agent_1", "agent_2"]
    got = orders(result)
    # every order goes from a boss to one of its own reports: none skips or crosses a tier
    assert all(pyramid.reports_to[to] == boss for boss, to in got), got
    # and each vice leader orders its members (in the 5-order run of the issue, none did)
    for vice in ("agent_1", "agent_2"):
        members = pyramid.members_of(vice)
        assert {to for boss, to in got if boss == vice} == set(members), (vice, got)
    assert {to for boss, to in got if boss == "agent_0"} == {"agent_1", "agent_2"}
    # members carry out their vice leader's orders: an act the round it was ordered
    acts = {(r["round"], r["agent"]): r["action"] for r in records_of(result)
            if r.get("phase") == "act"}
    followed = sum(
        acts.get((r["round"], r["delivered"][0]))
        == r["message"].split(": ", 1)[1].split(" -> ")[0].replace(" ", ":", 1)
        for r in records_of(result)
        if r.get("message_kind") == "assign" and r["agent"] in ("agent_1", "agent_2"))
    assert followed > 0
    # so the dependency graph of the orders acted on is two deep, as the working
    # 9-pyramid is (docs/metrics.md)
    assert result.summary.to_dict()["hierarchy_depth"] == 2


def test_dual_leaders_lead_their_halves_and_coordinate_by_messages():
    result = play("dual_leader", 6)
    assert result.summary.success
    got = orders(result)
    halves = {"agent_0": {"agent_2", "agent_3"}, "agent_1": {"agent_4", "agent_5"}}
    assert {boss for boss, _ in got} == {"agent_0", "agent_1"}
    for leader, half in halves.items():
        assert {to for boss, to in got if boss == leader} == half, got
    # never an order between the leaders; they tell each other what they gave whom
    # (claims for their reports) and what their halves found and did
    assert not got[("agent_0", "agent_1")] and not got[("agent_1", "agent_0")]
    for kind in ("claim", "found", "done"):
        sent = told(result, kind)
        assert sent[("agent_0", "agent_1")] > 0 and sent[("agent_1", "agent_0")] > 0, kind


def _fill_last(seen: list[dict]):
    def reply(messages, schema):
        seen.append(schema)
        assign = schema["properties"].get("assignments", {"properties": {}})
        return fill_reply(schema, action=-1,
                          messages=[{"receivers": ["everyone"], "message": "Follow me."}],
                          assignments={n: p["enum"][-1]
                                       for n, p in assign["properties"].items()})
    return reply


def test_an_llm_vice_leader_is_offered_only_its_members():
    env = HighLevelEnv(layout="house", task="prepare_afternoon_tea", num_agents=9)
    schemas: dict[str, list[dict]] = {"agent_0": [], "agent_1": []}
    backends = {a: ScriptedBackend(_fill_last(seen)) for a, seen in schemas.items()}
    members = {a: LLMAgent(a, b, seed=0, prompts="compact") for a, b in backends.items()}
    members.update({f"agent_{i}": PlannerMember(f"agent_{i}") for i in range(2, 9)})
    result = TeamRunner(env, load_organization("pyramid"), members, max_rounds=1).run(seed=0)
    names = Team.of_size(9)
    offered = {a: set(seen[0]["properties"]["assignments"]["properties"])
               for a, seen in schemas.items()}
    # the top leader is offered its vice leaders, the vice leader its own three members
    assert offered == {"agent_0": {names.name("agent_1"), names.name("agent_2")},
                       "agent_1": {names.name(f"agent_{i}") for i in (3, 4, 5)}}
    # and the log: one order to each report, from the LLMs and the planner vice leader
    assert orders(result) == Counter({("agent_0", "agent_1"): 1, ("agent_0", "agent_2"): 1,
                                      ("agent_1", "agent_3"): 1, ("agent_1", "agent_4"): 1,
                                      ("agent_1", "agent_5"): 1, ("agent_2", "agent_6"): 1,
                                      ("agent_2", "agent_7"): 1, ("agent_2", "agent_8"): 1})
