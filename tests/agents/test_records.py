"""Decision records: their zero usage is one shared frozen value, never changed; a
fresh record is what `__init__` makes."""

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


def test_a_fresh_record_is_what_init_makes():
    for parsed in (None, {"action": "wait"}):
        made = DecisionRecord("act", "agent_0", 3, model="planner", parsed=parsed)
        fresh = DecisionRecord.fresh("act", "agent_0", 3, "planner", parsed)
        assert fresh == made and repr(fresh) == repr(made)
        assert list(vars(fresh)) == list(vars(made))  # no field missed, same order
        assert [type(v) for v in vars(fresh).values()] == [type(v) for v in vars(made).values()]
        assert (fresh.usage, fresh.cached_usage) == (made.usage, made.cached_usage)
        assert fresh.usage is made.usage  # the one shared frozen zero
        assert all(getattr(fresh, k) is not getattr(made, k) for k, v in vars(made).items()
                   if isinstance(v, list))  # lists of its own, never shared
