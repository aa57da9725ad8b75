"""Every shipped organization loads and resolves for small and large teams."""

import re

import pytest

from orgteams.organizations import (
    SELF_CHOSEN,
    display_names,
    list_organizations,
    load_organization,
    organization_path,
)

SIZES = (1, 3, 5, 9, 64)
EXPECTED = {
    "none", "decentralized", "leader", "leader_with_correction", "elected_leader", "chain",
    "dual_leader", "pyramid", "dynamic", "coordinator", "broadcast", "shared", "sequential",
    "batched_sequential", "claim_shared",
}  # fmt: skip


def team(n):
    return [f"agent_{i}" for i in range(n)]


def test_library_has_every_named_organization():
    assert set(list_organizations()) == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("n", SIZES)
def test_loads_and_resolves(name, n):
    org = load_organization(name)
    assert org.name == name
    if n < org.min_agents:
        msg = f"organization {name!r} needs at least {org.min_agents} agents, got {n}"
        with pytest.raises(ValueError, match=re.escape(msg)):
            org.resolve(team(n))
        return
    r = org.resolve(team(n))
    assert set(r.roles) == set(team(n))
    assert sorted(r.graph.nodes) == sorted(team(n))
    for agent in r.team:
        text = r.instruction_for(agent)
        assert (text == "") == (name == "none")


def test_dual_leader_needs_two_agents_and_splits_members():
    r = load_organization("dual_leader").resolve(team(6))
    assert r.leaders == ("agent_0", "agent_1")
    assert r.members_of("agent_0") == ["agent_2", "agent_3"]
    assert r.members_of("agent_1") == ["agent_4", "agent_5"]


@pytest.mark.parametrize(("n", "vice", "members"), [(1, 0, 0), (3, 1, 1), (9, 2, 6), (64, 8, 55)])
def test_pyramid_scales(n, vice, members):
    r = load_organization("pyramid").resolve(team(n))
    sizes = {role: len(agents) for role, agents in r.tiers}
    assert sizes == {"leader": 1, "vice_leader": vice, "member": members}


def test_pyramid_nine_agents_matches_the_paper():
    r = load_organization("pyramid").resolve(team(9))
    assert r.leaders == ("agent_0", "agent_1", "agent_2")
    assert r.members_of("agent_0") == ["agent_1", "agent_2"]
    assert r.members_of("agent_1") == ["agent_3", "agent_4", "agent_5"]
    assert r.reports_to["agent_8"] == "agent_2"
    assert (r.role_of("agent_1"), r.role_of("agent_4")) == ("vice_leader", "member")
    assert sorted(r.graph.edges) == sorted(
        [("agent_0", "agent_1"), ("agent_0", "agent_2")]
        + [("agent_1", f"agent_{i}") for i in (3, 4, 5)]
        + [("agent_2", f"agent_{i}") for i in (6, 7, 8)]
    )
    assert r.can_message("agent_3", "agent_1") and not r.can_message("agent_3", "agent_0")


def test_leader_instruction_in_paper_style():
    r = load_organization("leader").resolve(team(3))
    assert r.instruction_for("agent_1") == (
        "You are Bob. Alice is the leader of the team; the others follow Alice's instructions\n"
        "and report to Alice.\n"
        "Follow Alice's instructions and report your progress to Alice.\n\n"
        "Rules of the team:\n"
        "- Work is assigned by the leader: do the subgoal the leader gives you; leaders "
        "assign each teammate a subgoal.\n"
        "- Report only new information (goal objects found, subgoals done) to your leader.\n"
        "- Follow the leader's orders without arguing."
    )


def test_none_tells_its_agents_nothing():
    """The paper's baseline has no instruction: its rules steer planners, not prompts."""
    r = load_organization("none").resolve(team(3))
    assert r.organization.rules.assign_work == "self"
    assert r.instruction_for("agent_0") == ""


def test_self_organizing_roles_are_self_chosen():
    r = load_organization("sequential").resolve(team(3))
    assert r.organization.self_chosen_roles is True
    assert r.role_of("agent_2") == SELF_CHOSEN
    assert r.instruction_for("agent_0").endswith(
        "You may abstain this round if you judge that you cannot add value: say so, and "
        "you will wait in place instead of acting."
    )


def test_unknown_organization_name():
    msg = "Unknown organization 'pyramd'. Did you mean 'pyramid'? Known: batched_sequential,"
    with pytest.raises(ValueError, match=re.escape(msg)):
        load_organization("pyramd")
    with pytest.raises(ValueError, match=re.escape("Unknown organization 'nothing_like'.")):
        organization_path("nothing_like")


def test_load_by_path(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(load_organization("chain").model_copy(update={"name": "mine"}).to_yaml())
    assert load_organization(path).name == "mine"
    assert load_organization(str(path)).topology.kind == "chain"


def test_display_names():
    assert display_names(3) == ["Alice", "Bob", "Charlie"]
    assert display_names(14)[9:] == ["Judy", "Kevin", "Laura", "Agent12", "Agent13"]
    with pytest.raises(ValueError, match=re.escape("display_names(n) needs n >= 0, got -1")):
        display_names(-1)
