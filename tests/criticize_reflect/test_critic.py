"""The Critic parses and validates one structured reply, corrects, retries, falls back."""

from __future__ import annotations

from orgteams.agents.backends import BackendError, ScriptedBackend
from orgteams.criticize_reflect.critic import Critic, Critique
from orgteams.organizations.spec.library import load_organization

TEAM = {"agent_0": "Alice", "agent_1": "Bob"}
GOOD = {"summary": "fine", "agents": [{"agent": "Bob", "assessment": "redundant reports"}],
        "problems": ["members repeat sightings"], "suggestions": ["report to leader only"],
        "leadership_ranking": {"communication": ["agent_0", "Bob"], "strategy": ["alice"]}}


def critique(*replies, retries: int = 1) -> tuple[Critique, ScriptedBackend]:
    backend = ScriptedBackend(list(replies))
    critic = Critic(backend, max_retries=retries)
    out = critic.criticize(load_organization("leader"), {"agents": {}}, 42.0, team=TEAM)
    return out, backend


def test_valid_reply_is_parsed_and_names_become_ids():
    out, backend = critique(GOOD)
    assert out.fallback is None and out.problems == ["members repeat sightings"]
    assert out.agents[0].agent == "agent_1"
    assert out.leadership_ranking.communication == ["agent_0", "agent_1"]
    assert out.leadership_ranking.strategy == ["agent_0"]
    assert out.call["parsed"] == GOOD and out.call["retries"] == 0
    assert len(backend.calls) == 1
    prompt = backend.calls[0][1]["content"]
    assert "42.0" in prompt and "name: leader" in prompt


def test_invalid_json_gets_a_correction_then_succeeds():
    out, backend = critique("I think the team did well.", GOOD)
    assert out.fallback is None and out.call["errors"] == ["it is not a JSON object"]
    correction = backend.calls[1][-1]["content"]
    assert correction.startswith("Your reply was not valid: it is not a JSON object")
    assert backend.calls[1][-2] == {"role": "assistant", "content": "I think the team did well."}


def test_invalid_twice_falls_back_to_an_empty_critique_marked_fallback():
    out, backend = critique("not json", {"problems": "one string, not a list"})
    assert len(backend.calls) == 2  # bounded: 1 retry
    assert out.fallback and out.fallback.startswith("invalid reply after 2 attempt(s)")
    assert "problems" in out.fallback
    assert out.problems == [] and out.agents == [] and out.summary == ""
    assert Critique.model_validate(out.model_dump(mode="json")) == out  # saved and reloaded


def test_unknown_agent_and_extra_field_are_corrected():
    out, backend = critique({**GOOD, "agents": [{"agent": "Zed", "assessment": "?"}]},
                            {**GOOD, "mood": "happy"}, GOOD, retries=2)
    assert out.fallback is None and len(backend.calls) == 3
    assert "unknown agents ['Zed']" in out.call["errors"][0]
    assert "mood" in out.call["errors"][1]


def test_backend_failure_falls_back_without_raising():
    out, _ = critique(BackendError("boom", kind="http", status=500))
    assert out.fallback == "backend error (http: boom)"
