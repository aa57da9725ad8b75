"""The Critic's episode summary is bounded, whatever the episode length."""

from __future__ import annotations

import pytest

from orgteams.criticize_reflect.summary import MIN_BUDGET_CHARS, summarize_episode, summary_chars
from orgteams.organizations.rounds.episode_log import line_dict, parse_line
from orgteams.organizations.rounds.episode_summary import EpisodeSummary


def long_episode(rounds: int = 400, agents: int = 5) -> tuple[list, EpisodeSummary]:
    """An episode's lines and summary, read from the JSON objects its log would hold."""
    records = []
    for r in range(rounds):
        for i in range(agents):
            a = f"agent_{i}"
            records.append({"round": r, "tick": r, "agent": a, "phase": "communicate",
                            "role": "leader" if i == 0 else "member", "message":
                            f"round {r}: I saw apple_{r} in the kitchen " + "and more " * 40,
                            "message_tokens": 50, "delivered": ["agent_0"],
                            "usage": {"prompt_tokens": 100, "completion_tokens": 10}})
            records.append({"round": r, "tick": r, "agent": a, "phase": "act",
                            "action": "explore:kitchen", "status": "failed" if r % 3 else "done",
                            "failure_reason": "door closed", "fallback": "invalid reply"
                            if r % 7 == 0 else None})
    summary = {"success": False, "ticks": rounds * 3, "rounds": rounds,
               "comm_tokens_per_step": 12.345678, "num_agents": agents,
               "events": [{"record": "event", "round": r, "type": "election", "winner": "agent_1"}
                          for r in range(0, rounds, 5)]}
    return [parse_line(r) for r in records], EpisodeSummary.from_dict(summary)


@pytest.mark.parametrize("budget", [MIN_BUDGET_CHARS, 800, 2000, 6000, 20000])
def test_summary_respects_its_budget(budget):
    records, summary = long_episode()
    out = summarize_episode(records, summary, budget_chars=budget)
    assert summary_chars(out) <= budget
    assert out["metrics"]["ticks"] == 1200
    if budget < 20000:
        assert out["truncated"]  # what was dropped is said


def test_summary_counts_per_agent_and_cuts_examples():
    records, summary = long_episode(rounds=10, agents=2)
    out = summarize_episode(records, summary, budget_chars=20000, message_chars=50)
    a0 = out["agents"]["agent_0"]
    assert a0["messages"] == 10 and a0["message_tokens"] == 500 and a0["actions"] == 10
    assert a0["failed_actions"] == 6 and a0["fallbacks"] == 2 and a0["llm_tokens"] == 1100
    assert a0["roles"] == ["leader"]
    assert out["metrics"]["comm_tokens_per_step"] == 12.346
    assert 0 < len(out["examples"]) <= 6
    assert all(len(e["text"]) <= 50 for e in out["examples"])
    assert {e["type"] for e in out["events"]} >= {"election", "failed_action", "fallback"}
    assert all("record" not in e for e in out["events"])


def test_the_raw_log_would_not_fit():
    records, summary = long_episode()
    assert summary_chars({"records": [line_dict(r) for r in records]}) > 100 * summary_chars(
        summarize_episode(records, summary))


def test_budget_below_the_minimum_is_an_error():
    with pytest.raises(ValueError, match="budget_chars"):
        summarize_episode([], None, budget_chars=10)
