"""Reply schemas built per call, validation, receiver mapping and error texts."""

from __future__ import annotations

import re

import pytest

from orgteams.agents.backends.scripted import minimal_instance
from orgteams.agents.llm.prompts import Options
from orgteams.agents.llm.replies import parse_act, parse_communicate
from orgteams.agents.llm.schemas import (
    MAX_MESSAGES,
    MESSAGE_MAX_CHARS,
    THOUGHTS_MAX_CHARS,
    ReplyError,
    act_spec,
    communicate_spec,
)
from orgteams.envs.highlevel import ActionId, HighLevelAction

TEAM = {"agent_0": "Alice", "agent_1": "Bob", "agent_2": "Charlie"}


def said(reply):
    """``(receivers, text)`` of each message a parsed reply sends."""
    return [(m.receivers, m.text) for m in reply.messages]
OPTIONS = Options.of([HighLevelAction.make("explore", "kitchen"),
                      HighLevelAction.make("check", "fridge"), HighLevelAction.make("wait")])


def test_act_schema_is_an_enum_of_letters_with_bounded_thoughts():
    spec = act_spec(("A", "B", "C"))
    assert spec.schema == {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["A", "B", "C"]},
            "thoughts": {"type": "string", "maxLength": THOUGHTS_MAX_CHARS},
        },
        "required": ["action", "thoughts"],
        "additionalProperties": False,
    }
    assert spec.hint == "action must be one of A, B, C"


def test_communicate_schema_lacks_abstain_and_role_unless_allowed():
    plain = communicate_spec("message", ("Bob", "Charlie"))
    assert list(plain.schema["properties"]) == ["messages", "thoughts"]
    full = communicate_spec("message", ("Bob",), allow_abstain=True, self_chosen_roles=True)
    assert list(full.schema["properties"]) == ["abstain", "role", "messages", "thoughts"]
    messages = full.schema["properties"]["messages"]
    assert (messages["minItems"], messages["maxItems"]) == (1, MAX_MESSAGES)
    item = messages["items"]["properties"]
    assert item["receivers"]["items"]["enum"] == ["Bob", "everyone"]
    assert item["message"]["maxLength"] == MESSAGE_MAX_CHARS // MAX_MESSAGES  # texts share


def test_the_messages_field_is_described_without_an_example_to_copy():
    spec = communicate_spec("message", ("Bob", "Charlie"))
    assert spec.fields == (
        f'"messages": a list of 1 to {MAX_MESSAGES} messages, each with "receivers" (a list '
        'of the names you write to, from Bob, Charlie, everyone) and "message" (what you tell '
        f'them, in your own words, at most {MESSAGE_MAX_CHARS // MAX_MESSAGES} characters; '
        '"" means silence); write a separate message only to tell different teammates '
        'different things; "thoughts": why, in a few words (at most 200 characters).')
    assert spec.hint == ("receivers must be names from Bob, Charlie, everyone; at most "
                         f'{MAX_MESSAGES} messages of at most {MESSAGE_MAX_CHARS // MAX_MESSAGES}'
                         ' characters each ("" = silence)')


def test_stage_kinds_shape_the_schema():
    assert list(communicate_spec("vote", (), candidates=("Alice", "Bob")).schema["properties"]) \
        == ["vote", "thoughts"]
    assert list(communicate_spec("claim", ("Bob",)).schema["properties"]) == [
        "role", "message", "thoughts"]
    assert list(communicate_spec("intention", ("Bob",)).schema["properties"]) == [
        "message", "thoughts"]
    with pytest.raises(ValueError, match=re.escape("unknown stage kind 'chat'")):
        communicate_spec("chat", ())
    with pytest.raises(ValueError, match=re.escape("a vote stage needs candidates")):
        communicate_spec("vote", ())


def test_minimal_instances_of_every_schema_validate():
    spec = act_spec(("A", "B", "C"))
    assert parse_act(minimal_instance(spec.schema), spec, OPTIONS)[0] == "explore:kitchen"
    spec = communicate_spec("message", ("Bob", "Charlie"), allow_abstain=True,
                            self_chosen_roles=True)
    reply = parse_communicate(minimal_instance(spec.schema), spec, TEAM, ["agent_1", "agent_2"])
    assert reply.messages == [] and reply.abstain is False and reply.role is None


@pytest.mark.parametrize("given", ["B", "b", "B.", "check:fridge", "[gocheck] <fridge>"])
def test_act_accepts_letter_id_or_label(given):
    action, thoughts, notes = parse_act({"action": given, "thoughts": "t"},
                                        act_spec(("A", "B", "C")), OPTIONS)
    assert action == "check:fridge" and type(action) is ActionId and thoughts == "t"
    assert (action.kind, action.target) == ("check", "fridge")
    assert notes == ([] if given.rstrip(".").lower() == "b" else
                     [f"action given as {given!r}, matched to B"])


def test_act_errors_are_written_for_the_model():
    spec = act_spec(("A", "B", "C"))
    with pytest.raises(ReplyError, match=re.escape("action 'Z' is not one of A, B, C")):
        parse_act({"action": "Z"}, spec, OPTIONS)
    with pytest.raises(ReplyError, match=re.escape("missing field 'action'")):
        parse_act({"thoughts": "hm"}, spec, OPTIONS)
    with pytest.raises(ReplyError, match=re.escape("it is not a JSON object")):
        parse_act(None, spec, OPTIONS)
    with pytest.raises(ReplyError, match=re.escape("field 'action': Input should be a valid")):
        parse_act({"action": 3}, spec, OPTIONS)


def test_long_thoughts_are_cut_and_noted():
    _, thoughts, notes = parse_act({"action": "A", "thoughts": "x" * 500},
                                   act_spec(("A", "B", "C")), OPTIONS)
    assert len(thoughts) == THOUGHTS_MAX_CHARS
    assert notes == [f"thoughts cut from 500 to {THOUGHTS_MAX_CHARS} characters"]


def test_receivers_map_names_to_ids_and_drop_unknown():
    spec = communicate_spec("message", ("Bob", "Charlie"))
    reply = parse_communicate(
        {"messages": [{"receivers": ["bob", "Dave", "agent_2", "Bob"], "message": " go "}],
         "thoughts": ""}, spec, TEAM, ["agent_1", "agent_2"], sender="agent_0", round=4,
    )
    assert said(reply) == [(("agent_1", "agent_2"), "go")]
    assert [(m.sender, m.round, m.kind) for m in reply.messages] == [("agent_0", 4, "text")]
    assert reply.notes == ["dropped receiver 'Dave': not a teammate you may message"]


def test_everyone_and_forbidden_channels():
    spec = communicate_spec("message", ("Bob",))
    reply = parse_communicate({"receivers": ["everyone"], "message": "hi"}, spec, TEAM,
                              ["agent_1"])
    assert said(reply) == [("everyone", "hi")]
    with pytest.raises(ReplyError, match=re.escape(
            "receivers ['Charlie'] name no teammate you may message; use names from Bob, "
            "everyone")):
        parse_communicate({"receivers": ["Charlie"], "message": "hi"}, spec, TEAM, ["agent_1"])


def test_silence_needs_no_receivers():
    spec = communicate_spec("message", ("Bob",))
    reply = parse_communicate({"receivers": [], "message": ""}, spec, TEAM, ["agent_1"])
    assert reply.messages == []
    reply = parse_communicate({"messages": [{"receivers": [], "message": ""}]}, spec, TEAM,
                              ["agent_1"])
    assert reply.messages == []


def test_too_long_message_is_rejected():
    spec = communicate_spec("message", ("Bob",))
    with pytest.raises(ReplyError, match=re.escape(
            f"field 'message': String should have at most {MESSAGE_MAX_CHARS} characters")):
        parse_communicate({"receivers": ["Bob"], "message": "x" * 400}, spec, TEAM, ["agent_1"])
    with pytest.raises(ReplyError, match=re.escape(
            f"field 'messages.1.message': String should have at most {MESSAGE_MAX_CHARS} "
            "characters")):
        parse_communicate({"messages": [{"receivers": ["Bob"], "message": "hi"},
                                        {"receivers": ["Bob"], "message": "x" * 400}]},
                          spec, TEAM, ["agent_1"])
    with pytest.raises(ReplyError, match=re.escape(  # the texts share MESSAGE_MAX_CHARS
            f"field 'messages.1.message': String should have at most "
            f"{MESSAGE_MAX_CHARS // MAX_MESSAGES} characters")):
        parse_communicate({"messages": [{"receivers": ["Bob"], "message": "hi"},
                                        {"receivers": ["Bob"], "message": "x" * 150}]},
                          spec, TEAM, ["agent_1"])
    one = communicate_spec("message", ("Bob",), max_messages=1)  # one message: all of it
    assert said(parse_communicate({"messages": [{"receivers": ["Bob"], "message": "x" * 300}]},
                                  one, TEAM, ["agent_1"])) == [(("agent_1",), "x" * 300)]


def test_distinct_messages_go_to_different_receivers():
    spec = communicate_spec("plan", ("Bob", "Charlie"))
    reply = parse_communicate({"messages": [
        {"receivers": ["Bob"], "message": "take the kitchen"},
        {"receivers": ["Charlie", "Dave"], "message": " take the bedroom "},
        {"receivers": ["everyone"], "message": ""}]}, spec, TEAM, ["agent_1", "agent_2"])
    assert said(reply) == [(("agent_1",), "take the kitchen"),
                              (("agent_2",), "take the bedroom")]
    assert reply.notes == ["dropped receiver 'Dave': not a teammate you may message"]


def test_too_many_messages_or_one_to_nobody_ask_for_a_correction():
    spec = communicate_spec("message", ("Bob",))
    one = {"receivers": ["Bob"], "message": "hi"}
    with pytest.raises(ReplyError, match=re.escape(
            f"field 'messages': List should have at most {MAX_MESSAGES} items after "
            f"validation, not {MAX_MESSAGES + 1}")):
        parse_communicate({"messages": [one] * (MAX_MESSAGES + 1)}, spec, TEAM, ["agent_1"])
    nobody = {"receivers": ["Charlie"], "message": "x"}
    with pytest.raises(ReplyError, match=re.escape(
            "message 2: receivers ['Charlie'] name no teammate you may message; use names "
            "from Bob, everyone")):
        parse_communicate({"messages": [{"receivers": ["Bob"], "message": ""}, nobody]},
                          spec, TEAM, ["agent_1"])
    reply = parse_communicate({"messages": [one, nobody]}, spec, TEAM, ["agent_1"])
    assert said(reply) == [(("agent_1",), "hi")]  # the deliverable one is sent
    assert reply.notes == ["dropped receiver 'Charlie': not a teammate you may message",
                           "dropped message 2: receivers ['Charlie'] name no teammate you "
                           "may message"]
    with pytest.raises(ReplyError, match=re.escape("missing field 'messages'")):
        parse_communicate({"thoughts": "hm"}, spec, TEAM, ["agent_1"])


def test_fields_not_offered_are_ignored_and_noted():
    spec = communicate_spec("message", ("Bob",))
    reply = parse_communicate({"abstain": True, "role": "boss", "messages": [
        {"receivers": ["Bob"], "message": "hi"}]}, spec, TEAM, ["agent_1"])
    assert reply.abstain is False and reply.role is None
    assert reply.notes == ["ignored field 'abstain': not offered in this stage",
                           "ignored field 'role': not offered in this stage"]


def test_votes_map_to_candidate_ids():
    spec = communicate_spec("vote", (), candidates=("Alice", "Bob"))
    assert parse_communicate({"vote": "Bob"}, spec, TEAM, [], ["agent_0", "agent_1"]).vote \
        == "agent_1"
    with pytest.raises(ReplyError, match=re.escape("vote 'Charlie' is not one of Alice, Bob")):
        parse_communicate({"vote": "Charlie"}, spec, TEAM, [], ["agent_0", "agent_1"])


def test_intentions_and_claims_are_public():
    spec = communicate_spec("claim", ("Bob",))
    reply = parse_communicate({"role": " scout ", "message": "I scout"}, spec, TEAM, ["agent_1"])
    assert reply.role == "scout" and said(reply) == [("everyone", "I scout")]


def test_cached_specs_cannot_be_changed_by_a_caller():
    spec = act_spec(("A", "B"))
    spec.schema["properties"]["action"]["enum"].append("Z")
    again = act_spec(("A", "B"))
    assert again is spec  # cached...
    assert again.schema["properties"]["action"]["enum"] == ["A", "B"]  # ...and unchanged
    with pytest.raises(AttributeError):
        spec.hint = "anything"  # type: ignore[misc]


def test_a_message_budget_caps_the_messages_offered():
    spec = communicate_spec("message", ("Bob",), max_messages=1)
    assert spec.schema["properties"]["messages"]["maxItems"] == 1
    assert spec.fields.startswith('"messages": a list of one message, each with "receivers"')
    assert "separate message" not in spec.fields
    one = {"receivers": ["Bob"], "message": "hi"}
    assert said(parse_communicate({"messages": [one]}, spec, TEAM, ["agent_1"])) == [
        (("agent_1",), "hi")]
    with pytest.raises(ReplyError, match=re.escape("field 'messages': at most 1 message(s), "
                                                   "got 2")):
        parse_communicate({"messages": [one, one]}, spec, TEAM, ["agent_1"])
    with pytest.raises(ValueError, match=re.escape(
            f"max_messages must be 1 to {MAX_MESSAGES}, got 0")):
        communicate_spec("message", ("Bob",), max_messages=0)


def test_the_single_message_form_is_read_as_one_message_and_noted():
    """What prompt-mode models, and a reply cut inside its list (the first message's
    object is the first JSON object in the text), give."""
    spec = communicate_spec("message", ("Bob",))
    reply = parse_communicate({"receivers": ["Bob"], "message": "go"}, spec, TEAM, ["agent_1"])
    assert said(reply) == [(("agent_1",), "go")]
    assert reply.notes == ["reply in the single-message form (no 'messages' list) read as "
                           "one message"]
    with pytest.raises(ReplyError, match=re.escape(
            f"field 'message': String should have at most {MESSAGE_MAX_CHARS // MAX_MESSAGES} "
            "characters")):
        parse_communicate({"receivers": ["Bob"], "message": "x" * 150}, spec, TEAM, ["agent_1"])
