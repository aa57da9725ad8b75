"""A server that echoes our credentials gets them recorded nowhere (issue 24, "Secrets").

A base URL with userinfo is sent as ``Authorization: Basic base64(user:password)``;
the fault server echoes that header in a 401 message or after a 200 reply's JSON. The
real commands (``run`` with ``--cache``, ``sweep``, ``reflect``) then write logs,
caches, results and proposals, and every byte they wrote or printed is searched for the
password, ``user:password`` and each base64 form.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from pathlib import Path

import pytest

from orgteams.agents.backends import BackendConfigError, OpenAIBackend
from orgteams.agents.backends.redact import Secrets, cut_scrubbed, scrub_text
from orgteams.cli.main import main

pytest.importorskip("openai")

USER, PASSWORD = "alice", "Pa55w0rd-s3cret"
PAIR = f"{USER}:{PASSWORD}"
BASIC = base64.b64encode(PAIR.encode()).decode()
# Every way the secret could be written down: plain, the pair, and base64 (standard
# and URL-safe, padded or not) of the password alone and of the pair.
LEAKS = sorted({PASSWORD, PAIR, BASIC, BASIC.rstrip("="),
                base64.b64encode(PASSWORD.encode()).decode().rstrip("="),
                base64.urlsafe_b64encode(PAIR.encode()).decode().rstrip("="),
                base64.urlsafe_b64encode(PASSWORD.encode()).decode().rstrip("=")})


def credentialed(server) -> str:
    return server.base_url.replace("http://", f"http://{USER}:{PASSWORD}@")


def assert_no_leak(folder: Path, *texts: str) -> int:
    """No form of the secret in any file under ``folder`` or in ``texts``; the number of
    files searched."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    for path in files:
        data = path.read_bytes()
        for leak in LEAKS:
            assert leak.encode() not in data, f"{leak!r} leaked into {path.name}"
    for text in texts:
        for leak in LEAKS:
            assert leak not in text, f"{leak!r} leaked into the output"
    return len(files)


# ---- the scrubber ----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "shown"), [
    (f"Authorization: Basic {BASIC}", "Authorization: ***"),
    (f'{{"authorization": "Basic {BASIC}"}}', '{"authorization": "***"}'),
    (f"{{'Proxy-Authorization': 'Basic {BASIC}'}}", "{'Proxy-Authorization': '***'}"),
    (f"you sent Basic {BASIC} again", "you sent Basic *** again"),
    ("header Bearer abc.def-123456", "header ***"),
    ("Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b", "***"),
    ("x-api-key: k-0123456789", "x-api-key: ***"),
    ('"api-key": "k-0123456789"', '"api-key": "***"'),
    ('{"password": "hunter22"}', '{"password": "***"}'),
    # a header dump as Go's http.Header writes it (values are lists): the value leaked
    ('{"Authorization": ["Bearer abcdefg"], "Accept": ["*/*"]}',
     '{"Authorization": ["***"], "Accept": ["*/*"]}'),
    ('{"X-Api-Key": ["rawsecretvalue"]}', '{"X-Api-Key": ["***"]}'),
    # Google, Hugging Face and JSON web token shapes were kept as written
    ("key AIzaSyA1234567890abcdefghijklmnopqrstuv.", "key ***."),
    ("hf_abcdefghijklmnopqrstuvwxyzABCDEF", "***"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijklmnop", "jwt ***"),
    ("eyJ is no token, hf_ none, AIza neither.", "eyJ is no token, hf_ none, AIza neither."),
    # prose that merely looks like a scheme stays
    ("Basic strategy: fetch the cups first.", "Basic strategy: fetch the cups first."),
    ("Token limitations apply to long plans.", "Token limitations apply to long plans."),
    ('{"max_tokens": 256, "thoughts": "go"}', '{"max_tokens": 256, "thoughts": "go"}'),
])
def test_scrub_text_masks_every_credential_shape(text, shown):
    assert scrub_text(text) == shown


def test_configured_secrets_are_masked_in_every_encoding():
    secrets = Secrets("sk-my-key-0001", PASSWORD, pairs=((USER, PASSWORD),))
    for leak in LEAKS:
        assert secrets.scrub(f"<{leak}>") == "<***>", leak
    # base64 of the password inside a longer base64 string, at each of the 3 offsets:
    # every character that encodes only password bits is masked
    for prefix in ("", "x", "xy"):
        blob = base64.b64encode(f"{prefix}{PASSWORD}|tail".encode()).decode()
        first = -(-8 * len(prefix) // 6)  # the first character after the prefix's bits
        end = 8 * (len(prefix) + len(PASSWORD)) // 6  # the last one before the tail's
        assert secrets.scrub(blob) == f"{blob[:first]}***{blob[end:]}", prefix
    assert secrets.scrub("sk-my-key-0001 and Pa55w0rd-s3cret.") == "*** and ***."
    # as a URL writes it (percent-encoded) and as it is sent (decoded)
    assert Secrets("p%40ss%2Fw0rd").scrub("p@ss/w0rd, p%40ss%2Fw0rd") == "***, ***"


def test_cut_scrubbed_never_shows_part_of_a_secret_it_cut():
    secrets = Secrets(PASSWORD)
    # the password straddles the scanned window's end: dropped, not shown in part
    text = "a" * (90 + 1024 - 5) + PASSWORD + "b" * 50
    kept = cut_scrubbed(text, 90, secrets.scrub)
    assert kept == "a" * 90
    assert cut_scrubbed("a" * 80 + PASSWORD + "b" * 50, 90, secrets.scrub) == "a" * 80 + "***b" \
        + "b" * 6


# ---- the backend -----------------------------------------------------------------------

def test_url_credentials_are_sent_as_a_basic_header_we_mask(fault_server, caplog):
    caplog.set_level(logging.DEBUG)  # the SDK's and HTTP library's debug logs too
    fault_server.mode = "echo_auth"
    backend = OpenAIBackend("fake-model", base_url=credentialed(fault_server), max_retries=0)
    reply = backend.complete([{"role": "user", "content": "x"}])
    assert fault_server.auth_headers == [f"Basic {BASIC}"]  # what the server really got
    assert reply.text == '{"action": "a"}\n(you sent Authorization: ***)'
    assert PASSWORD not in repr(backend) and PASSWORD not in json.dumps(reply.to_dict())
    fault_server.mode = "echo_auth_401"
    with pytest.raises(BackendConfigError, match=re.escape(
            "HTTP 401 from 'fake-model': bad credentials: Authorization: ***")):
        backend.complete([{"role": "user", "content": "x"}])
    assert "HTTP Request: POST" in caplog.text or "Request options" in caplog.text
    for leak in LEAKS:
        assert leak not in caplog.text, leak


# ---- the commands, end to end ----------------------------------------------------------

RUN = ["--agents", "2", "--layout", "studio", "--org", "none", "--max-rounds", "1"]


@pytest.fixture
def echo(fault_server, monkeypatch):
    fault_server.reply_text = None  # the minimal valid object of each request's schema
    monkeypatch.setenv("ORGTEAMS_BASE_URL", credentialed(fault_server))
    monkeypatch.setenv("ORGTEAMS_MAX_RETRIES", "0")
    return fault_server


def test_an_echoed_header_in_replies_reaches_no_log_cache_or_output(echo, tmp_path, capsys):
    echo.mode = "echo_auth"
    assert main(["run", "--backend", "openai:echo-model", *RUN, "--log",
                 str(tmp_path / "ep.jsonl"), "--cache", str(tmp_path / "cache.sqlite"),
                 "--json"]) == 0
    # again from the cache: the cached text is the masked one
    assert main(["run", "--backend", "openai:echo-model", *RUN, "--log",
                 str(tmp_path / "again.jsonl"), "--cache", str(tmp_path / "cache.sqlite"),
                 "--quiet"]) == 0
    out = capsys.readouterr()
    log = (tmp_path / "ep.jsonl").read_text()
    assert log.count("(you sent Authorization: ***)") >= 2  # the echo was recorded, masked
    assert (tmp_path / "again.jsonl").read_text().count("(you sent Authorization: ***)") >= 2
    assert all(h == f"Basic {BASIC}" for h in echo.auth_headers) and echo.auth_headers
    assert assert_no_leak(tmp_path, out.out, out.err) >= 3


def test_an_echoed_header_in_a_401_reaches_no_error_line(echo, tmp_path, capsys):
    echo.mode = "echo_auth_401"
    assert main(["run", "--backend", "openai:echo-model", *RUN, "--log",
                 str(tmp_path / "ep.jsonl"), "--cache", str(tmp_path / "cache.sqlite")]) == 2
    out = capsys.readouterr()
    assert out.err.strip().endswith(
        "HTTP 401 from 'echo-model': bad credentials: Authorization: ***")
    assert echo.auth_headers == [f"Basic {BASIC}"]
    assert_no_leak(tmp_path, out.out, out.err)


def test_sweep_results_and_reflect_proposals_hold_no_echoed_secret(echo, tmp_path, capsys):
    echo.mode = "echo_auth"
    sweep = tmp_path / "sweep"
    assert main(["sweep", "--backend", "openai:echo-sweep", "--tasks", "prepare_afternoon_tea",
                 "--layouts", "studio", "--orgs", "none", "--agents", "2", "--seeds", "1",
                 "--max-rounds", "1", "--workers", "1", "--out", str(sweep), "--quiet"]) == 0
    reflect = tmp_path / "reflect"
    assert main(["reflect", "--layout", "studio", "--agents", "2", "--backend", "scripted",
                 "--critic", "openai:echo-critic", "--coordinator", "openai:echo-coordinator",
                 "--iterations", "2", "--max-rounds", "1", "--out", str(reflect)]) == 1
    out = capsys.readouterr()
    # the echo is never a valid proposal, so every Coordinator call fell back (exit 1)
    assert "orgteams reflect: every Coordinator call fell back" in out.err
    rows = (sweep / "results.jsonl").read_text()
    assert json.loads(rows.splitlines()[0])["status"] == "ok"
    assert "(you sent Authorization: ***)" in (next((sweep / "logs").glob("*.jsonl"))
                                                 .read_text())
    proposal = (reflect / "iteration_0" / "proposal.json").read_text()
    assert "(you sent Authorization: ***)" in proposal
    assert assert_no_leak(tmp_path, out.out, out.err) >= 5
