"""An LLM member sends distinct messages to different teammates in one stage (the
organized-teams paper, §3.1), routed along the organization's channels."""

from __future__ import annotations

from doubles import records_of

from orgteams.agents import LLMAgent, ScriptedBackend
from orgteams.agents.backends.scripted import minimal_instance
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.runner import TeamRunner

TO_ALICE, TO_CHARLIE, TO_DAVID = "Alice, take the kitchen.", "Charlie, check the fridge.", "x"


def bob(messages, schema):
    """Bob (agent_1, in the middle of a chain) writes one message each to Alice and to
    Charlie, and one to David, who is outside his channels."""
    if "messages" not in schema["properties"]:
        return minimal_instance(schema)
    return {"messages": [{"receivers": ["Alice"], "message": TO_ALICE},
                         {"receivers": ["Charlie"], "message": TO_CHARLIE},
                         {"receivers": ["David"], "message": TO_DAVID}], "thoughts": ""}


def test_distinct_messages_reach_only_their_receivers_and_a_forbidden_one_is_recorded():
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=4)
    backends = {a: ScriptedBackend(bob if a == "agent_1" else None) for a in
                ("agent_0", "agent_1", "agent_2", "agent_3")}
    members = {a: LLMAgent(a, b, seed=0) for a, b in backends.items()}
    result = TeamRunner(env, load_organization("chain"), members, max_rounds=1).run(seed=0)

    prompt = backends["agent_1"].calls[0][1]["content"]
    assert 'You may message: Alice, Charlie (or "everyone"). To tell different teammates ' \
           'different things, send up to 3 separate messages.' in prompt
    said = [r for r in records_of(result) if r.get("agent") == "agent_1"
            and r.get("phase") == "communicate" and r.get("message")]
    assert [(r["message"], r["delivered"]) for r in said] == [
        (TO_ALICE, ["agent_0"]), (TO_CHARLIE, ["agent_2"])]
    assert said[0]["notes"] == [
        "dropped receiver 'David': not a teammate you may message",
        "dropped message 3: receivers ['David'] name no teammate you may message"]
    assert "usage" in said[0] and "usage" not in said[1]  # one call, counted once
    heard = {a: [(m.sender, m.text) for m in members[a].log.dialogue] for a in members}
    assert heard["agent_0"] == [("agent_1", TO_ALICE)]
    assert heard["agent_2"] == [("agent_1", TO_CHARLIE)]
    assert heard["agent_3"] == []
    assert heard["agent_1"] == [("agent_1", TO_ALICE), ("agent_1", TO_CHARLIE)]
