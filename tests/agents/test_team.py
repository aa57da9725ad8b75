"""Team: agent ids, display names and roles, derived once."""

import re

import pytest

from orgteams.agents.team import Team, agent_ids, display_names


def test_default_names_follow_agent_index():
    team = Team.of_size(3)
    assert team.ids == ("agent_0", "agent_1", "agent_2") == tuple(agent_ids(3))
    assert team.names == ("Alice", "Bob", "Charlie") == tuple(display_names(3))
    assert Team.of(["agent_13", "x"]).names == ("Agent13", "x")
    assert team.index("agent_2") == 2 and "agent_1" in team and len(team) == 3


def test_custom_names_by_id_or_in_order():
    assert Team.of(agent_ids(2), {"agent_1": "Zed"}).names == ("Alice", "Zed")
    assert Team.of(agent_ids(2), ["You", "Zed"]).by_id == {"agent_0": "You", "agent_1": "Zed"}


def test_bad_teams_are_one_clear_line():
    with pytest.raises(ValueError, match=re.escape("team has duplicate agents: ['a', 'a']")):
        Team.of(["a", "a"])
    with pytest.raises(ValueError, match=re.escape("team of 2 agents got 1 names")):
        Team.of(agent_ids(2), ["Solo"])
    with pytest.raises(ValueError, match=re.escape("unknown agent 'agent_9'; team: agent_0")):
        Team.of_size(1).index("agent_9")


def test_roles_live_in_the_team_beside_names():
    team = Team.of_size(3, ["Ann", "Ben", "Cy"])
    assert team.roles == (None, None, None) and team.role("agent_1") is None
    led = team.with_roles({"agent_0": "leader", "agent_2": "scout"})
    assert led.roles_by_id == {"agent_0": "leader", "agent_1": None, "agent_2": "scout"}
    assert led.names == team.names and led != team
    assert Team.of(led).roles == led.roles  # a team given as ids keeps its roles
    assert Team.of(led, {"agent_1": "Bo"}).roles == led.roles
    with pytest.raises(ValueError, match=re.escape(
            "roles for agents not on the team: ['agent_9']; team: agent_0, agent_1, agent_2")):
        team.with_roles({"agent_9": "leader"})
    with pytest.raises(ValueError, match=re.escape("unknown agent 'agent_9'")):
        team.role("agent_9")
    with pytest.raises(ValueError, match=re.escape("team of 2 agents got 1 roles")):
        Team(("a", "b"), ("A", "B"), ("leader",))


def test_the_organization_gives_the_roster_its_roles_and_ignores_given_ones():
    from orgteams.organizations.spec.library import load_organization

    given = Team.of_size(3, ["Ann", "Ben", "Cy"]).with_roles({"agent_2": "boss"})
    resolved = load_organization("leader").resolve(given)
    assert resolved.roster.names == ("Ann", "Ben", "Cy")
    assert resolved.roster.roles == ("leader", "member", "member")
    assert resolved.roles == resolved.roster.roles_by_id
    assert resolved.role_of("agent_0") == resolved.roster.role("agent_0") == "leader"
