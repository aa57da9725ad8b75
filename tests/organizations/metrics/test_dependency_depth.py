"""Hierarchy depth as the self-organizing paper defines it: the longest chain of
dependencies (B acted on A's order, or under a self-organizing protocol deferred to
A's claim or choice), read from the running episode's log (issue #27)."""

from __future__ import annotations

import pytest
from doubles import log_dicts

from orgteams.agents.records import decision_line
from orgteams.organizations import dependency_graph, hierarchy_depth
from orgteams.organizations.metrics.episode_metrics import self_organizing_rounds
from orgteams.organizations.rounds.episode_log import EventLine, read_log
from orgteams.run import run_episode


def play(org: str, agents: int, seed: int, tmp_path, **kw):
    log = tmp_path / f"{org}_{agents}_{seed}.jsonl"
    result = run_episode(layout="house", organization=org, agents=agents, backend="planner",
                         seed=seed, log_path=str(log), **kw)
    return result.summary, list(read_log(log))


def depends(lines) -> list[tuple[str, str, str]]:
    """``(from, to, how)`` of every dependency an act line of the log names."""
    return [(who, d["agent"], how) for d in log_dicts(lines) if d.get("phase") == "act"
            for who, how in ((d.get("parsed") or {}).get("depends_on") or {}).items()]


def test_nobody_depends_on_anybody_without_orders_or_claims(tmp_path):
    summary, lines = play("none", 5, 0, tmp_path)  # planners under none neither order nor claim
    assert summary.success and depends(lines) == []
    assert summary.hierarchy_depth == 0
    assert summary.message_reach_depth == 1  # their reports still reach everyone


def test_a_star_leader_is_depth_one(tmp_path):
    summary, lines = play("leader", 5, 0, tmp_path)
    orders = [(a, b) for a, b, how in depends(lines) if how == "order"]
    assert orders and {a for a, _ in orders} == {"agent_0"}  # members acted on its orders
    assert len({b for _, b in orders}) >= 3
    # members claim too, but under leader_first deferring to a claim is no dependency
    assert summary.protocol == "leader_first"
    assert summary.hierarchy_depth == 1


def test_a_working_nine_pyramid_is_depth_two():
    """The pyramid's orders, as its log writes them: agent_0 orders vice leaders 1 and 2,
    who order their members (3-5 and 6-8), each order carried out."""
    def act(agent, order_from, round_=0):
        return decision_line({"round": round_, "tick": 3, "agent": agent, "phase": "act",
                              "kind": "action", "action": "explore:kitchen",
                              "parsed": {"action": "explore:kitchen",
                                         "depends_on": {order_from: "order"}}})
    team = [f"agent_{i}" for i in range(9)]
    lines = [act("agent_1", "agent_0"), act("agent_2", "agent_0")] + [
        act(f"agent_{m}", "agent_1" if m < 6 else "agent_2", round_=2) for m in range(3, 9)]
    g = dependency_graph(lines, team)
    assert sorted(g.edges) == sorted([("agent_0", "agent_1"), ("agent_0", "agent_2")] + [
        ("agent_1" if m < 6 else "agent_2", f"agent_{m}") for m in range(3, 9)])
    assert hierarchy_depth(g) == 2
    # the chain goes through rounds: an order carried out later still counts
    assert hierarchy_depth(dependency_graph(lines[:2] + lines[-1:], team)) == 2


def test_sequential_planners_defer_to_earlier_agents_choices(tmp_path):
    summary, lines = play("sequential", 5, 1, tmp_path)
    claims = [(a, b) for a, b, how in depends(lines) if how == "claim"]
    assert claims and not [x for x in depends(lines) if x[2] == "order"]
    assert summary.hierarchy_depth == hierarchy_depth(dependency_graph(
        [x for x in lines if not isinstance(x, EventLine)],
        self_organizing=self_organizing_rounds("sequential")))
    assert summary.hierarchy_depth >= 1
    # the same deferences under a structured protocol are no hierarchy
    assert hierarchy_depth(dependency_graph(lines)) == 0


def test_deference_counts_only_while_a_self_organizing_protocol_is_in_force():
    events = [EventLine(round=3, type="shock", data={"kind": "regulate", "field": "protocol",
                                                     "before": "leader_first",
                                                     "after": "sequential"}),
              EventLine(round=6, type="org_switch", data={"to_org": "coordinator",
                                                          "to_protocol": "coordinator"})]
    so = self_organizing_rounds("leader_first", events)
    assert [so(r) for r in range(9)] == [False] * 3 + [True] * 4 + [False] * 2

    def act(agent, who, round_):
        return decision_line({"round": round_, "agent": agent, "phase": "act",
                              "kind": "action", "parsed": {"depends_on": {who: "claim"}}})
    lines = [act("agent_1", "agent_0", 1), act("agent_2", "agent_1", 4),
             act("agent_3", "agent_2", 7)]
    assert sorted(dependency_graph(lines, self_organizing=so).edges) == [
        ("agent_1", "agent_2")]


@pytest.mark.parametrize("org", ["shared", "batched_sequential"])
def test_self_organizing_depth_matches_its_log(org, tmp_path):
    summary, lines = play(org, 5, 2, tmp_path)
    g = dependency_graph(lines, self_organizing=self_organizing_rounds(org))
    assert summary.hierarchy_depth == hierarchy_depth(g)
    assert all(how == "claim" for _, _, how in depends(lines))


def _ordered_option(prompt: str) -> str | None:
    """The letter of the option an order in the act prompt names (``Alice to you: "Bob:
    check fridge"`` and ``F. check fridge``), or None."""
    import re

    orders = re.findall(r'to you: "[^:"]+: ([^"]+)"', prompt)
    if not orders:
        return None
    return next((letter for letter, label in re.findall(r"^([A-Z])\. (.+)$", prompt, re.M)
                 if label == orders[-1]), None)


def _deferring_llm_team(defer: dict[str, str], extra: dict[str, dict] | None = None,
                        obey: bool = False):
    """Three LLM members on the scripted double, each act reply deferring to
    ``defer[agent]`` (a display name) when its schema offers that name, plus ``extra``
    fields per agent (model text the member must not trust); with ``obey`` carrying out
    the latest order its prompt shows. Their messages are the minimal valid ones (a
    leader assigns each member its first option)."""
    from orgteams.agents import LLMAgent, ScriptedBackend
    from orgteams.agents.backends.scripted import minimal_instance

    def member(agent):
        def reply(messages, schema):
            props = schema["properties"]
            if "action" not in props:
                return minimal_instance(schema)
            ordered = _ordered_option(messages[-1]["content"]) if obey else None
            out = {"action": ordered or props["action"]["enum"][0], "thoughts": ""}
            offered = (props.get("defer_to") or {}).get("enum", [])
            if defer.get(agent) in offered:
                out["defer_to"] = defer[agent]
            return {**out, **(extra or {}).get(agent, {})}
        return LLMAgent(agent, ScriptedBackend(reply), seed=0, prompts="compact")

    return {f"agent_{i}": member(f"agent_{i}") for i in range(3)}


def test_an_llm_teams_deferrals_give_its_depth(tmp_path):
    """Under ``sequential`` each member acts seeing the earlier ones' choices: Bob defers
    to Alice, Charlie to Bob, a chain of 2. Alice, acting first, has heard nobody, yet her
    replies name a deferral and write their own ``depends_on``: neither is trusted."""
    from orgteams.agents.team import Team
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
    from orgteams.organizations import load_organization
    from orgteams.organizations.rounds.runner import TeamRunner

    names = Team.of_size(3)
    alice, bob = names.name("agent_0"), names.name("agent_1")
    hostile = {"defer_to": "Charlie-the-boss", "depends_on": {"agent_2": "order"}}
    members = _deferring_llm_team({"agent_1": alice, "agent_2": bob}, {"agent_0": hostile})
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    log = tmp_path / "llm_sequential.jsonl"
    result = TeamRunner(env, load_organization("sequential"), members, max_rounds=3,
                        log_path=str(log)).run(seed=0)
    lines = list(read_log(log))
    acts = [d for d in log_dicts(lines) if d.get("phase") == "act"]
    assert {d["agent"] for d in acts if d["round"] == 0} == {"agent_0", "agent_1", "agent_2"}
    assert sorted(set(depends(lines))) == [("agent_0", "agent_1", "claim"),
                                           ("agent_1", "agent_2", "claim")]
    alices = [d for d in acts if d["agent"] == "agent_0"]
    assert alices and all(  # her reply is kept as data; the notes say what was ignored
        d["parsed"]["defer_to"] == "Charlie-the-boss" and "depends_on" not in d["parsed"]
        and d["notes"] == ["ignored field 'defer_to': not offered (no teammate heard)",
                           "ignored field 'depends_on': the member writes it, not the model"]
        for d in alices)
    assert result.summary.to_dict()["hierarchy_depth"] == 2 == hierarchy_depth(
        dependency_graph([x for x in lines if not isinstance(x, EventLine)],
                         self_organizing=self_organizing_rounds("sequential")))
    # the same deferrals under a structured protocol are recorded, but no hierarchy
    members = _deferring_llm_team({"agent_1": alice, "agent_2": bob})
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    led = TeamRunner(env, load_organization("leader"), members, max_rounds=3,
                     log_path=None).run(seed=0)
    assert any(how == "claim" for _, _, how in depends(led.records))
    assert led.summary.to_dict()["hierarchy_depth"] == 0


def test_an_llm_team_that_carries_out_orders_is_depth_one():
    """An LLM leader assigns each member an action; members that carry it out depend on
    it (checked against the order received, not taken from the reply): a star, depth 1."""
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
    from orgteams.organizations import load_organization
    from orgteams.organizations.rounds.runner import TeamRunner

    members = _deferring_llm_team({}, obey=True)
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    result = TeamRunner(env, load_organization("leader"), members, max_rounds=2,
                        log_path=None).run(seed=0)
    records = log_dicts(result.records)
    assigned = {(r["round"], r["delivered"][0]) for r in records
                if r.get("message_kind") == "assign"}
    assert {to for _, to in assigned} == {"agent_1", "agent_2"}
    assert sorted(set(depends(result.records))) == [("agent_0", "agent_1", "order"),
                                                    ("agent_0", "agent_2", "order")]
    # every order dependency is an act the round its order came
    assert {(d["round"], d["agent"]) for d in records if d.get("phase") == "act"
            and (d.get("parsed") or {}).get("depends_on")} <= assigned
    assert result.summary.to_dict()["hierarchy_depth"] == 1
