"""The API key never reaches logs, caches, results, reprs or error messages."""

from __future__ import annotations

import json
import logging

import pytest

from orgteams.agents.backends import BackendError, CachedBackend, OpenAIBackend

FAKE_KEY = "sk-orgteams-FAKE-3f9a1c77e2"
SCHEMA = {"type": "object", "properties": {"action": {"enum": ["a", "b"]}}}


def test_api_key_is_never_written(fault_server, tmp_path):
    log_file = tmp_path / "debug.log"
    handler = logging.FileHandler(log_file)
    handler.setLevel(logging.DEBUG)
    loggers = [logging.getLogger(name) for name in ("", "openai", "httpx", "httpcore")]
    old_levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    try:
        backend = OpenAIBackend(
            "fake-model", base_url=fault_server.base_url, api_key=FAKE_KEY,
            timeout=1.0, max_retries=1,
        )  # fmt: skip
        cached = CachedBackend(backend, tmp_path / "cache.sqlite")
        records = []
        for mode in ("reject_json_schema", "ok", "invalid_json", "http500"):
            fault_server.mode = mode
            try:
                reply = cached.complete(
                    [{"role": "user", "content": f"mode {mode}"}], schema=SCHEMA
                )
                records.append({"mode": mode, "completion": reply.to_dict()})
            except BackendError as exc:
                records.append({"mode": mode, "error": str(exc), "repr": repr(exc)})
        records.append(
            {"backend": repr(backend), "cached": repr(cached), "vars": str(vars(cached))}
        )
        (tmp_path / "results.jsonl").write_text("\n".join(json.dumps(r) for r in records))
        cached.close()
    finally:
        for lg, level in zip(loggers, old_levels):
            lg.removeHandler(handler)
            lg.setLevel(level)
        handler.close()

    assert fault_server.auth_headers[0] == f"Bearer {FAKE_KEY}"  # the key was really used
    assert [r.get("error") for r in records[:4]] == [None, None, None, "HTTP 500: injected failure"]
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"debug.log", "cache.sqlite", "results.jsonl"}
    assert log_file.stat().st_size > 0
    for path in written:
        assert FAKE_KEY.encode() not in path.read_bytes(), f"API key leaked into {path.name}"


def test_error_messages_scrub_a_key_echoed_by_the_server(fault_server):
    fault_server.mode = "http500"
    backend = OpenAIBackend(
        "fake-model", base_url=fault_server.base_url, api_key="injected", max_retries=0
    )
    # The fault server's message contains "injected"; pretend that is the key.
    with pytest.raises(BackendError) as info:
        backend.complete([{"role": "user", "content": "x"}])
    assert info.value.reason == "HTTP 500: *** failure"


@pytest.mark.parametrize("spec", ["openai:sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
                                  "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"])
def test_a_key_pasted_as_the_member_spec_is_refused_masked(tmp_path, capsys, spec):
    """A key typed where the model goes ran the episode with the key as every log line's
    "model" (and the summary's members, a sweep's backend column); as the kind it was
    echoed in the error line. Now one line, the key masked, before anything runs."""
    from orgteams.cli.main import main

    log = tmp_path / "ep.jsonl"
    assert main(["run", "--backend", spec, "--agents", "2", "--max-rounds", "1",
                 "--log", str(log), "--quiet"]) == 2
    err = capsys.readouterr().err
    shown = "openai:***" if spec.startswith("openai:") else "***"
    assert err == (f"orgteams run: error: member spec {shown!r}: it holds what looks like a "
                   "secret (an API key?); a key goes in $ORGTEAMS_API_KEY or "
                   "$OPENAI_API_KEY, never in the member spec\n")
    assert not log.exists()


def test_model_names_with_slashes_colons_and_dates_are_not_taken_for_keys():
    from orgteams.agents.backends.pool import parse_member_spec

    for model in ("meta-llama/Llama-3.1-8B-Instruct", "gpt-4o-mini-2024-07-18",
                  "ft:gpt-4o-mini-2024-07-18:my-org:custom-suffix:9abcDEF1",
                  "hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M"):
        assert parse_member_spec(f"openai:{model}") == ("openai", model)
