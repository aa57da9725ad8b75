"""The embedded model end to end: real llama.cpp server (xllamacpp), real SmolLM2, JSON
grammar, parallel slots and the prompt cache."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request

import pytest

from orgteams.agents.backends import (
    LocalBackend,
    LocalServer,
    LocalServerError,
    OpenAIBackend,
    make_backend,
)
from orgteams.agents.backends.local import local_unavailable

pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.skipif(local_unavailable() is not None, reason=str(local_unavailable())),
]

SCHEMA = {
    "type": "object",
    "properties": {"action": {"type": "string", "enum": ["a", "b"]}},
    "required": ["action"],
}


@pytest.fixture(scope="module")
def server():
    with LocalServer() as srv:
        yield srv


def test_complete_returns_schema_valid_json(server):
    backend = LocalBackend(server)
    reply = backend.complete(
        [
            {"role": "system", "content": "You choose actions. Answer in JSON."},
            {"role": "user", "content": 'Choose action "a" or "b".'},
        ],
        schema=SCHEMA,
        max_tokens=10_000,  # capped by the backend
        seed=0,
    )
    assert reply.parsed is not None, reply.text
    assert reply.parsed["action"] in ("a", "b")
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
    assert reply.model == "smollm2-135m-instruct"
    assert backend.mode == "json_schema" and [a.mode for a in reply.attempts] == ["json_schema"]


def test_auto_mode_keeps_json_schema_on_the_real_server(server):
    # llama.cpp's own server answers response_format json_schema (llama-cpp-python's
    # answered HTTP 500; the fault server's "reject_json_schema" still imitates that).
    backend = OpenAIBackend("smollm2", base_url=server.base_url, api_key=server.api_key,
                            max_retries=0, timeout=120)
    reply = backend.complete([{"role": "user", "content": "Pick a or b."}], schema=SCHEMA,
                             max_tokens=16)
    (answered,) = reply.attempts
    assert (answered.mode, answered.status, answered.ok) == ("json_schema", 200, True)
    assert reply.parsed in ({"action": "a"}, {"action": "b"})
    assert backend.mode == "json_schema" and backend.downgrades == []


def test_the_server_answers_only_requests_with_its_key(server):
    root = server.base_url.removesuffix("/v1")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(f"{server.base_url}/models", timeout=10)
    assert info.value.code == 401
    request = urllib.request.Request(f"{server.base_url}/models",
                                     headers={"Authorization": f"Bearer {server.api_key}"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        assert reply.status == 200
    with urllib.request.urlopen(f"{root}/health", timeout=10) as reply:  # readiness: public
        assert reply.status == 200


def test_parallel_slots_decode_together_and_each_keeps_its_prompt():
    """Two agents' requests at once on a 2-slot server share decode steps (the server's
    own counter), and a repeated prompt is served from its slot's cache."""
    with LocalServer(n_parallel=2) as srv:
        backend = LocalBackend(srv)
        prompts = [[{"role": "system", "content": f"You are agent {i}. " + "Be brief. " * 40},
                    {"role": "user", "content": "Pick a or b."}] for i in range(2)]
        results: list = []
        threads = [threading.Thread(target=lambda p=p: results.append(
            backend.complete(p, schema=SCHEMA, max_tokens=32, seed=0))) for p in prompts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(r.parsed in ({"action": "a"}, {"action": "b"}) for r in results)
        assert srv.metrics()["n_busy_slots_per_decode"] > 1.0
        before = srv.metrics()["prompt_tokens_cached_total"]
        again = backend.complete(prompts[0], schema=SCHEMA, max_tokens=32, seed=0)
        cached = srv.metrics()["prompt_tokens_cached_total"] - before
        assert cached == again.raw["timings"]["cache_n"] > 0.9 * again.usage.prompt_tokens
        backend.close()


def test_server_shuts_down_on_close():
    srv = LocalServer()
    url = f"{srv.base_url}/models"
    assert srv.alive
    srv.close()
    assert not srv.alive and srv.process.returncode is not None
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=2)


def test_make_backend_local_owns_its_server():
    backend = make_backend("local")
    assert isinstance(backend, LocalBackend) and backend.server.alive
    backend.close()
    assert not backend.server.alive


def test_bad_model_file_reports_server_output(tmp_path):
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"definitely not gguf")
    with pytest.raises(LocalServerError) as info:
        LocalServer(bogus, startup_timeout=60)
    message = str(info.value)
    assert message.startswith("the llama.cpp server exited with code 3 before it was ready.")
    assert "invalid magic characters" in message  # llama.cpp's own reason
    assert "xllamacpp.Server: Failed to init server, please check the input params." in message


def test_local_unavailable_says_what_to_install(monkeypatch):
    import orgteams.agents.backends.local as local

    command = local.install_command()
    monkeypatch.setattr(local.importlib.util, "find_spec", lambda name: None)
    assert local.local_unavailable().endswith(f"{command} (xllamacpp is not installed)")
