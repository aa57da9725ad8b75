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
