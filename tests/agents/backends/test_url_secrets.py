"""Credentials in a base URL, query secrets and key-like replies are never recorded
(issue 10, "Secrets")."""

from __future__ import annotations

import json
import socket

import pytest

from orgteams.agents.backends import CachedBackend, OpenAIBackend, ScriptedBackend
from orgteams.agents.backends.redact import scrub_text, scrub_url
from orgteams.cli.main import main

PASSWORD, QUERY_SECRET = "hunter2pw", "QSECRET123"


def test_scrub_url_masks_userinfo_and_secret_query_values():
    assert scrub_url(f"http://user:{PASSWORD}@host:8000/v1?api_key={QUERY_SECRET}&x=1&token=t"
                     ) == "http://***@host:8000/v1?api_key=***&x=1&token=***"
    assert scrub_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    # a URL urlsplit cannot read (an unclosed IPv6 bracket) kept its userinfo
    assert scrub_url(f"http://user:{PASSWORD}@[::1/v1") == "http://***@[::1/v1"
    assert scrub_url(None) is None


def test_scrub_text_masks_urls_and_key_like_strings():
    text = (f"failed to http://u:{PASSWORD}@h/v1?key={QUERY_SECRET}. Keys: "
            "sk-abcdefghijklmnopqrstuv, Bearer abc.def-123456, api_key=hello1234, "
            "ghp_abcdefghijklmnopqrstuvwxyz0123 and the fridge.")
    assert scrub_text(text) == ("failed to http://***@h/v1?key=***. Keys: ***, ***, "
                                "api_key=***, *** and the fridge.")
    assert scrub_text('{"action": "A", "thoughts": "go"}') == '{"action": "A", "thoughts": "go"}'


def dead_url() -> str:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://user:{PASSWORD}@127.0.0.1:{port}/v1?api_key={QUERY_SECRET}"


def test_a_credentialed_base_url_never_reaches_the_episode_log(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ORGTEAMS_BASE_URL", dead_url())
    log = tmp_path / "episode.jsonl"
    # exit 1: the episode stops with status error, its server being dead (the reason, on
    # stderr, is masked too)
    assert main(["run", "--backend", "openai:fake-model", "--agents", "2", "--layout", "studio",
                 "--org", "none", "--max-rounds", "1", "--log", str(log), "--quiet",
                 "--json"]) == 1
    captured = capsys.readouterr()
    out = captured.out + captured.err
    text = log.read_text()
    errors = [r["error"] for r in map(json.loads, text.splitlines()) if r.get("error")]
    assert errors and all(e.startswith("connection: connection failed to http://***@127.0.0.1:")
                          and e.endswith("/v1?api_key=***") for e in errors)  # recorded, masked
    for secret in (PASSWORD, QUERY_SECRET):
        assert secret not in text and secret not in out


def test_reprs_and_errors_show_the_masked_url():
    backend = OpenAIBackend("fake-model", base_url=dead_url(), max_retries=0, timeout=2)
    assert PASSWORD not in repr(backend) and QUERY_SECRET not in repr(backend)
    assert backend.base_url.startswith("http://***@127.0.0.1:")


def test_replies_and_the_cache_hold_no_key_like_strings(fault_server, tmp_path):
    leaked = "sk-live-0123456789abcdefghij"
    said = json.dumps({"action": "a", "thoughts": f"my key is {leaked}"})
    masked = '{"action": "a", "thoughts": "my key is ***"}'
    fault_server.reply_text = said
    backend = OpenAIBackend("fake-model", base_url=fault_server.base_url, max_retries=0)
    cached = CachedBackend(backend, tmp_path / "cache.sqlite")
    messages = [{"role": "user", "content": "x"}]
    live = cached.complete(messages)
    again = cached.complete(messages)
    cached.close()
    # masked in the live reply already, so a rerun from the cache sees the same text
    assert (live.text, again.cached, again.text) == (masked, True, masked)
    # the cache scrubs what any backend hands it (the scripted one scrubs nothing)
    scripted = CachedBackend(ScriptedBackend([said]), tmp_path / "scripted.sqlite")
    assert scripted.complete(messages).text == said
    assert scripted.complete(messages).text == masked
    scripted.close()
    for path in tmp_path.iterdir():
        assert leaked.encode() not in path.read_bytes(), path.name


@pytest.mark.parametrize(("url", "shown"), [
    ("http://h/v1?sig=abcdef&model=m", "http://h/v1?sig=***&model=m"),
    ("https://a:b@h/v1#frag", "https://***@h/v1#frag"),
    ("http://h:1/v1?access_token=abc", "http://h:1/v1?access_token=***"),
])
def test_scrub_url_keeps_everything_else(url, shown):
    assert scrub_url(url) == shown
