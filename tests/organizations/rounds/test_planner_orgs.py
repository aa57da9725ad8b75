"""Organizations change what planner teams do, measured over seeds (not hard-coded)."""

from __future__ import annotations

import statistics

import pytest
from doubles import records_of

from orgteams.organizations import load_organization
from orgteams.run import build_team, run_episode


def _mean(org: str, key: str, seeds: int, layout: str = "studio") -> float:
    return statistics.mean(
        run_episode(task="prepare_afternoon_tea", layout=layout, organization=org, agents=3,
                    backend="planner", seed=s, log_path=None).summary.value(key)
        for s in range(seeds))


@pytest.mark.slow
def test_leader_reduces_duplicated_work_against_none_over_20_seeds():
    none, leader = (_mean(o, "duplicate_decisions", 20) for o in ("none", "leader"))
    print(f"mean duplicated decisions over 20 seeds: none {none:.2f}, leader {leader:.2f}")
    assert leader < none


def test_planner_team_roles_follow_the_organization():
    team = build_team("planner", 3, load_organization("leader"))
    assert [m.planner.role for m in team.values()] == ["leader", "member", "member"]
    with pytest.raises(ValueError, match="got 2 member specs for 3 agents"):
        build_team("planner,planner", 3, load_organization("none"))
    with pytest.raises(ValueError, match=r"Unknown member kind 'planer'. Did you mean 'planner'"):
        build_team("planer", 3, load_organization("none"))


def test_every_organization_runs_a_planner_team_to_success():
    for org in ("none", "leader", "elected_leader", "chain", "pyramid", "dynamic",
                "coordinator", "broadcast", "shared", "sequential", "batched_sequential",
                "claim_shared", "dual_leader", "decentralized", "leader_with_correction"):
        s = run_episode(task="put_dishwasher_easy", layout="studio", organization=org, agents=3,
                        backend="planner", seed=3, log_path=None).summary.to_dict()
        assert s["success"], org
        assert s["ticks"] <= s["step_limit"]


def test_a_team_can_mix_planner_llm_and_random_members():
    result = run_episode(task="put_dishwasher_easy", layout="studio", organization="leader",
                         agents=3, backend="planner,scripted,random", seed=0, max_rounds=3,
                         log_path=None)
    s = result.summary.to_dict()
    assert s["members"] == {"agent_0": "planner", "agent_1": "scripted", "agent_2": "random"}
    models = {r["agent"]: r["model"] for r in records_of(result) if r.get("phase") == "act"}
    assert models.get("agent_1") == "scripted" and models.get("agent_0") == "planner"
    assert s["fallback_count"] == 0  # the scripted double answers every schema validly


def test_a_rerun_with_the_response_cache_is_free_and_exact(tmp_path):
    cache = tmp_path / "cache.sqlite"
    kw = dict(task="put_dishwasher_easy", layout="studio", organization="leader", agents=2,
              backend="scripted", seed=0, max_rounds=2, log_path=None, cache=cache)
    first = run_episode(**kw).summary.to_dict()
    rerun = run_episode(**kw)
    second = rerun.summary.to_dict()
    assert first["cache_hits"] == 0 and second["cache_hits"] > 0
    # every call of the rerun came from the cache: its tokens are marked as cached (free)
    calls = [r for r in records_of(rerun) if r.get("usage", {}).get("prompt_tokens")]
    assert calls and all(r["cached_usage"] == r["usage"] for r in calls)
    for key in ("ticks", "rounds", "message_tokens_delivered", "llm_prompt_tokens"):
        assert first[key] == second[key], key


def test_backends_are_owned_by_the_episode_or_the_pool_given(monkeypatch):
    import re

    from orgteams.agents.backends import ScriptedBackend
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.run import build_member

    closed: list = []
    monkeypatch.setattr(ScriptedBackend, "close", lambda self: closed.append(self))
    kw = {"task": "prepare_afternoon_tea", "layout": "studio", "agents": 2,
          "backend": "scripted", "max_rounds": 1, "log_path": None}
    run_episode(**kw)
    assert len(closed) == 1  # the episode made one backend for both members and closed it
    with BackendPool() as pool:
        run_episode(**kw, pool=pool)
        run_episode(**kw, pool=pool)
        assert len(closed) == 1 and len(pool) == 1  # shared, still open
    assert len(closed) == 2 and len(pool) == 0
    with pytest.raises(ValueError, match=re.escape(
            "member spec 'scripted' needs a BackendPool (pool=...)")):
        build_member("agent_0", "scripted")
