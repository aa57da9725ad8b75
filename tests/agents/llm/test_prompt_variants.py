"""Prompts that do not lead the model: no example values, shuffled options, variants.

A small model copies an example reply's values and favours the first option, so the
reply instruction only describes fields, options are listed in a per-agent seeded
order (recorded, so reruns and caches are exact), and small backends get a compact
prompt variant.
"""

from __future__ import annotations

import asyncio
import re

import pytest
from doubles import ACTIONS, FakeAction, FakeEnv, comm_ctx

from orgteams.agents import ActContext, LLMAgent, ScriptedBackend
from orgteams.agents.llm.prompts import (
    PROMPT_VARIANTS,
    action_options,
    prompt_variant,
    terse_label,
    variant_for_backend,
)
from orgteams.agents.llm.schemas import act_spec, communicate_spec

TEAM = {"agent_0": "Alice", "agent_1": "Bob", "agent_2": "Charlie"}
MANY = [FakeAction(f"explore:room_{i}", "explore", f"room_{i}", f"[goexplore] <room_{i}>")
        for i in range(8)]


def run(coro):
    return asyncio.run(coro)


def act_prompt(agent: LLMAgent, env: FakeEnv, round_: int = 2) -> str:
    backend = agent.backend
    run(agent.act(env, round_, ActContext(round_, agent.agent_id, "Alice", dict(TEAM))))
    return backend.calls[-1][1]["content"]


def test_reply_specs_describe_fields_without_values_to_copy():
    act = act_spec(("A", "B", "C"))
    assert act.fields == (
        '"action": the letter of the action you choose (one of A, B, C); '
        '"thoughts": why, in a few words (at most 200 characters).'
    )
    comm = communicate_spec("message", ("Bob", "Charlie"), allow_abstain=True,
                            self_chosen_roles=True)
    for old_example in ("I will explore the kitchen", "one short reason", "explorer"):
        assert old_example not in comm.fields
    for field in ('"abstain"', '"role"', '"receivers"', '"message"', '"thoughts"'):
        assert field in comm.fields
    assert not hasattr(act, "example")


def test_prompts_hold_no_example_reply():
    backend = ScriptedBackend()
    agent = LLMAgent("agent_0", backend)
    run(agent.communicate(comm_ctx(), FakeEnv()))
    act_prompt(agent, FakeEnv())
    for messages in backend.calls:
        text = messages[1]["content"]
        assert "like {" not in text and "one short reason" not in text
        assert "I will explore the kitchen" not in text
        assert "Reply with exactly one JSON object with these fields:" in text


def test_options_are_shuffled_per_agent_and_round_and_recorded():
    orders = {}
    for agent_id in ("agent_0", "agent_1", "agent_2"):
        for round_ in range(3):
            agent = LLMAgent(agent_id, ScriptedBackend(), seed=0)
            decision = run(agent.act(FakeEnv(MANY), round_,
                                     ActContext(round_, agent_id, "X", dict(TEAM))))
            orders[agent_id, round_] = decision.record.options
    assert all(sorted(o) == sorted(a.id for a in MANY) for o in orders.values())
    assert len({tuple(o) for o in orders.values()}) > 1  # not one order for everyone
    # the listed letters follow the recorded order
    agent = LLMAgent("agent_1", ScriptedBackend(), seed=0)
    text = act_prompt(agent, FakeEnv(MANY), 1)
    listed = re.findall(r"^([A-H])\. \[goexplore\] <(room_\d)>$", text, flags=re.M)
    assert [f"explore:{room}" for _, room in listed] == orders["agent_1", 1]


def test_option_order_is_a_pure_function_of_seed_agent_and_round():
    first = [a.id for _, a in action_options(MANY, "0|agent_1|4")]
    assert first == [a.id for _, a in action_options(list(reversed(MANY)), "0|agent_1|4")]
    assert [a.id for _, a in action_options(MANY)] == [a.id for a in MANY]  # no key: env order


def test_chosen_letter_maps_through_the_shuffled_order():
    backend = ScriptedBackend([{"action": "C", "thoughts": ""}])
    agent = LLMAgent("agent_2", backend, seed=3)
    decision = run(agent.act(FakeEnv(MANY), 5, ActContext(5, "agent_2", "Charlie", dict(TEAM))))
    assert decision.action_id == decision.record.options[2]


def test_communicate_and_act_list_options_alike_in_a_round():
    agent = LLMAgent("agent_0", ScriptedBackend(), seed=7)
    comm = run(agent.communicate(comm_ctx(round=4), FakeEnv(MANY)))
    act = run(agent.act(FakeEnv(MANY), 4))
    assert comm.record.options == act.record.options


def test_compact_variant_is_shorter_with_terse_labels_and_small_windows():
    default = act_prompt(LLMAgent("agent_0", ScriptedBackend(), seed=0), FakeEnv())
    compact_agent = LLMAgent("agent_0", ScriptedBackend(), seed=0, prompts="compact")
    compact = act_prompt(compact_agent, FakeEnv())
    assert len(compact) < 0.8 * len(default)
    assert "explore kitchen" in compact and "[goexplore]" not in compact
    assert "[goexplore] <kitchen>" in default
    assert compact_agent.log.dialogue.maxlen == 4 and compact_agent.log.actions.maxlen == 3
    assert compact_agent.settings == {"temperature": 0.0, "prompts": "compact",
                                      "option_order": "shuffled", "max_tokens": 320}


def test_compact_variant_parses_a_terse_label_reply():
    backend = ScriptedBackend([{"action": "check fridge", "thoughts": ""}])
    decision = run(LLMAgent("agent_0", backend, prompts="compact").act(
        FakeEnv(), 1, ActContext(1, "agent_0", "Alice", dict(TEAM))))
    assert decision.action_id == "check:fridge"


def test_variant_lookup_and_backend_defaults():
    assert variant_for_backend("local") == "compact"
    assert variant_for_backend("openai:gpt-4o-mini") == "default"
    assert prompt_variant("default") is PROMPT_VARIANTS["default"]
    assert terse_label("grab:cupcake_1") == "grab cupcake_1" and terse_label("wait") == "wait"
    with pytest.raises(ValueError, match=re.escape(
            "unknown prompt variant 'tiny'; known: default, compact")):
        LLMAgent("agent_0", ScriptedBackend(), prompts="tiny")


def test_temperature_reaches_every_call_and_is_checked():
    seen = []

    def rule(messages, schema):
        return {"action": "A", "thoughts": ""}

    class Recording(ScriptedBackend):
        async def acomplete(self, messages, **kwargs):
            seen.append(kwargs["temperature"])
            return await super().acomplete(messages, **kwargs)

    run(LLMAgent("agent_0", Recording(rule), temperature=0.7).act(FakeEnv(ACTIONS), 1))
    assert seen == [0.7]
    with pytest.raises(ValueError, match=re.escape("temperature must be in [0, 2], got 2.5")):
        LLMAgent("agent_0", ScriptedBackend(), temperature=2.5)
