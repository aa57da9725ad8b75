"""LLM agents end to end: the real wire path, and faulty servers.

* With the embedded model (``local_llm``): SmolLM2 behind the local llama.cpp server,
  two agents through ``HighLevelEnv`` for a few communicate + act rounds; every
  decision parses (grammar-constrained JSON) and usage is reported.
* With the fault-injecting server (no model needed): HTTP 500, a timeout and a reply
  that is not JSON each give a recorded fallback, never an exception.
"""

from __future__ import annotations

import asyncio

import pytest
from doubles import TEAM, FakeEnv, comm_ctx

from orgteams.agents import LLMAgent
from orgteams.agents.backends.local import local_unavailable

ROUNDS = 1


def _openai_backend(server, **kwargs):
    pytest.importorskip("openai", reason='the openai SDK is needed (pip install "orgteams[llm]")')
    from orgteams.agents.backends import OpenAIBackend

    return OpenAIBackend("fake-model", base_url=server.base_url, api_key="sk-test",
                         structured="json_object", **kwargs)


@pytest.mark.local_llm
@pytest.mark.skipif(local_unavailable() is not None,
                    reason=str(local_unavailable()))
def test_smollm2_agents_play_a_few_rounds():
    # ~820 prompt tokens a decision: ~10-15 s each on a busy 2-core CPU, so keep it short.
    from orgteams.agents.backends import LocalBackend, LocalServer
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv

    env = HighLevelEnv(layout="apartment", task="prepare_afternoon_tea", num_agents=2)
    env.reset(seed=0)
    records = []
    with LocalServer() as server:
        backend = LocalBackend(server)
        agents = {a: LLMAgent(a, backend, seed=0, max_tokens=160) for a in env.agents}

        async def one_round(r: int) -> dict[str, str]:
            deciding = [a for a in env.agents if env.needs_decision(a)]
            for a in deciding:  # turn-taking: each speaker sees the ones before it
                ctx = comm_ctx(round=r, agent=a, name=TEAM[a], team={b: TEAM[b] for b in
                                                                     env.agents},
                               can_message=[b for b in env.agents if b != a])
                decision = await agents[a].communicate(ctx, env)
                records.append(decision.record)
            acts = await asyncio.gather(*(agents[a].act(env, r) for a in deciding))
            records.extend(d.record for d in acts)
            return {a: d.action_id for a, d in zip(deciding, acts)}

        async def play() -> None:  # one event loop: the async HTTP client is bound to it
            for r in range(ROUNDS):
                env.step(await one_round(r))

        asyncio.run(play())
    assert len(records) >= 4
    spoken = [rec for rec in records if rec.phase == "communicate"]
    # the reply schema's messages list (one or more (receivers, text)) through the grammar
    assert spoken and all(isinstance(rec.parsed.get("messages"), list) for rec in spoken), [
        rec.replies for rec in spoken]
    for rec in records:
        assert rec.fallback is None, (rec.phase, rec.errors, rec.replies)
        assert rec.parsed is not None and rec.retries == 0
        assert rec.usage.prompt_tokens > 0 and rec.usage.completion_tokens > 0
        assert rec.model == "smollm2-135m-instruct"


def test_http_500_is_a_recorded_fallback(fault_server):
    fault_server.mode = "http500"
    agent = LLMAgent("agent_0", _openai_backend(fault_server, max_retries=1))
    act = asyncio.run(agent.act(FakeEnv(), 0))
    assert act.action_id == "wait" and act.record.fallback.startswith("backend error (http: ")
    assert "500" in act.record.error
    comm = asyncio.run(agent.communicate(comm_ctx(), FakeEnv()))
    assert comm.silent and comm.record.fallback == f"backend error ({comm.record.error})"


def test_timeout_is_a_recorded_fallback(fault_server):
    fault_server.mode, fault_server.delay = "timeout", 1.0
    agent = LLMAgent("agent_0", _openai_backend(fault_server, timeout=0.2, max_retries=0))
    act = asyncio.run(agent.act(FakeEnv(), 0))
    assert act.action_id == "wait" and act.record.fallback.startswith("backend error (timeout: ")


def test_invalid_json_is_corrected_then_recorded(fault_server):
    fault_server.mode = "invalid_json"
    agent = LLMAgent("agent_0", _openai_backend(fault_server, max_retries=0))
    act = asyncio.run(agent.act(FakeEnv(), 0))
    rec = act.record
    assert act.action_id == "wait"
    assert rec.fallback == "invalid reply after 2 attempt(s): it is not a JSON object"
    assert rec.replies == ["Sure! I would pick a."] * 2
    assert rec.errors == ["it is not a JSON object"] * 2
    assert len(fault_server.requests) == 2
    sent = [m["content"] for m in fault_server.requests[1]["messages"]]
    assert any(c.startswith("Your reply was not valid: it is not a JSON object. Reply with "
                            "exactly one JSON object") for c in sent)
    assert rec.usage.prompt_tokens == 22 and rec.usage.completion_tokens == 10


def test_valid_reply_through_the_wire(fault_server):
    fault_server.reply_text = '{"action": "B", "thoughts": "fridge"}'
    agent = LLMAgent("agent_0", _openai_backend(fault_server), shuffle_options=False)
    act = asyncio.run(agent.act(FakeEnv(), 0))
    assert act.action_id == "check:fridge" and act.record.fallback is None
    assert fault_server.requests[0]["response_format"]["type"] == "json_object"
