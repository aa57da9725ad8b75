"""Huge replies and error bodies are cheap, capped and stored once (issue 24).

Before: scrubbing was quadratic on text without ``://`` (2 MB took 675 s), a 1 MB reply
with ``--cache`` hung an episode for minutes, and a reply was stored twice (as the
text and again inside ``raw``). Now only a capped start of any server text is
scanned, the reply keeps :data:`MAX_REPLY_CHARS` characters and a note of its full
length, error details keep :data:`MAX_DETAIL_CHARS`, and ``raw`` leaves the text out.

The time limits are "must finish" guards with generous slack for a busy machine
(``GUARD`` seconds; these take well under a second here), not performance claims:
benchmarks/llm/scrub_scaling.py measures the scaling.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time

import pytest

from orgteams.agents.backends import (
    BackendError,
    CachedBackend,
    OpenAIBackend,
    ScriptedBackend,
)
from orgteams.agents.backends.openai_wire import MAX_RAW_CHARS
from orgteams.agents.backends.redact import MAX_REPLY_CHARS, scrub_text
from orgteams.agents.backends.retry import MAX_DETAIL_CHARS
from orgteams.cli.main import main

pytest.importorskip("openai")

GUARD = 10.0
SECRET = "Bearer abcdefgh12345 "  # at the start: the kept part is still scrubbed
SIZES = [1_000_000, 10_000_000]


@pytest.mark.parametrize("size", SIZES)
def test_a_huge_reply_is_cut_scrubbed_and_cached_once(fault_server, tmp_path, size):
    fault_server.reply_text = SECRET + "a" * size  # no "://": the old quadratic case
    backend = OpenAIBackend("fake-model", base_url=fault_server.base_url, api_key="k",
                            max_retries=0)
    cached = CachedBackend(backend, tmp_path / "cache.sqlite")
    messages = [{"role": "user", "content": "x"}]
    started = time.monotonic()
    live = cached.complete(messages)
    assert time.monotonic() - started < GUARD  # must finish
    again = cached.complete(messages)
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:
        (stored,) = db.execute("SELECT completion FROM completions").fetchone()
    cached.close()
    note = f" [reply cut at {MAX_REPLY_CHARS:,} characters; it had {size + len(SECRET):,}]"
    # the first MAX_REPLY_CHARS characters, scrubbed (the mask is shorter than the secret)
    assert live.text == "*** " + "a" * (MAX_REPLY_CHARS - len(SECRET)) + note
    assert again.cached and again.text == live.text
    row = json.loads(stored)
    assert row["raw"]["choices"][0]["message"]["content"] is None  # the text, once
    assert len(json.dumps(row["raw"])) <= MAX_RAW_CHARS
    assert len(stored) < MAX_REPLY_CHARS + MAX_RAW_CHARS


def test_the_cache_caps_any_backend_s_reply(tmp_path):
    text = SECRET + "a" * 1_000_000  # a backend that caps nothing (the scripted double)
    cached = CachedBackend(ScriptedBackend([text]), tmp_path / "cache.sqlite")
    messages = [{"role": "user", "content": "x"}]
    assert cached.complete(messages).text == text  # what that backend returned, this once
    again = cached.complete(messages)
    cached.close()
    assert again.cached and again.text == "*** " + "a" * (MAX_REPLY_CHARS - len(SECRET)) + (
        f" [reply cut at {MAX_REPLY_CHARS:,} characters; it had {len(text):,}]")


@pytest.mark.parametrize("size", SIZES)
def test_a_huge_error_body_is_cut_and_scrubbed(fault_server, size):
    fault_server.mode, fault_server.error_message = "http500", SECRET + "b" * size
    backend = OpenAIBackend("fake-model", base_url=fault_server.base_url, api_key="k",
                            max_retries=1, backoff=0.01)
    started = time.monotonic()
    with pytest.raises(BackendError) as info:
        backend.complete([{"role": "user", "content": "x"}])
    assert time.monotonic() - started < GUARD  # must finish
    detail = "*** " + "b" * (MAX_DETAIL_CHARS - len(SECRET))  # the start, scrubbed
    assert info.value.reason == f"HTTP 500: {detail}"
    assert [a.detail for a in info.value.attempts] == [detail, detail]


@pytest.mark.parametrize("shape", ["a", "a://", "Bearer ", "token: ", "Basic QQ ",
                                   "x-api-key= ", "http://u:p@h/?key=v "])
def test_scrubbing_a_megabyte_of_any_shape_finishes(shape):
    text = shape * (1_000_000 // len(shape))
    started = time.monotonic()
    scrub_text(text)
    assert time.monotonic() - started < GUARD  # must finish (the "a" shape took ~170 s)


def test_a_huge_coordinator_reply_is_stored_capped_in_the_proposal(fault_server, tmp_path,
                                                                   monkeypatch):
    reply = '{"analysis": "' + "x" * 1_000_000 + '", "candidates": []}'
    fault_server.reply_text = reply
    monkeypatch.setenv("ORGTEAMS_BASE_URL", fault_server.base_url)
    monkeypatch.setenv("ORGTEAMS_MAX_RETRIES", "0")
    out = tmp_path / "reflect"
    assert main(["reflect", "--layout", "studio", "--agents", "2", "--backend", "scripted",
                 "--critic", "scripted", "--coordinator", "openai:big-coordinator",
                 "--iterations", "2", "--max-rounds", "1", "--out", str(out)]) == 1
    # a 1 MB non-JSON reply is never a valid proposal: every Coordinator call fell back
    proposal = json.loads((out / "iteration_0" / "proposal.json").read_text())
    replies = proposal["call"]["replies"]
    # the cut reply is no object: corrected once (Coordinator max_retries=1), then the
    # current organization is kept
    assert len(replies) == 2 and proposal["fallback"].startswith("invalid reply after 2")
    note = f" [reply cut at {MAX_REPLY_CHARS:,} characters; it had {len(reply):,}]"
    assert all(r.endswith(note) and len(r) == MAX_REPLY_CHARS + len(note) for r in replies)
    assert os.path.getsize(out / "iteration_0" / "proposal.json") < 2 * MAX_REPLY_CHARS + 50_000
