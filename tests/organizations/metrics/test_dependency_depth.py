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
