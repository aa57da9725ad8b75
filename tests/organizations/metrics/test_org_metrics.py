"""Episode metrics on hand-built decision lines (the log's JSON objects, read as typed lines)."""

import math
import re

import pytest

from orgteams.agents.records import decision_line
from orgteams.organizations import (
    EpisodeMetrics,
    aggregate,
    comm_tokens_per_step,
    communication_graph,
    episode_metrics,
    role_stability_index,
)
from orgteams.organizations.rounds.episode_log import EventLine

PRICES = {"m1": (1.0, 2.0)}  # USD per token, to keep the arithmetic readable


def price(model, prompt, completion):
    p = PRICES.get(model)
    return None if p is None else prompt * p[0] + completion * p[1]


def rec(**kw):
    base = {"round": 0, "tick": 0, "agent": "agent_0", "phase": "communicate", "kind": "message"}
    return decision_line({**base, **kw})


RECORDS = [
    rec(
        receivers="everyone",
        delivered=["agent_1", "agent_2", "agent_3"],
        message="all go to the kitchen",
        message_tokens=6,
        usage={"prompt_tokens": 100, "completion_tokens": 10},
        model="m1",
    ),
    rec(
        agent="agent_1",
        receivers=["agent_0"],
        delivered=["agent_0"],
        message="ok",
        message_tokens=1,
        usage={"prompt_tokens": 50, "completion_tokens": 2},
        model="m1",
        abstained=False,
        role="Cook",
    ),
    rec(agent="agent_2", message="", usage={"prompt_tokens": 40, "completion_tokens": 1},
        model="m1", abstained=True, role=" cook "),
    rec(agent="agent_3", kind="intention", message="I scout", message_tokens=2, delivered=[],
        abstained=False, role="scout"),
    rec(
        agent="agent_1",
        tick=8,
        phase="act",
        kind="action",
        usage={"prompt_tokens": 30, "completion_tokens": 3},
        model="m1",
    ),
    rec(
        agent="agent_2",
        round=1,
        tick=12,
        phase="act",
        kind="action",
        fallback="unparseable reply",
    ),
    rec(agent="agent_3", round=1, tick=12, phase="act", kind="action"),
    rec(agent="agent_0", round=2, phase="vote", kind="vote", message="agent_1", message_tokens=3),
    rec(agent="agent_1", round=2, phase="vote", kind="vote", abstained=None, role="abstain"),
]


def test_headline_token_metrics():
    m = episode_metrics(RECORDS, success=True, ticks=10, price=price)
    assert m.messages_sent == 4
    assert m.message_tokens_sent == 6 + 1 + 2 + 3
    # the broadcast to 3 receivers counts 3 times; undelivered messages count 0
    assert m.message_tokens_delivered == 6 * 3 + 1 * 1
    # the headline is the paper's: tokens SENT per tick; delivered per tick beside it
    assert m.comm_tokens_per_step == 1.2
    assert m.delivered_tokens_per_step == 1.9
    assert m.message_words_sent == 5 + 1 + 2 + 1
    assert m.messages_by_kind == {"message": 2, "intention": 1, "vote": 1}


def test_llm_usage_cost_and_behaviour():
    m = episode_metrics(RECORDS, success=False, ticks=10, price=price)
    assert (m.llm_prompt_tokens, m.llm_completion_tokens) == (220, 16)
    assert m.prompt_tokens_by_agent == {"agent_0": 100, "agent_1": 80, "agent_2": 40}
    assert m.completion_tokens_by_phase == {"communicate": 13, "act": 3}
    assert m.cost_usd == 220 * 1.0 + 16 * 2.0
    assert m.fallback_count == 1
    assert m.abstention_rate == pytest.approx(1 / 3)
    assert m.unique_roles == 2
    assert m.election_count == 1
    assert m.rounds == 3
    assert m.success is False


def test_fallback_rate_counts_turns_not_lines():
    m = episode_metrics(RECORDS, success=False, ticks=10, price=price)
    # turns: 4 talk turns in round 0, 3 act turns, 2 votes; one fell back
    assert (m.decisions, m.fallback_count, m.fallback_rate) == (9, 1, pytest.approx(1 / 9))
    # a turn that sends two messages is two lines but one decision
    two = [rec(stage=0, message="a", fallback="invalid reply", usage={}),
           rec(stage=0, message="b", fallback="invalid reply"),
           rec(stage=0, agent="agent_1", message="c")]
    m = episode_metrics(two, success=False, ticks=1, price=price)
    assert (m.decisions, m.fallback_count, m.fallback_rate) == (2, 1, 0.5)
    assert episode_metrics([], success=False, ticks=0, price=price).fallback_rate is None


def test_cached_calls_cost_nothing_but_their_tokens_count():
    calls = [rec(usage={"prompt_tokens": 100, "completion_tokens": 10}, model="m1"),
             rec(usage={"prompt_tokens": 100, "completion_tokens": 10}, model="m1",
                 cached_usage={"prompt_tokens": 100, "completion_tokens": 10})]
    m = episode_metrics(calls, success=True, ticks=1, price=price)
    assert (m.llm_prompt_tokens, m.llm_completion_tokens) == (200, 20)
    assert m.cost_usd == 100 * 1.0 + 10 * 2.0  # only the call that reached the model


def test_cost_unknown_when_any_model_unknown():
    unknown = [*RECORDS, rec(usage={"prompt_tokens": 1, "completion_tokens": 1}, model="mystery")]
    assert episode_metrics(unknown, success=True, ticks=1, price=price).cost_usd is None
    no_model = [rec(usage={"prompt_tokens": 1, "completion_tokens": 1})]
    assert episode_metrics(no_model, success=True, ticks=1, price=price).cost_usd is None
    assert episode_metrics([], success=True, ticks=1, price=price).cost_usd == 0.0


def test_ticks_default_and_zero():
    assert episode_metrics(RECORDS, success=True, price=price).ticks == 12
    m = episode_metrics([], success=False, ticks=0, price=price)
    assert (m.ticks, m.comm_tokens_per_step, m.abstention_rate, m.rounds) == (0, 0.0, 0.0, 0)
    assert comm_tokens_per_step(10, 4) == 2.5
    with pytest.raises(ValueError, match=re.escape("ticks must be >= 0, got -1")):
        episode_metrics([], success=True, ticks=-1)


def test_communication_graph_and_structure():
    g = communication_graph(RECORDS, agents=["agent_0", "agent_1", "agent_2", "agent_3", "agent_4"])
    assert sorted(g.edges(data="weight")) == [
        ("agent_0", "agent_1", 1),
        ("agent_0", "agent_2", 1),
        ("agent_0", "agent_3", 1),
        ("agent_1", "agent_0", 1),
    ]
    m = episode_metrics(RECORDS, success=True, ticks=10, price=price)
    assert m.message_reach_depth == 1  # agent_0's broadcast reaches everyone in one hop
    assert m.hierarchy_depth == 0  # but nobody acted on anybody's order or claim
    assert m.spectral_gap == pytest.approx(1.0)
    m5 = episode_metrics(RECORDS, success=True, ticks=10, agents=[f"agent_{i}" for i in range(5)])
    assert m5.spectral_gap == 0.0  # agent_4 never spoke nor heard
    assert m5.algebraic_connectivity == 0.0


def test_algebraic_connectivity_is_the_weighted_combinatorial_laplacians_lambda_2():
    # star agent_0 -> 1, 2, 3 plus agent_1 -> agent_0: weights 2, 1, 1 on the star
    m = episode_metrics(RECORDS, success=True, ticks=10, price=price)
    import numpy as np

    lap = np.array([[4, -2, -1, -1], [-2, 2, 0, 0], [-1, 0, 1, 0], [-1, 0, 0, 1]], float)
    assert m.algebraic_connectivity == pytest.approx(sorted(np.linalg.eigvalsh(lap))[1])
    assert m.algebraic_connectivity == pytest.approx(1.0)
    assert m.spectral_gap <= 4 / 3  # the normalized variant is bounded by n / (n - 1)
    assert m.algebraic_connectivity_per_tick == pytest.approx(1.0 / 10)
    assert m.algebraic_connectivity_binary == pytest.approx(1.0)  # the star K1,3


def test_roles_by_round_and_the_role_each_agent_held_most():
    from orgteams.organizations.metrics.episode_metrics import episode_roles, roles_by_round

    recs = [rec(agent="agent_0", round=0, phase="communicate", role="cook"),
            rec(agent="agent_1", round=0, phase="communicate", role="scout"),
            rec(agent="agent_0", round=1, phase="communicate", role="Scout"),
            rec(agent="agent_0", round=2, phase="communicate", role="cook"),
            rec(agent="agent_1", round=1, phase="act", role="ignored: act phase")]
    by_round = roles_by_round(recs)
    assert by_round == {"0": {"agent_0": "cook", "agent_1": "scout"}, "1": {"agent_0": "Scout"},
                        "2": {"agent_0": "cook"}}
    assert episode_roles(by_round) == {"agent_0": "cook", "agent_1": "scout"}


def test_role_stability_index():
    episodes = [
        {"agent_0": "leader", "agent_1": "cook"},
        {"agent_0": "Leader", "agent_1": "scout"},
        {"agent_0": "leader", "agent_1": "scout", "agent_2": "x"},
    ]
    # agent_0: 2/2 unchanged, agent_1: 1/2 -> mean 0.75; agent_2 has no pair
    assert role_stability_index(episodes) == 0.75
    assert math.isnan(role_stability_index([{"a": "x"}, {"b": "x"}]))
    with pytest.raises(ValueError, match=re.escape("needs at least 2 episodes, got 1")):
        role_stability_index([{"a": "x"}])


def test_aggregate_all_and_successful():
    a = episode_metrics(RECORDS, success=True, ticks=10, price=price)
    b = episode_metrics(RECORDS, success=False, ticks=20, price=price)
    c = episode_metrics(RECORDS[:1], success=True, ticks=30, price=lambda *_: None)
    out = aggregate([a, b, c])
    assert (out["episodes"], out["successes"], out["success_rate"]) == (3, 2, 2 / 3)
    assert out["all_episodes"]["ticks"] == {"n": 3, "mean": 20.0, "sd": 10.0}
    assert out["successful_episodes"]["ticks"] == {
        "n": 2,
        "mean": 20.0,
        "sd": pytest.approx(math.sqrt(200)),
    }
    assert out["all_episodes"]["cost_usd"]["n"] == 2
    assert "messages_by_kind" not in out["all_episodes"]
    assert aggregate([])["success_rate"] is None
    assert aggregate([a])["all_episodes"]["ticks"] == {"n": 1, "mean": 10.0, "sd": None}


def test_to_dict_is_json_ready():
    d = episode_metrics(RECORDS, success=True, ticks=10, price=price).to_dict()
    assert d["message_tokens_delivered"] == 19
    assert set(d) == {f for f in EpisodeMetrics.__dataclass_fields__}


def test_default_price_table_reports_unknown_models_as_unknown():
    r = [rec(usage={"prompt_tokens": 5, "completion_tokens": 5}, model="no-such-model-xyz")]
    assert episode_metrics(r, success=True, ticks=1).cost_usd is None



def test_leader_tenure_counts_terms_and_self_votes_count_own_ballots():
    from orgteams.organizations.metrics.episode_metrics import episode_metrics, leader_tenure

    events = [EventLine.from_dict(e) for e in (
        {"type": "election", "round": 0, "winner": "agent_0"},
        {"type": "election", "round": 5, "winner": "agent_2"},
        {"type": "leader_change", "round": 8, "leader": "agent_2"},
        {"type": "leader_change", "round": 9, "leader": "agent_1"})]
    assert leader_tenure(events, "agent_0", 12) == 12 / 3
    assert leader_tenure([], "agent_0", 12) == 12.0
    assert leader_tenure(events, None, 12) is None
    ballots = [rec(agent=a, kind="vote", vote=v)
               for a, v in (("agent_0", "agent_0"), ("agent_1", "agent_0"),
                            ("agent_2", "agent_2"), ("agent_3", None))]
    m = episode_metrics(ballots, success=True, ticks=5, leaders=["agent_0"], events=events)
    assert m.self_vote_rate == 2 / 3 and m.leader_tenure == 1 / 3  # one round recorded
    assert episode_metrics([], success=True, ticks=5).self_vote_rate is None
