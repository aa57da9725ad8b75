"""LLMAgent with the scripted backend: parsing, corrections, retries, fallbacks, usage."""

from __future__ import annotations

import asyncio
import json

import pytest
from doubles import ACTIONS, TEAM, FakeAction, FakeEnv, comm_ctx

from orgteams.agents import (
    ActContext,
    BackendConfigError,
    BackendError,
    LLMAgent,
    ScriptedBackend,
    TeamMember,
    TeamMessage,
    Usage,
)
from orgteams.agents.llm.tokens import count_tokens

ACT_CTX = ActContext(2, "agent_0", "Alice", dict(TEAM), "Alice leads.")
CORRECTION = (
    'Your reply was not valid: {error}. Reply with exactly one JSON object with these '
    'fields: "action": the letter of the action you choose (one of A, B, C, D); '
    '"thoughts": why, in a few words (at most 200 characters). action must be one of '
    'A, B, C, D.'
)


def Agent(*args, **kwargs) -> LLMAgent:
    """An LLMAgent listing options in the env's order (these tests pick by letter)."""
    return LLMAgent(*args, **{"shuffle_options": False, **kwargs})


def run(coro):
    return asyncio.run(coro)


def expected_usage(backend: ScriptedBackend, replies: list[str]) -> Usage:
    total = Usage()
    for messages, text in zip(backend.calls, replies):
        total += Usage(sum(count_tokens(m["content"]) for m in messages), count_tokens(text))
    return total


def test_llm_agent_is_a_team_member():
    assert isinstance(LLMAgent("agent_0", ScriptedBackend()), TeamMember)


def test_good_act_reply():
    backend = ScriptedBackend([{"action": "B", "thoughts": "check the fridge"}])
    decision = run(Agent("agent_0", backend).act(FakeEnv(), 2, ACT_CTX))
    assert decision.action_id == "check:fridge" and decision.thoughts == "check the fridge"
    rec = decision.record
    assert rec.fallback is None and rec.retries == 0 and rec.errors == []
    assert rec.parsed == {"action": "B", "thoughts": "check the fridge"}
    assert rec.usage.prompt_tokens > 0 and rec.usage.completion_tokens > 0
    assert rec.prompt == backend.calls[0] and rec.wall >= rec.latency >= 0
    json.dumps(rec.to_dict())  # the step log can write it


def test_cached_calls_keep_their_tokens_but_are_marked_free(tmp_path):
    from orgteams.agents.backends.cache import CachedBackend

    reply = {"action": "B", "thoughts": "check the fridge"}
    backend = CachedBackend(ScriptedBackend([reply, reply]), tmp_path / "cache.sqlite")
    first = run(Agent("agent_0", backend, seed=1).act(FakeEnv(), 2, ACT_CTX)).record
    again = run(Agent("agent_0", backend, seed=1).act(FakeEnv(), 2, ACT_CTX)).record
    assert (first.cached_calls, first.cached_usage) == (0, Usage())
    assert again.cached_calls == 1 and again.usage == first.usage
    assert again.cached_usage == again.usage  # all of it came from the cache
    backend.close()


def test_good_communicate_reply_maps_names_to_ids():
    backend = ScriptedBackend([{"messages": [{"receivers": ["Bob", "Zed"],
                                              "message": "Take the fridge."}],
                                "thoughts": "split work"}])
    agent = Agent("agent_0", backend)
    decision = run(agent.communicate(comm_ctx(), FakeEnv()))
    assert [(m.receivers, m.text) for m in decision.messages] == [(("agent_1",),
                                                                   "Take the fridge.")]
    assert decision.record.notes == ["dropped receiver 'Zed': not a teammate you may message"]
    assert not decision.abstain and decision.role is None and decision.vote is None
    # what it said is remembered (once, even if the runner echoes it back)
    agent.receive([TeamMessage("agent_0", ("agent_1",), "Take the fridge.", round=3)])
    assert agent.log.dialogue_lines(TEAM, "agent_0") == ['Round 3, you to Bob: "Take the fridge."']


def test_invalid_reply_gets_one_exact_correction_then_succeeds():
    backend = ScriptedBackend(["I think B", {"action": "C", "thoughts": "ok"}])
    decision = run(Agent("agent_0", backend).act(FakeEnv(), 2, ACT_CTX))
    assert decision.action_id == "grab:cupcake_1"
    first, second = backend.calls
    assert second[: len(first)] == first
    assert second[len(first)] == {"role": "assistant", "content": "I think B"}
    assert second[-1] == {"role": "user",
                          "content": CORRECTION.format(error="it is not a JSON object")}
    rec = decision.record
    assert rec.retries == 1 and rec.fallback is None
    assert rec.errors == ["it is not a JSON object"]
    assert rec.replies == ["I think B", '{"action": "C", "thoughts": "ok"}']
    assert rec.usage == expected_usage(backend, rec.replies)


def test_action_not_in_list_is_corrected():
    backend = ScriptedBackend([{"action": "Q"}, {"action": "A"}])
    decision = run(Agent("agent_0", backend).act(FakeEnv(), 2, ACT_CTX))
    assert decision.action_id == "explore:kitchen"
    assert backend.calls[1][-1]["content"] == CORRECTION.format(
        error="action 'Q' is not one of A, B, C, D")


def test_retries_exhausted_falls_back_to_wait_with_raw_replies():
    backend = ScriptedBackend(["nope", '{"action": "Z"}'])
    decision = run(Agent("agent_0", backend, max_retries=1).act(FakeEnv(), 2, ACT_CTX))
    assert decision.action_id == "wait"
    rec = decision.record
    assert rec.fallback == ("invalid reply after 2 attempt(s): action 'Z' is not one of "
                            "A, B, C, D") and rec.parsed is None
    assert rec.replies == ["nope", '{"action": "Z"}']
    assert rec.errors == ["it is not a JSON object", "action 'Z' is not one of A, B, C, D"]
    assert rec.usage == expected_usage(backend, rec.replies)


def test_busy_agent_falls_back_to_continue():
    env = FakeEnv(ACTIONS + [FakeAction("continue", "continue", "", "[continue]")])
    decision = run(Agent("agent_0", ScriptedBackend(["x"]), max_retries=0).act(env, 2))
    assert decision.action_id == "continue" and len(decision.record.replies) == 1


def test_fallback_without_wait_offered_is_noted():
    env = FakeEnv(ACTIONS[:1])
    decision = run(Agent("agent_0", ScriptedBackend(["x"]), max_retries=0).act(env, 2))
    assert decision.action_id == "wait"
    assert decision.record.notes == ["'wait' is not among the available actions "
                                     "['explore:kitchen']"]


def test_backend_error_is_a_recorded_fallback():
    backend = ScriptedBackend([BackendError("HTTP 500: boom", kind="http", status=500)])
    decision = run(Agent("agent_0", backend).act(FakeEnv(), 2, ACT_CTX))
    assert decision.action_id == "wait"
    rec = decision.record
    assert rec.fallback == "backend error (http: HTTP 500: boom)"
    assert rec.error == "http: HTTP 500: boom"
    assert rec.usage == Usage() and rec.replies == []


def test_backend_error_in_communicate_is_silence():
    backend = ScriptedBackend([BackendError("timeout", kind="timeout")])
    decision = run(Agent("agent_0", backend).communicate(comm_ctx(), FakeEnv()))
    assert decision.silent and decision.record.fallback == "backend error (timeout: timeout)"


def test_invalid_communicate_exhausted_is_recorded_silence():
    backend = ScriptedBackend(['{"message": 5}', "still not"])
    decision = run(Agent("agent_0", backend).communicate(comm_ctx(), FakeEnv()))
    assert decision.silent
    assert decision.record.fallback == "invalid reply after 2 attempt(s): it is not a JSON object"
    assert decision.record.replies == ['{"message": 5}', "still not"]


def test_config_errors_raise():
    def broken(messages, schema):
        raise BackendConfigError("No API key")

    with pytest.raises(BackendConfigError, match="No API key"):
        run(Agent("agent_0", ScriptedBackend(broken)).act(FakeEnv(), 2))


def test_schema_offers_abstain_and_role_only_when_allowed():
    schemas = []

    def rule(messages, schema):
        schemas.append(schema)
        return {"abstain": True, "role": "scout", "receivers": [], "message": "", "thoughts": ""}

    agent = Agent("agent_0", ScriptedBackend(rule))
    plain = run(agent.communicate(comm_ctx(), FakeEnv()))
    assert "abstain" not in schemas[0]["properties"] and "role" not in schemas[0]["properties"]
    assert plain.abstain is False and plain.role is None
    free = run(agent.communicate(comm_ctx(allow_abstain=True, self_chosen_roles=True), FakeEnv()))
    assert {"abstain", "role"} <= set(schemas[1]["properties"])
    assert free.abstain is True and free.role == "scout"


def test_abstaining_agent_sends_nothing_and_waits():
    backend = ScriptedBackend([{"abstain": True, "messages": [{"receivers": ["Bob"],
                                                                "message": "bye"}]}])
    agent = Agent("agent_0", backend)
    decision = run(agent.communicate(comm_ctx(allow_abstain=True), FakeEnv()))
    assert decision.abstain and decision.silent
    assert decision.record.notes == ["abstained: message not sent"]
    ctx = ActContext(3, "agent_0", "Alice", dict(TEAM), abstained=True)
    act = run(agent.act(FakeEnv(), 3, ctx))
    assert act.action_id == "wait" and len(backend.calls) == 1
    assert act.record.notes == ["abstained this round"]


def test_vote_stage():
    backend = ScriptedBackend([{"vote": "Charlie", "thoughts": "she explores well"}])
    ctx = comm_ctx(stage_kind="vote", candidates=["agent_0", "agent_1", "agent_2"])
    decision = run(Agent("agent_0", backend).communicate(ctx, FakeEnv()))
    assert decision.vote == "agent_2" and decision.silent
    assert "elect the team leader. Vote for one of: Alice, Bob, Charlie." in (
        backend.calls[0][1]["content"])


def test_no_receivers_means_silence_without_a_model_call():
    backend = ScriptedBackend([])
    decision = run(Agent("agent_0", backend).communicate(comm_ctx(can_message=[]), FakeEnv()))
    assert decision.silent and backend.calls == []


def test_visible_outputs_of_this_round_are_shown():
    backend = ScriptedBackend()
    ctx = comm_ctx(agent="agent_1", name="Bob", can_message=["agent_0"], visible_this_round=[
        TeamMessage("agent_0", "everyone", "Bob: fridge.", role="leader"),
        TeamMessage("agent_2", (), abstained=True),
    ])
    run(Agent("agent_1", backend).communicate(ctx, FakeEnv()))
    text = backend.calls[0][1]["content"]
    assert 'Said so far this round:\nAlice (leader) to everyone: "Bob: fridge."\n' \
           "Charlie abstained." in text


def test_act_without_context_reuses_the_latest_communicate_context():
    backend = ScriptedBackend()
    agent = Agent("agent_0", backend)
    run(agent.communicate(comm_ctx(), FakeEnv()))
    run(agent.act(FakeEnv(), 3))
    assert "Alice is the leader. Follow her orders." in backend.calls[1][1]["content"]
    assert "Your latest actions (up to 20):\n(none yet)" in backend.calls[1][1]["content"]
    agent.reset()
    assert list(agent.log.dialogue) == [] and list(agent.log.actions) == []


def test_max_retries_zero_makes_one_call():
    backend = ScriptedBackend(["bad"])
    decision = run(Agent("agent_0", backend, max_retries=0).act(FakeEnv(), 1))
    assert len(backend.calls) == 1 and decision.record.retries == 0


def test_constructor_checks():
    with pytest.raises(ValueError, match="max_retries must be >= 0, got -1"):
        Agent("agent_0", ScriptedBackend(), max_retries=-1)


def test_three_agents_through_the_real_high_level_env():
    highlevel = pytest.importorskip("orgteams.envs.highlevel.highlevel_env")
    env = highlevel.HighLevelEnv(layout="apartment", task="prepare_afternoon_tea", num_agents=3)
    env.reset(seed=0)
    agents = {a: Agent(a, ScriptedBackend()) for a in env.agents}

    async def one_round(r: int) -> dict[str, str]:
        deciding = [a for a in env.agents if env.needs_decision(a)]
        comms = await asyncio.gather(*(
            agents[a].communicate(comm_ctx(round=r, agent=a, name=TEAM[a],
                                           can_message=[b for b in TEAM if b != a]), env)
            for a in deciding))
        assert all(c.record.fallback is None for c in comms)
        acts = await asyncio.gather(*(agents[a].act(env, r) for a in deciding))
        assert all(d.record.fallback is None for d in acts)
        return {a: d.action_id for a, d in zip(deciding, acts)}

    for r in range(3):
        env.step(run(one_round(r)))
    assert env.rounds == 3


def test_a_budget_of_no_messages_is_silence_without_a_model_call():
    from orgteams.agents.member_rules import MemberRules

    backend = ScriptedBackend([])
    decision = run(Agent("agent_0", backend).communicate(
        comm_ctx(rules=MemberRules(max_messages=0)), FakeEnv()))
    assert decision.silent and backend.calls == []
    assert decision.record.notes == ["the organization's budget allows no messages",
                                     "no teammate may be messaged: silent without a model call"]
