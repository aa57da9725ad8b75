"""Team: agent ids and display names, derived once."""

import re

import pytest

from orgteams.envs.team import Team, agent_ids, display_names


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
