"""ORGTEAMS_TIMEOUT bounds a whole request, not each read (issue 24, "hang or stall").

The fault server's ``trickle`` mode sends the headers and then one byte of the body
every ``trickle_interval`` seconds, ``trickle_head`` trickles from the status line on:
no read ever waits long, so only a deadline over the whole request ends it (before,
such a call stayed open until the body ended: minutes here, forever for a server that
never ends it).

The time limits below are "must stop" guards, not performance claims: each allows the
configured budget, ``(retries + 1) x timeout`` plus the waits between retries, and
``SLACK`` seconds for a busy machine. Without the deadline each call would take the
whole trickle (``len(body) x interval``: over 100 s here) and fail them.
"""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest

from orgteams.agents.backends import BackendError, OpenAIBackend
from orgteams.cli.main import main

pytest.importorskip("openai")

SLACK = 10.0
TIMEOUT, RETRIES, BACKOFF = 0.5, 1, 0.01
MESSAGES = [{"role": "user", "content": "Pick a or b."}]


@pytest.mark.parametrize("mode", ["trickle", "trickle_head"])
@pytest.mark.parametrize("call", ["sync", "async"])
def test_a_trickling_server_is_cut_off_at_the_deadline(fault_server, mode, call):
    fault_server.mode, fault_server.trickle_interval = mode, 0.4
    backend = OpenAIBackend("fake-model", base_url=fault_server.base_url, api_key="k",
                            timeout=TIMEOUT, max_retries=RETRIES, backoff=BACKOFF,
                            max_backoff=BACKOFF)
    started = time.monotonic()
    with pytest.raises(BackendError, match=re.escape(
            f"timeout after {TIMEOUT}s x {RETRIES + 1} attempts")) as info:
        if call == "sync":
            backend.complete(MESSAGES)
        else:
            asyncio.run(backend.acomplete(MESSAGES))
    elapsed = time.monotonic() - started
    assert [(a.kind, a.error, a.detail) for a in info.value.attempts] == [
        ("timeout", "DeadlineExceeded", f"no complete reply within {TIMEOUT}s")] * (RETRIES + 1)
    assert all(TIMEOUT <= a.latency < TIMEOUT + SLACK for a in info.value.attempts)
    assert len(fault_server.requests) == RETRIES + 1
    assert elapsed < (RETRIES + 1) * TIMEOUT + RETRIES * BACKOFF + SLACK  # must stop


def test_an_episode_against_a_trickling_server_stops_with_status_error(
        fault_server, tmp_path, monkeypatch, capsys):
    timeout, retries = 1.0, 1
    fault_server.mode, fault_server.trickle_interval = "trickle", 0.5
    monkeypatch.setenv("ORGTEAMS_BASE_URL", fault_server.base_url)
    monkeypatch.setenv("ORGTEAMS_TIMEOUT", str(timeout))
    monkeypatch.setenv("ORGTEAMS_MAX_RETRIES", str(retries))
    log = tmp_path / "ep.jsonl"
    started = time.monotonic()
    # Members speak in turn: the first one's failed call is the limit of 1.
    code = main(["run", "--backend", "openai:trickle-model", "--agents", "2", "--layout",
                 "studio", "--org", "none", "--max-rounds", "3", "--max-transport-failures",
                 "1", "--log", str(log), "--quiet", "--json"])
    elapsed = time.monotonic() - started
    # the default backoff waits at most 0.5 s before the one retry
    assert elapsed < (retries + 1) * timeout + 0.5 + SLACK  # must stop
    assert code == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["episode_status"] == "error"
    # (how failures are counted is the stop's business; the reason is the deadline's)
    assert summary["stop_reason"] == "transport failures"
    assert summary["stop_detail"].endswith(
        f"(last: timeout: timeout after {timeout}s x {retries + 1} attempts)")
    assert summary["failed_requests_by_kind"] == {"timeout": retries + 1}
    decisions = [json.loads(line) for line in log.read_text().splitlines()]
    assert [d["error"] for d in decisions if d.get("phase")] == [
        f"timeout: timeout after {timeout}s x {retries + 1} attempts"]
    assert len(fault_server.requests) == retries + 1


def test_complete_runs_inside_a_running_event_loop_too(fault_server):
    # complete() runs its request on a private loop: in a worker thread when the
    # caller's thread already runs one.
    backend = OpenAIBackend("fake-model", base_url=fault_server.base_url, api_key="k")

    async def inside() -> str:
        return backend.complete(MESSAGES).text

    assert asyncio.run(inside()) == '{"action": "a"}'
