"""OpenAIBackend against the fault-injecting server: wire format, fallbacks, errors."""

from __future__ import annotations

import asyncio
import re

import pytest

from orgteams.agents.backends import BackendConfigError, BackendError, OpenAIBackend, Usage
from orgteams.agents.backends.base import Attempt

SCHEMA = {
    "title": "Act",
    "type": "object",
    "properties": {"action": {"type": "string", "enum": ["a", "b"]}},
    "required": ["action"],
}
MESSAGES = [{"role": "user", "content": "Pick a or b."}]


def make(server, **kwargs) -> OpenAIBackend:
    kwargs = {"timeout": 2.0, "max_retries": 1, "backoff": 0.01, **kwargs}
    return OpenAIBackend("fake-model", base_url=server.base_url, api_key="sk-test", **kwargs)


def test_ok_returns_parsed_reply_usage_and_raw(fault_server):
    backend = make(fault_server)
    reply = backend.complete(MESSAGES, schema=SCHEMA, seed=3)
    assert reply.text == '{"action": "a"}'
    assert reply.parsed == {"action": "a"}
    assert reply.usage == Usage(11, 5)
    assert reply.model == "fake-model"
    assert reply.raw["id"] == "chatcmpl-fault"
    assert not reply.cached and reply.latency > 0
    sent = fault_server.requests[0]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA
    assert sent["seed"] == 3 and sent["max_tokens"] == 256
    assert backend.mode == "json_schema"


def test_without_schema_parsed_is_none_and_no_response_format(fault_server):
    reply = make(fault_server).complete(MESSAGES)
    assert reply.parsed is None
    assert "response_format" not in fault_server.requests[0]


def test_auto_falls_back_to_json_object_and_remembers(fault_server):
    fault_server.mode = "reject_json_schema"
    backend = make(fault_server)
    assert backend.complete(MESSAGES, schema=SCHEMA).parsed == {"action": "a"}
    assert backend.mode == "json_object"
    formats = [r["response_format"]["type"] for r in fault_server.requests]
    # "not supported" is not retried: json_schema once, then json_object once.
    assert formats == ["json_schema", "json_object"]
    assert fault_server.requests[-1]["response_format"]["schema"] == SCHEMA
    backend.complete(MESSAGES, schema=SCHEMA)
    assert fault_server.requests[-1]["response_format"]["type"] == "json_object"
    assert len(fault_server.requests) == 3


def test_auto_falls_back_to_prompt_mode(fault_server):
    fault_server.mode = "reject_response_format"
    backend = make(fault_server)
    assert backend.complete(MESSAGES, schema=SCHEMA).parsed == {"action": "a"}
    assert backend.mode == "prompt"
    last = fault_server.requests[-1]
    assert "response_format" not in last
    assert last["messages"][-1]["role"] == "system"
    assert '"enum": ["a", "b"]' in last["messages"][-1]["content"]


def test_fixed_mode_does_not_fall_back(fault_server):
    fault_server.mode = "reject_json_schema"
    backend = make(fault_server, structured="json_schema")
    with pytest.raises(BackendConfigError, match=re.escape(
            "HTTP 500 from 'fake-model': structured='json_schema' is not supported by this "
            "server (1 validation error:")):
        backend.complete(MESSAGES, schema=SCHEMA)
    assert len(fault_server.requests) == 1 and backend.downgrades == []


def test_http500_raises_backend_error_after_bounded_retries(fault_server):
    fault_server.mode = "http500"
    backend = make(fault_server)
    with pytest.raises(BackendError) as info:
        backend.complete(MESSAGES)
    assert info.value.kind == "http" and info.value.status == 500
    assert info.value.reason == "HTTP 500: injected failure"
    assert len(fault_server.requests) == 2  # 1 try + max_retries=1


def test_transient_500_in_auto_mode_never_downgrades(fault_server):
    # A 500 that does not say "not supported" is a fault, not an answer about modes.
    fault_server.mode = "http500"
    backend = make(fault_server, max_retries=0)
    with pytest.raises(BackendError, match=re.escape("HTTP 500: injected failure")):
        backend.complete(MESSAGES, schema=SCHEMA)
    assert len(fault_server.requests) == 1
    assert backend.mode == "json_schema" and backend.downgrades == []
    fault_server.mode = "ok"
    reply = backend.complete(MESSAGES, schema=SCHEMA)
    assert backend.mode == "json_schema"
    assert [a.mode for a in reply.attempts] == ["json_schema"]


def test_timeout_raises_backend_error(fault_server):
    fault_server.mode = "timeout"
    fault_server.delay = 1.0
    backend = make(fault_server, timeout=0.2, max_retries=1)
    with pytest.raises(BackendError, match=re.escape("timeout after 0.2s x 2 attempts")) as info:
        backend.complete(MESSAGES)
    assert info.value.kind == "timeout"


def test_connection_refused_raises_backend_error():
    backend = OpenAIBackend(
        "m", base_url="http://127.0.0.1:9/v1", api_key="k", timeout=1.0, max_retries=0
    )
    with pytest.raises(BackendError, match=re.escape("connection failed to http://127.0.0.1:9/v1")):
        backend.complete(MESSAGES)


def test_invalid_json_keeps_text_and_parsed_none(fault_server):
    fault_server.mode = "invalid_json"
    reply = make(fault_server).complete(MESSAGES, schema=SCHEMA)
    assert reply.text == "Sure! I would pick a."
    assert reply.parsed is None


def test_async_complete_and_usage_sums(fault_server):
    backend = make(fault_server)

    async def run() -> list:
        return await asyncio.gather(*(backend.acomplete(MESSAGES, schema=SCHEMA) for _ in range(4)))

    replies = asyncio.run(run())
    assert all(r.parsed == {"action": "a"} for r in replies)
    assert sum((r.usage for r in replies), Usage()) == Usage(44, 20)
    # A second event loop gets a fresh async client.
    assert asyncio.run(run())[0].parsed == {"action": "a"}


def test_async_falls_back_like_sync(fault_server):
    fault_server.mode = "reject_json_schema"
    backend = make(fault_server)
    reply = asyncio.run(backend.acomplete(MESSAGES, schema=SCHEMA))
    assert reply.parsed == {"action": "a"} and backend.mode == "json_object"


def test_config_errors_are_exact(monkeypatch):
    with pytest.raises(BackendConfigError, match=re.escape("No model name: pass model=...")):
        OpenAIBackend()
    with pytest.raises(BackendConfigError, match=re.escape("No API key for api.openai.com")):
        OpenAIBackend("gpt-4o-mini")
    with pytest.raises(
        BackendConfigError,
        match=re.escape("structured must be 'auto' or one of json_schema, json_object, prompt"),
    ):
        OpenAIBackend("m", base_url="http://x/v1", structured="grammar")


@pytest.mark.parametrize(("env", "line"), [
    # each of these failed every request ("connection failed" after the retries) or, for
    # the last, raised httpx's InvalidURL traceback with the password on screen
    ({"ORGTEAMS_BASE_URL": "notaurl"}, "$ORGTEAMS_BASE_URL must be an http(s) URL such as "
                                       "http://localhost:8000/v1, got 'notaurl'"),
    ({"OPENAI_BASE_URL": "ftp://h/v1"}, "$OPENAI_BASE_URL must be an http(s) URL such as "
                                        "http://localhost:8000/v1, got 'ftp://h/v1'"),
    ({"ORGTEAMS_BASE_URL": "http://u:pw-secret@[::1"},
     "$ORGTEAMS_BASE_URL must be an http(s) URL such as http://localhost:8000/v1, got "
     "'http://***@[::1'"),
])
def test_a_base_url_that_is_no_http_url_is_one_line(monkeypatch, env, line):
    monkeypatch.setenv("ORGTEAMS_BASE_URL", "http://127.0.0.1:1/v1")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if "OPENAI_BASE_URL" in env:
        monkeypatch.delenv("ORGTEAMS_BASE_URL")
    with pytest.raises(BackendConfigError) as info:
        OpenAIBackend("m", api_key="k")
    assert str(info.value).startswith(line)


def test_an_http_base_url_with_a_port_or_ipv6_host_is_taken():
    for url in ("http://localhost:8000/v1", "https://[::1]:8443/v1", "http://h/v1"):
        assert OpenAIBackend("m", base_url=url, api_key="k").base_url == url


def test_config_from_environment(monkeypatch, fault_server):
    monkeypatch.setenv("ORGTEAMS_MODEL", "env-model")
    monkeypatch.setenv("ORGTEAMS_BASE_URL", fault_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key")
    backend = OpenAIBackend(max_retries=0)
    assert backend.model == "env-model" and backend.base_url == fault_server.base_url
    assert backend.complete(MESSAGES).model == "env-model"
    assert fault_server.auth_headers[-1] == "Bearer sk-env-key"


def test_client_errors_are_config_errors(fault_server):
    fault_server.mode = "reject_response_format"
    backend = make(fault_server, structured="json_object")
    with pytest.raises(BackendConfigError, match=re.escape("HTTP 400 from 'fake-model': ")):
        backend.complete(MESSAGES, schema=SCHEMA)


def test_repr_masks_key(fault_server):
    backend = make(fault_server)
    assert "sk-test" not in repr(backend)
    assert "api_key='***'" in repr(backend)


# ---- faults: every request is an Attempt, our retry policy, recorded downgrades ----

FAULT_RECORDS = {
    # mode: (BackendError.kind, Attempt.status, Attempt.error, reason start)
    "http500": ("http", 500, "InternalServerError", "HTTP 500: injected failure"),
    "http429": ("http", 429, "RateLimitError", "HTTP 429: rate limit (injected)"),
    "timeout": ("timeout", None, "DeadlineExceeded", "timeout after 0.2s x 3 attempts"),
    "truncated": ("protocol", None, "JSONDecodeError",
                  "unreadable reply body (JSONDecodeError: "),
    "non_json": ("protocol", None, "UnexpectedBody",
                 "unreadable reply body (UnexpectedBody: not a chat completion: '<html>"),
    "drop": ("connection", None, "APIConnectionError", "connection failed to http://127.0.0"),
}


@pytest.mark.parametrize("mode", sorted(FAULT_RECORDS))
@pytest.mark.parametrize("call", ["sync", "async"])
def test_each_fault_is_retried_and_every_attempt_recorded(fault_server, mode, call):
    fault_server.mode, fault_server.delay = mode, 1.0
    # Only the hang may time out: other replies get plenty of time on a busy machine.
    backend = make(fault_server, timeout=0.2 if mode == "timeout" else 10.0, max_retries=2)
    kind, status, error, reason = FAULT_RECORDS[mode]
    with pytest.raises(BackendError, match=re.escape(reason)) as info:
        if call == "sync":
            backend.complete(MESSAGES, schema=SCHEMA)
        else:
            asyncio.run(backend.acomplete(MESSAGES, schema=SCHEMA))
    exc = info.value
    assert exc.kind == kind
    assert len(fault_server.requests) == 3 == len(exc.attempts)  # ours: 1 + max_retries
    assert [(a.mode, a.status, a.kind, a.error) for a in exc.attempts] == [
        ("json_schema", status, kind, error)] * 3
    assert all(a.latency > 0 and not a.ok for a in exc.attempts)
    assert backend.mode == "json_schema" and backend.downgrades == []


@pytest.mark.parametrize("call", ["sync", "async"])
def test_a_redirect_loop_is_reported_as_redirects(fault_server, call):
    # "connection failed to ..." though the server answered each POST, with a 307 or 308
    # back to itself until httpx's limit (20 redirects: 21 requests an attempt)
    fault_server.mode = "redirect_loop"
    backend = make(fault_server, max_retries=1)
    with pytest.raises(BackendError) as info:
        if call == "sync":
            backend.complete(MESSAGES, schema=SCHEMA)
        else:
            asyncio.run(backend.acomplete(MESSAGES, schema=SCHEMA))
    assert str(info.value) == (f"too many redirects from {fault_server.base_url} "
                               "(a 307/308 loop: check the base URL)")
    assert info.value.kind == "connection"
    assert [(a.kind, a.error, a.detail) for a in info.value.attempts] == [
        ("connection", "APIConnectionError",
         "TooManyRedirects: Exceeded maximum allowed redirects.")] * 2
    assert len(fault_server.requests) == 2 * 21


def test_truncated_body_then_success_keeps_the_failed_attempt(fault_server):
    # The SDK's raw JSONDecodeError used to escape; now it is a retried, recorded fault.
    fault_server.mode = "chaos"
    fault_server.fault_rate, fault_server.faults = 1.0, ("truncated",)
    backend = make(fault_server)
    calls = []
    real = fault_server.draw

    def once() -> str:
        calls.append(1)
        return real() if len(calls) == 1 else "ok"

    fault_server.draw = once
    reply = backend.complete(MESSAGES, schema=SCHEMA)
    assert reply.parsed == {"action": "a"}
    assert [(a.kind, a.error) for a in reply.attempts] == [("protocol", "JSONDecodeError"),
                                                           (None, None)]
    assert fault_server.injected == [{"n": 0, "fault": "truncated"}]


def test_retry_after_header_sets_the_wait(fault_server, monkeypatch):
    from orgteams.agents.backends import retry

    waits: list[float] = []

    async def nap(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(retry, "nap", nap)  # the policy's wait between retries
    fault_server.mode = "http429"
    backend = make(fault_server, max_retries=2, backoff=5.0, max_backoff=5.0)
    with pytest.raises(BackendError):
        backend.complete(MESSAGES)
    assert waits == [0.005, 0.005]  # the server's retry-after-ms, not our 5 s backoff


def test_sdk_never_retries_on_its_own(fault_server):
    fault_server.mode = "http500"
    backend = make(fault_server, max_retries=0)
    with pytest.raises(BackendError):
        backend.complete(MESSAGES)
    assert len(fault_server.requests) == 1
    assert backend._new_client().max_retries == 0


def test_llama_cpp_json_schema_rejection_downgrades_once_and_records_it(fault_server):
    fault_server.mode = "reject_json_schema"
    backend = make(fault_server)
    reply = backend.complete(MESSAGES, schema=SCHEMA)
    first, second = reply.attempts
    assert (first.mode, first.status, first.kind, first.downgrade) == (
        "json_schema", 500, "unsupported", "json_object")
    assert "Input should be 'text' or 'json_object'" in first.detail
    assert (second.mode, second.status, second.ok) == ("json_object", 200, True)
    assert backend.downgrades == [{"from": "json_schema", "to": "json_object", "status": 500,
                                   "detail": first.detail}]
    again = backend.complete(MESSAGES, schema=SCHEMA).attempts
    assert again == [Attempt("json_object", 200, latency=again[0].latency)]
    assert len(backend.downgrades) == 1


def test_retry_settings_from_the_environment(monkeypatch, fault_server):
    monkeypatch.setenv("ORGTEAMS_TIMEOUT", "0.5")
    monkeypatch.setenv("ORGTEAMS_MAX_RETRIES", "0")
    backend = OpenAIBackend("m", base_url=fault_server.base_url)
    assert (backend.timeout, backend.max_retries) == (0.5, 0)
    monkeypatch.setenv("ORGTEAMS_MAX_RETRIES", "many")
    with pytest.raises(BackendConfigError) as info:
        OpenAIBackend("m", base_url=fault_server.base_url)
    assert str(info.value) == ("$ORGTEAMS_MAX_RETRIES must be a whole number from 0 to 10, "
                               "got 'many'")


def test_a_reply_nested_past_the_recursion_limit_is_invalid_not_a_crash(fault_server):
    # json's RecursionError escaped parse_json_reply and ended the run with a traceback
    fault_server.reply_text = '{"action": ' + "[" * 50_000 + "]" * 50_000 + "}"
    reply = make(fault_server).complete(MESSAGES, schema=SCHEMA)
    assert reply.parsed is None and reply.text.startswith('{"action": [[[')


def test_a_body_nested_past_the_recursion_limit_is_a_protocol_failure(fault_server):
    # the SDK's own decoding of the body raised it: a traceback, not a failed request
    fault_server.mode = "deep_json"
    with pytest.raises(BackendError) as info:
        make(fault_server, max_retries=0).complete(MESSAGES, schema=SCHEMA)
    attempt = info.value.attempts[-1]
    assert (attempt.kind, attempt.error) == ("protocol", "RecursionError")
    assert attempt.detail == ("RecursionError: maximum recursion depth exceeded while "
                              "decoding a JSON array from a unicode string")


def test_a_body_past_the_cap_is_a_protocol_failure_read_no_further(fault_server, monkeypatch):
    # the SDK read any body whole: 300 MB took 1 GB of memory per call, a team's in parallel
    monkeypatch.setattr("orgteams.agents.backends.openai_backend.MAX_BODY_BYTES", 100_000)
    fault_server.mode, fault_server.big_size = "big_reply", 200_000
    with pytest.raises(BackendError) as info:
        make(fault_server, max_retries=0).complete(MESSAGES, schema=SCHEMA)
    attempt = info.value.attempts[-1]
    assert (attempt.kind, attempt.error, attempt.detail) == (
        "protocol", "UnexpectedBody", "UnexpectedBody: a body of more than 100,000 bytes")
    fault_server.mode = "ok"  # a body within the cap is read as before
    assert make(fault_server).complete(MESSAGES, schema=SCHEMA).parsed == {"action": "a"}


def test_a_compressed_body_is_asked_away_and_refused(fault_server):
    # a gzip bomb (1 MB on the wire) unpacked to 1 GB in memory before we saw a byte
    fault_server.mode = "gzip"
    with pytest.raises(BackendError) as info:
        make(fault_server, max_retries=0).complete(MESSAGES, schema=SCHEMA)
    assert fault_server.accept_encodings == ["identity"]
    attempt = info.value.attempts[-1]
    assert (attempt.kind, attempt.detail) == (
        "protocol", "UnexpectedBody: a gzip-encoded body (we ask for identity: unpacked, "
                    "it has no bound)")


@pytest.mark.parametrize(("name", "raw", "wanted"), [
    ("ORGTEAMS_MAX_RETRIES", "-1", "a whole number from 0 to 10"),
    ("ORGTEAMS_MAX_RETRIES", "1.5", "a whole number from 0 to 10"),
    # no bound: 1000000000 retried a dead server for ever, a call never took its fallback
    ("ORGTEAMS_MAX_RETRIES", "11", "a whole number from 0 to 10"),
    ("ORGTEAMS_MAX_RETRIES", "1000000000", "a whole number from 0 to 10"),
    ("ORGTEAMS_TIMEOUT", "0", "a number of seconds > 0"),
    ("ORGTEAMS_TIMEOUT", "-3", "a number of seconds > 0"),
    ("ORGTEAMS_TIMEOUT", "nan", "a number of seconds > 0"),
    ("ORGTEAMS_TIMEOUT", "inf", "a number of seconds > 0"),
    ("ORGTEAMS_TIMEOUT", "soon", "a number of seconds > 0")])
def test_a_bad_retry_setting_in_the_environment_names_its_variable(monkeypatch, fault_server,
                                                                   name, raw, wanted):
    # -1 and 0 said "need timeout > 0, max_retries >= 0 and 0 <= backoff <= max_backoff;
    # got timeout=30.0, max_retries=-1, ...": not which variable
    monkeypatch.setenv(name, raw)
    with pytest.raises(BackendConfigError) as info:
        OpenAIBackend("m", base_url=fault_server.base_url)
    assert str(info.value) == f"${name} must be {wanted}, got {raw!r}"


@pytest.mark.parametrize(("usage", "counted"), [
    ({"prompt_tokens": 7, "completion_tokens": "x"}, Usage(7, 0)),
    ({"prompt_tokens": -5, "completion_tokens": 3}, Usage(0, 3)),
    ({"prompt_tokens": 12.0, "completion_tokens": None}, Usage(12, 0)),
    ({"prompt_tokens": True, "completion_tokens": [1]}, Usage(0, 0)),
    ({"prompt_tokens": {"n": 1}}, Usage(0, 0)),
    ("lots", Usage(0, 0))])
def test_a_usage_that_is_no_count_is_zero_not_a_crash(fault_server, usage, counted):
    # completion_tokens "x" was int("x"): a ValueError traceback out of orgteams run;
    # a negative count lowered the run's spend
    fault_server.usage_body = usage
    reply = make(fault_server).complete(MESSAGES, schema=SCHEMA)
    assert reply.usage == counted
    assert reply.parsed == {"action": "a"}
    kept = reply.raw["usage"]  # what the server sent stays in the log
    assert kept == usage if not isinstance(usage, dict) else {k: kept[k] for k in usage} == usage


@pytest.mark.parametrize(("choices", "error"), [
    (["hi sk-test"], "a choice without a message: 'hi ***'"),
    ([{"index": 0}], "a choice without a message: "),
    ([{"message": {"content": {"action": "a"}}}], "the message content is a dict, not text"),
    ([{"message": {"content": 7}}], "the message content is a int, not text")])
def test_a_choice_that_is_no_chat_message_is_a_failed_call_not_a_crash(fault_server, choices,
                                                                       error):
    # each was an AttributeError or TypeError traceback out of orgteams run
    fault_server.choices_body = choices
    with pytest.raises(BackendError) as info:
        make(fault_server).complete(MESSAGES, schema=SCHEMA)
    assert f"not a chat completion: {error}" in str(info.value)
    assert "sk-test" not in str(info.value)


def test_content_parts_are_read_as_their_text(fault_server):
    fault_server.choices_body = [{"message": {"role": "assistant", "content": [
        {"type": "text", "text": '{"action": '}, {"type": "image_url", "image_url": {}},
        {"type": "text", "text": '"b"}'}]}}]
    reply = make(fault_server).complete(MESSAGES, schema=SCHEMA)
    assert reply.text == '{"action": "b"}' and reply.parsed == {"action": "b"}


@pytest.mark.parametrize("retries", [-1, 11])
def test_max_retries_past_its_bound_is_refused(fault_server, retries):
    with pytest.raises(BackendConfigError) as info:
        OpenAIBackend("m", base_url=fault_server.base_url, max_retries=retries)
    assert str(info.value) == (
        f"need timeout > 0, 0 <= max_retries <= 10 and 0 <= backoff <= max_backoff; got "
        f"timeout=30.0, max_retries={retries}, backoff=0.5, max_backoff=8.0")
    assert OpenAIBackend("m", base_url=fault_server.base_url, max_retries=10).max_retries == 10
