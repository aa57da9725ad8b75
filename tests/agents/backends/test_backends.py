"""Backend contract pieces: Usage, parse_json_reply, scripted double, cache, prices, factory."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import Literal

import pydantic
import pytest

from orgteams.agents.backends import (
    BackendError,
    CachedBackend,
    Completion,
    OpenAIBackend,
    ScriptedBackend,
    ScriptExhaustedError,
    Usage,
    cost,
    make_backend,
    parse_json_reply,
    price_of,
    read_json_reply,
)
from orgteams.agents.backends.base import CONTROL_CHARACTERS_READ
from orgteams.agents.backends.pricing import Price
from orgteams.agents.backends.scripted import minimal_instance
from orgteams.agents.llm.tokens import count_tokens

MESSAGES = [{"role": "system", "content": "You are agent 1."}, {"role": "user", "content": "Go"}]
SCHEMA = {"type": "object", "properties": {"action": {"enum": ["a", "b"]}}}


class Act(pydantic.BaseModel):
    action: Literal["move", "wait"]
    target: str
    steps: int
    note: str | None = None


def test_usage_adds_and_totals():
    assert Usage(1, 2) + Usage(10, 20) == Usage(11, 22)
    assert sum([Usage(1, 1)] * 3, Usage()).total == 6


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Here you go:\n```\n{"a": [1, 2]}\n```\nDone.', {"a": [1, 2]}),
        ('I choose {"a": "x"} because {it} is best', {"a": "x"}),
        ('{not json} then {"b": 2}', {"b": 2}),
        ("[1, 2]", None),
        ("no json here", None),
        ('{"a": 1', None),
        # An object nested in a broken one is not the reply (a cut or a syntax error):
        ('{"candidates": [{"name": "a", "rationale": "b"}, {"na', None),
        ('{"candidates": [{"name": "a"}], "pick": 0,, }', None),
        ('He said "hi. {"a": 1}', {"a": 1}),  # quotes in prose do not hide the object
    ],
)
def test_parse_json_reply(text, expected):
    assert parse_json_reply(text) == expected


def test_raw_control_characters_in_strings_are_read_and_noted():
    # What SmolLM2 sent under llama-cpp-python's schema grammar (its string rule lets a
    # raw newline through): strict JSON refuses it, and the old reader then took the
    # first inner object, {"name": ..., "rationale": ...}, for the whole reply.
    text = ('{ "candidates": [{"name": "leader_reports", "rationale": "cut broadcast '
            'reports"}, {"roles": { "anyOf": "][0] }}, { ","}\n{":"None, "}}]}')
    value, notes = read_json_reply(text)
    assert value == {"candidates": [
        {"name": "leader_reports", "rationale": "cut broadcast reports"},
        {"roles": {"anyOf": "][0] }}, { ", "}\n{": "None, "}}]}
    assert notes == [CONTROL_CHARACTERS_READ] == [
        "raw control characters (newlines, tabs) inside JSON strings read as they are"]
    assert read_json_reply('{"a": "x"}') == ({"a": "x"}, [])
    assert read_json_reply('{"a": "x\ny"') == (None, [])


def test_completion_round_trips_through_dict():
    c = Completion("t", {"a": 1}, Usage(3, 4), 0.5, {"id": "x"}, model="m")
    assert Completion.from_dict(c.to_dict()) == c


def test_scripted_replies_in_order_then_raises():
    backend = ScriptedBackend(["first", {"action": "b"}])
    assert backend.complete(MESSAGES).text == "first"
    second = backend.complete(MESSAGES, schema=SCHEMA)
    assert second.text == '{"action": "b"}' and second.parsed == {"action": "b"}
    with pytest.raises(
        ScriptExhaustedError,
        match=re.escape(
            "ScriptedBackend has 2 replies but was called 3 times; add replies or pass cycle=True"
        ),
    ):
        backend.complete(MESSAGES)
    assert len(backend.calls) == 3


def test_scripted_cycle_and_rule_and_errors():
    cyc = ScriptedBackend(["x", "y"], cycle=True)
    assert [cyc.complete(MESSAGES).text for _ in range(5)] == ["x", "y", "x", "y", "x"]
    rule = ScriptedBackend(lambda msgs, schema: {"n": len(msgs), "schema": schema is not None})
    assert rule.complete(MESSAGES, schema=SCHEMA).parsed == {"n": 2, "schema": True}
    failing = ScriptedBackend([BackendError("server down", kind="scripted"), "ok"])
    with pytest.raises(BackendError, match="server down"):
        failing.complete(MESSAGES)
    assert failing.complete(MESSAGES).text == "ok"


def test_scripted_usage_uses_the_token_counter():
    reply = ScriptedBackend(["hello there"]).complete(MESSAGES)
    assert reply.usage == Usage(
        count_tokens("You are agent 1.") + count_tokens("Go"), count_tokens("hello there")
    )
    assert reply.model == "scripted" and reply.parsed is None


def test_scripted_default_answers_schema_with_minimal_instance():
    schema = Act.model_json_schema()
    assert minimal_instance(schema) == {"action": "move", "target": "", "steps": 0, "note": None}
    assert ScriptedBackend().complete(MESSAGES, schema=schema).parsed["action"] == "move"


def test_scripted_latency_is_concurrent_in_async():
    backend = ScriptedBackend(["r"], cycle=True, latency=0.2)

    async def run():
        return await asyncio.gather(*(backend.acomplete(MESSAGES) for _ in range(10)))

    started = time.perf_counter()
    replies = asyncio.run(run())
    assert time.perf_counter() - started < 1.0  # 10 x 0.2 s overlapped, not 2 s
    assert all(r.latency >= 0.2 for r in replies)


def test_scripted_rejects_bad_arguments():
    with pytest.raises(ValueError, match=re.escape("latency must be >= 0 seconds, got -1")):
        ScriptedBackend(["x"], latency=-1)
    with pytest.raises(ValueError, match=re.escape("cycle=True needs at least one reply")):
        ScriptedBackend([], cycle=True)


def test_cache_hits_misses_and_survives_restart(tmp_path):
    path = tmp_path / "sub" / "cache.sqlite"
    inner = ScriptedBackend(["one", "two", "three"])
    cached = CachedBackend(inner, path)
    first = cached.complete(MESSAGES, schema=SCHEMA, seed=1)
    again = cached.complete(MESSAGES, schema=SCHEMA, seed=1)
    assert (first.text, first.cached) == ("one", False)
    assert (again.text, again.cached, again.latency) == ("one", True, 0.0)
    assert again.usage == first.usage
    # Any key field changes the key.
    assert cached.complete(MESSAGES, schema=SCHEMA, seed=2).text == "two"
    assert cached.complete(MESSAGES, schema=None, seed=1).text == "three"
    assert (cached.hits, cached.misses) == (1, 3)
    cached.close()

    reopened = CachedBackend(ScriptedBackend([]), path)  # an empty script: must not be called
    assert reopened.complete(MESSAGES, schema=SCHEMA, seed=2).text == "two"
    assert (reopened.hits, reopened.misses) == (1, 0)
    assert reopened.model == "scripted" and reopened.name == "cached:scripted"
    reopened.close()


def test_cache_does_not_store_errors(tmp_path):
    cached = CachedBackend(ScriptedBackend([BackendError("down"), "fine"]), tmp_path / "c.db")
    with pytest.raises(BackendError):
        cached.complete(MESSAGES)
    assert cached.complete(MESSAGES).text == "fine"


def test_cache_is_thread_and_async_safe(tmp_path):
    inner = ScriptedBackend(lambda msgs, schema: msgs[-1]["content"].upper())
    cached = CachedBackend(inner, tmp_path / "c.db")
    prompts = [[{"role": "user", "content": f"p{i % 5}"}] for i in range(40)]
    results: list[str] = []

    def worker(batch):
        results.extend(cached.complete(m).text for m in batch)

    threads = [threading.Thread(target=worker, args=(prompts[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    async def run():
        return await asyncio.gather(*(cached.acomplete(m) for m in prompts))

    async_texts = [c.text for c in asyncio.run(run())]
    assert sorted(results) == sorted(m[0]["content"].upper() for m in prompts)
    assert async_texts == [m[0]["content"].upper() for m in prompts]
    # Threads may race on the same new key (both miss); every miss reaches inner once.
    assert cached.hits + cached.misses == 80
    assert cached.misses == len(inner.calls) and 5 <= cached.misses <= 20


def test_prices_known_prefix_and_unknown():
    assert price_of("gpt-4o-mini") == Price(0.15, 0.60)
    assert price_of("gpt-4o-mini-2024-07-18") == Price(0.15, 0.60)
    assert price_of("gpt-4o-2024-08-06") == Price(2.50, 10.00)
    assert price_of("openai/GPT-4.1") == Price(2.00, 8.00)
    assert cost("gpt-4o", Usage(1_000_000, 100_000)) == pytest.approx(3.50)
    assert cost("smollm2-135m-instruct", Usage(500, 50)) == 0.0
    assert cost("scripted", Usage(5, 5)) == 0.0
    assert cost("my-finetune", Usage(5, 5)) is None
    assert cost("gpt-4.10", Usage(5, 5)) is None  # a prefix must end at a boundary


def test_make_backend_specs(tmp_path):
    assert isinstance(make_backend("scripted"), ScriptedBackend)
    backend = make_backend({"backend": "openai", "model": "gpt-x", "base_url": "http://h/v1"})
    assert isinstance(backend, OpenAIBackend) and backend.model == "gpt-x"
    from_dict = make_backend(
        {
            "backend": "scripted",
            "replies": ["hi"],
            "model": "s2",
            "cache": str(tmp_path / "c.db"),
        }
    )
    assert isinstance(from_dict, CachedBackend) and from_dict.model == "s2"
    assert from_dict.complete(MESSAGES).text == "hi"


@pytest.fixture
def _fake_openai_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")


def test_make_backend_errors_are_exact(_fake_openai_key):
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Unknown backend 'scriptd'. Did you mean 'scripted'? Known: local, openai, scripted"
        ),
    ):
        make_backend("scriptd")
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Backend spec needs a 'backend' key (one of local, openai, scripted); "
            "got keys ['model']"
        ),
    ):
        make_backend({"model": "x"})
    with pytest.raises(TypeError, match=re.escape("Backend spec must be a str or dict, got int")):
        make_backend(3)
