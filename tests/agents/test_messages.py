"""TeamMessage: the one message type, from the member that speaks to the overlay and log."""

import dataclasses
import re

import pytest

from orgteams.agents.messages import EVERYONE, TeamMessage
from orgteams.envs.render.overlay import Overlay


def test_message_is_frozen_and_normalizes_receivers():
    m = TeamMessage("agent_0", ["agent_1", "agent_2"], "hi", round=3, stage=1)
    assert m.receivers == ("agent_1", "agent_2")
    assert m.receivers_json() == ["agent_1", "agent_2"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.text = "changed"  # type: ignore[misc]
    assert TeamMessage("agent_0", EVERYONE, "hi").receivers_json() == "everyone"


def test_audience_is_delivered_else_named_else_everyone():
    named = TeamMessage("agent_0", ("agent_1", "agent_3"), "hi")
    assert named.audience == ("agent_1", "agent_3")
    routed = dataclasses.replace(named, delivered=("agent_1",))
    assert routed.audience == ("agent_1",) and routed.receivers == ("agent_1", "agent_3")
    assert TeamMessage("agent_0", EVERYONE, "hi").audience == ()
    assert TeamMessage("agent_0", EVERYONE, "hi").addressed_to("agent_7")
    assert not named.addressed_to("agent_2")


def test_silent_turn_and_bad_input():
    assert TeamMessage("agent_0", (), abstained=True).silent
    with pytest.raises(ValueError, match=re.escape(
            "receivers must be a tuple of agent names or 'everyone', got 'all'")):
        TeamMessage("agent_0", "all", "hi")
    with pytest.raises(ValueError, match=re.escape(
            "message kind 'note' must be one of claim, release, found, assign, done, status, "
            "correct, text")):
        TeamMessage("agent_0", EVERYONE, "hi", "note")


def test_overlay_draws_the_same_message_object():
    overlay = Overlay()
    m = TeamMessage("agent_1", EVERYONE, "on my way", round=2, delivered=("agent_0",))
    overlay.say(m)
    assert overlay.latest["agent_1"] is m and list(overlay.log) == [m]


def test_status_and_correct_render_as_short_sentences():
    status = TeamMessage.structured("agent_1", "everyone", "status",
                                    {"doing": "grab:cupcake_2", "holding": ("apple_1",)})
    assert status.text == "doing grab cupcake_2, holding apple_1"
    correct = TeamMessage.structured("agent_1", ("agent_0",), "correct",
                                     {"agent": "agent_1", "action": "explore:kitchen",
                                      "reason": "explored already"})
    assert correct.text == "correct agent_1: explore kitchen (explored already)"


def test_said_id_is_one_object_for_equal_things_said_while_any_is_kept():
    import gc

    M = TeamMessage  # noqa: N806 - short

    a = M.structured("agent_1", "everyone", "status", {"doing": "wait", "holding": ()})
    again = M("agent_1", ("agent_2",), "other text", "status", round=4,
              content={"holding": (), "doing": "wait"})  # other receivers, round, order
    other = M.structured("agent_1", "everyone", "status", {"doing": "wait", "holding": ("x",)})
    assert a.said_id is again.said_id and a.said_id is not other.said_id
    heard = {a.said_id}  # a reader's memory keeps it: a repeat made later is found
    del a, again
    gc.collect()
    later = M.structured("agent_1", "everyone", "status", {"doing": "wait", "holding": ()})
    assert later.said_id in heard and other.said_id not in heard
    # content that cannot be hashed: said itself (a reader's set refuses it, as before)
    odd = M("agent_1", EVERYONE, "x", "found", content={"object": ["a", "list"]})
    assert odd.said_id == odd.said


def test_speaks_for_and_doing_read_what_planners_take_from_a_message():
    claim = TeamMessage.structured("agent_0", ("agent_1",), "claim",
                                   {"object": "cupcake_2", "tick": 3, "for": "agent_4"})
    relay = TeamMessage.structured("agent_0", ("agent_1",), "found",
                                   {"object": "apple_1", "location": "fridge", "by": "agent_5"})
    own = TeamMessage.structured("agent_0", EVERYONE, "claim", {"room": "kitchen"})
    assert (claim.speaks_for, relay.speaks_for, own.speaks_for) == (
        "agent_4", "agent_5", "agent_0")
    status = TeamMessage.structured("agent_2", EVERYONE, "status",
                                    {"doing": "grab:cupcake_2", "holding": ()})
    idle = TeamMessage.structured("agent_2", EVERYONE, "status", {"doing": "wait"})
    assert (status.doing, idle.doing, own.doing) == (
        ("grab", "cupcake_2"), ("wait", ""), ("", ""))
    # a copy with other content reads its own content, not the original's cached reading
    assert dataclasses.replace(status, content={"doing": "explore:kitchen"}).doing == (
        "explore", "kitchen")
