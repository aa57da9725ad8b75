"""Decision records: their zero usage is one shared frozen value, never changed."""

from __future__ import annotations

from dataclasses import asdict

from orgteams.agents.backends.base import Completion, Usage
from orgteams.agents.messages import TeamMessage
from orgteams.agents.records import DecisionRecord, MessageLine


def test_records_share_a_zero_usage_that_adding_replaces_never_changes():
    a, b = DecisionRecord("act", "agent_0", 1), DecisionRecord("act", "agent_1", 1)
    a.add(Completion("{}", {}, Usage(3, 4), 0.5, None, cached=True))
    a.usage += Usage(1, 0)
    assert (a.usage, a.cached_usage) == (Usage(4, 4), Usage(3, 4))
    assert (b.usage, b.cached_usage) == (Usage(), Usage())  # untouched by a's calls
    assert asdict(b)["usage"] == {"prompt_tokens": 0, "completion_tokens": 0}


def test_a_later_message_line_carries_the_call_without_its_usage():
    call = DecisionRecord("communicate", "agent_0", 2, usage=Usage(5, 6), replies=["x"])
    line = MessageLine.sent(call, TeamMessage("agent_0", "everyone", "hi"), round=2,
                            agent="agent_0", first=False)
    assert (line.call.usage, line.call.replies, call.usage) == (Usage(), [], Usage(5, 6))
    assert "usage" not in line.to_dict() and line.to_dict()["message"] == "hi"
