"""What a running episode used, compared with what ``Organization.resolve`` promised.

For every named organization at 3, 5 and 9 agents, a real planner episode is played and
the resolution in force during round 0 and round 5 (tiers, roles, leaders, channels),
the planners' leader flags and every message's delivery are checked against
``resolve()`` (with the top tier the episode's leadership rule put in charge).
"""

from __future__ import annotations

import pytest
from doubles import log_dicts

from orgteams.agents.team import Team
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import list_organizations, load_organization
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.run import build_team

NAMED = [n for n in list_organizations() if n != "coordinator"] + ["coordinator"]


def _seen(org_name: str, n: int) -> dict[int, dict]:
    org = load_organization(org_name)
    env = HighLevelEnv(layout="house", task="prepare_afternoon_tea", num_agents=n)
    members = build_team("planner", n, org, seed=0, env=env)
    seen: dict[int, dict] = {}
    runner: TeamRunner

    def on_round(round_: int, records: list) -> None:
        if round_ in (0, 5):
            r = runner.state.resolved
            seen[round_] = {
                "tiers": r.tiers, "roles": dict(r.roles), "leaders": r.leaders,
                "top": r.top_leaders,
                "channels": {a: r.receivers_of(a) for a in r.team},
                "planner_leaders": sorted(a for a, m in members.items()
                                          if m.planner.role == "leader"),
                "records": log_dicts(records),
            }

    runner = TeamRunner(env, org, members, max_rounds=6, on_round=on_round)
    try:
        runner.run(seed=0)
    finally:
        env.close()
    return seen


@pytest.mark.parametrize("n", [3, 5, 9])
@pytest.mark.parametrize("org_name", NAMED)
def test_the_running_episode_uses_what_resolve_promised(org_name, n):
    org = load_organization(org_name)
    if n < org.min_agents:
        pytest.skip(f"{org_name} needs {org.min_agents} agents")
    seen = _seen(org_name, n)
    assert sorted(seen) == [0, 5], f"{org_name} at {n}: rounds played {sorted(seen)}"
    team = Team.of([f"agent_{i}" for i in range(n)])
    promised0 = org.resolve(team)
    for round_, got in seen.items():
        # an elected or rotated top tier is the only thing the episode may change
        promised = org.resolve(team, leaders=list(got["top"])) if got["top"] else promised0
        if org.leadership_rule == "fixed":
            assert got["top"] == promised0.top_leaders, (org_name, n, round_)
        assert got["tiers"] == promised.tiers, (org_name, n, round_)
        assert got["roles"] == promised.roles, (org_name, n, round_)
        assert got["leaders"] == promised.leaders, (org_name, n, round_)
        channels = {a: promised.receivers_of(a) for a in promised.team}
        assert got["channels"] == channels, (org_name, n, round_)
        # planners hold a leader's seat exactly when they are in a leader tier (any but
        # the last: a pyramid's vice leaders lead their members)
        assert got["planner_leaders"] == sorted(got["leaders"]), (org_name, n, round_)
        for r in got["records"]:
            if r.get("phase") == "communicate" and r.get("message"):
                assert r["delivered"], f"{org_name} at {n}: a message delivered to nobody: {r}"
                assert set(r["delivered"]) <= set(channels[r["agent"]]), (org_name, n, r)


def test_a_nine_agent_pyramid_keeps_its_vice_leaders_in_round_0_and_5():
    seen = _seen("pyramid", 9)
    for got in seen.values():
        assert got["tiers"] == (("leader", ("agent_0",)),
                                ("vice_leader", ("agent_1", "agent_2")),
                                ("member", tuple(f"agent_{i}" for i in range(3, 9))))
        assert got["channels"]["agent_0"] == ("agent_1", "agent_2")
        assert got["channels"]["agent_1"] == ("agent_0", "agent_3", "agent_4", "agent_5")


def test_a_team_too_small_for_its_organization_is_warned_in_one_line(capsys, tmp_path):
    import re

    from orgteams.cli.main import main

    assert main(["run", "--org", "pyramid", "--agents", "3", "--layout", "studio",
                 "--backend", "planner", "--max-rounds", "2", "--quiet", "--json",
                 "--log", str(tmp_path / "ep.jsonl")]) == 0
    err = capsys.readouterr().err
    line = ("warning: organization 'pyramid' is meant for at least 9 agents; with 3 it runs "
            "degenerate")
    assert line in err.splitlines()
    assert load_organization("pyramid").size_warning(9) is None
    assert load_organization("leader").size_warning(2) is None  # no recommendation: silent
    with pytest.raises(ValueError, match=re.escape(
            "organization 'dual_leader' needs at least 2 agents, got 1")):
        load_organization("dual_leader").resolve(["agent_0"])


def test_the_pyramid_warning_agrees_with_its_shape():
    """Issue 25: README said 9+ agents, the warning 5. The truth: below 9 agents a pyramid
    has one vice leader (the top leads it alone); from 9 on, two or more."""
    pyramid = load_organization("pyramid")
    for n in range(3, 17):
        vice = dict(pyramid.resolve(Team.of_size(n)).tiers)["vice_leader"]
        assert (len(vice) >= 2) == (pyramid.size_warning(n) is None), n
    assert pyramid.size_warning(8) == ("organization 'pyramid' is meant for at least 9 "
                                       "agents; with 8 it runs degenerate")
