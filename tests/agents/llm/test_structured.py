"""The one structured-call loop and its step record (agents, Critic, Coordinator share it)."""

from __future__ import annotations

import asyncio
import re

import pytest
from pydantic import BaseModel, Field

from orgteams.agents.backends import BackendError, CachedBackend, ScriptedBackend, Usage
from orgteams.agents.backends.base import CONTROL_CHARACTERS_READ, Attempt, Completion
from orgteams.agents.llm.schemas import ReplyError
from orgteams.agents.llm.structured import astructured_call, pydantic_parser, structured_call
from orgteams.agents.llm.tokens import count_tokens
from orgteams.agents.records import DecisionRecord, StepRecord


class Verdict(BaseModel):
    verdict: str = Field(max_length=10)


PROMPT = [{"role": "user", "content": "judge"}]


def correction(error: str) -> str:
    return f"fix: {error}"


def call(backend, **kwargs):
    return structured_call(backend, PROMPT, schema=Verdict.model_json_schema(),
                           parse=pydantic_parser(Verdict), correction=correction, **kwargs)


def test_invalid_reply_is_explained_to_the_model_and_retried():
    backend = ScriptedBackend(["no json here", {"verdict": "far too long a verdict"},
                               {"verdict": "ok"}])
    value, step = call(backend, max_retries=2)
    assert value == Verdict(verdict="ok") and step.fallback is None
    assert step.errors == ["it is not a JSON object",
                           "field 'verdict': String should have at most 10 characters"]
    assert step.retries == 2 and step.parsed == {"verdict": "ok"}
    assert backend.calls[1][-1] == {"role": "user", "content": "fix: it is not a JSON object"}
    assert backend.calls[1][-2] == {"role": "assistant", "content": "no json here"}
    assert step.prompt == PROMPT and len(step.replies) == 3
    assert step.usage.completion_tokens == sum(count_tokens(r) for r in step.replies)


def test_exhausted_retries_and_backend_errors_are_recorded_fallbacks():
    value, step = call(ScriptedBackend(["x", "y"]), max_retries=1)
    assert value is None
    assert step.fallback == "invalid reply after 2 attempt(s): it is not a JSON object"
    failed = Attempt("json_schema", 500, "http", "InternalServerError", "boom")
    error = BackendError("HTTP 500: boom", kind="http", status=500, attempts=[failed])
    value, step = call(ScriptedBackend([error]))
    assert value is None and step.error == "http: HTTP 500: boom"
    assert step.fallback == "backend error (http: HTTP 500: boom)"
    assert step.attempts == [failed] and step.replies == []


class CutBackend(ScriptedBackend):
    """Replies as a server that stopped at its token limit (``finish_reason: length``)."""

    def _finish(self, reply, messages, schema, started):
        done = super()._finish(reply, messages, schema, started)
        return Completion(done.text, done.parsed, done.usage, 0.0,
                          {"choices": [{"finish_reason": "length"}]}, model="m")


def test_a_reply_cut_at_the_token_limit_says_so_and_its_inner_object_is_not_read():
    cut = '{"verdict": "ok", "why": {"a": 1}, "more": "and th'
    value, step = call(CutBackend([cut, cut]), max_retries=1)
    error = ("it is not a JSON object (the reply was cut at the token limit after "
             f"{count_tokens(cut)} tokens, before the object closed: answer shorter)")
    assert value is None and step.errors == [error, error]
    assert step.fallback == f"invalid reply after 2 attempt(s): {error}"


def test_raw_control_characters_are_read_and_recorded_as_repaired():
    value, step = call(ScriptedBackend(['{"verdict": "o\nk"}']))
    assert value == Verdict(verdict="o\nk") and step.repaired == [CONTROL_CHARACTERS_READ]
    value, step = call(ScriptedBackend(['{"verdict": "ok"}']))
    assert value == Verdict(verdict="ok") and step.repaired == []


def test_a_check_after_validation_asks_for_a_correction_too():
    def check(reply: Verdict) -> str:
        if reply.verdict != "ok":
            raise ReplyError(f"verdict {reply.verdict!r} is not ok")
        return reply.verdict.upper()

    backend = ScriptedBackend([{"verdict": "bad"}, {"verdict": "ok"}])
    value, step = structured_call(backend, PROMPT, schema={}, parse=pydantic_parser(Verdict, check),
                                  correction=correction)
    assert value == "OK" and step.errors == ["verdict 'bad' is not ok"]


def test_cache_hits_are_counted_and_cost_nothing(tmp_path):
    backend = CachedBackend(ScriptedBackend([{"verdict": "ok"}]), tmp_path / "c.sqlite")
    (_, first), (value, again) = call(backend), call(backend)
    backend.close()
    assert value == Verdict(verdict="ok")
    assert (first.cached_calls, first.cached_usage) == (0, Usage())
    assert again.cached_calls == 1 and again.cached_usage == again.usage == first.usage


def test_the_async_loop_fills_the_callers_record():
    record = DecisionRecord("act", "agent_0", 3)
    value, step = asyncio.run(astructured_call(
        ScriptedBackend([{"verdict": "ok"}], model="m1"), PROMPT, schema={},
        parse=pydantic_parser(Verdict), correction=correction, record=record))
    assert step is record and value.verdict == "ok"
    assert (record.model, record.replies, record.round) == ("m1", ['{"verdict": "ok"}'], 3)


def test_the_sync_wrapper_refuses_a_running_loop_and_bad_retries():
    async def inside():
        call(ScriptedBackend([{"verdict": "ok"}]))

    with pytest.raises(RuntimeError, match=re.escape(
            "structured_call was called inside a running event loop; await "
            "astructured_call(...) instead")):
        asyncio.run(inside())
    with pytest.raises(ValueError, match=re.escape("max_retries must be >= 0, got -1")):
        call(ScriptedBackend([]), max_retries=-1)


def test_a_decision_record_is_a_step_record_and_reads_back_from_its_log_line():
    record = DecisionRecord("communicate", "agent_1", 4, model="m", replies=["{}"],
                            usage=Usage(10, 2), attempts=[Attempt("json_object", 200)],
                            notes=["dropped receiver 'Zed'"], options=["wait"])
    assert isinstance(record, StepRecord)
    fields = record.log_fields()
    assert "agent" not in fields and fields["usage"] == {"prompt_tokens": 10,
                                                         "completion_tokens": 2}
    line = {"round": 4, "agent": "agent_1", "phase": "communicate", "message": "hi", **fields}
    assert DecisionRecord.from_log(line) == record


def test_an_old_log_line_reads_back_with_defaults_and_a_non_decision_line_is_refused():
    old = {"round": 0, "agent": "agent_0", "phase": "act", "action": "wait",
           "usage": {"prompt_tokens": 5, "completion_tokens": 1}, "fallback": None}
    record = DecisionRecord.from_log(old)
    assert record.usage == Usage(5, 1) and record.cached_usage == Usage()
    assert record.attempts == [] and record.options == []
    with pytest.raises(ValueError, match=re.escape("not a decision line: no phase, agent")):
        DecisionRecord.from_log({"round": 1, "record": "event"})
