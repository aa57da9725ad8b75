"""The embedded model end to end: real llama.cpp server, real SmolLM2, JSON grammar."""

from __future__ import annotations

import re
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
    assert backend.mode == "json_object"


def test_auto_mode_downgrades_once_on_the_real_server(server):
    # The fault server's "reject_json_schema" imitates this answer; this keeps the
    # "not supported" rule honest against the real llama-cpp-python server.
    backend = OpenAIBackend("smollm2", base_url=server.base_url, max_retries=0, timeout=120)
    reply = backend.complete([{"role": "user", "content": "Pick a or b."}], schema=SCHEMA,
                             max_tokens=16)
    rejected, answered = reply.attempts
    assert (rejected.mode, rejected.status, rejected.kind, rejected.downgrade) == (
        "json_schema", 500, "unsupported", "json_object")
    assert "Input should be 'text' or 'json_object'" in rejected.detail
    assert (answered.mode, answered.status, answered.ok) == ("json_object", 200, True)
    assert reply.parsed in ({"action": "a"}, {"action": "b"})
    assert backend.mode == "json_object" and len(backend.downgrades) == 1

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
    with pytest.raises(LocalServerError, match=re.escape("llama_cpp.server exited with code")):
        LocalServer(bogus, startup_timeout=60)


def test_local_unavailable_says_what_to_install(monkeypatch):
    import orgteams.agents.backends.local as local

    monkeypatch.setattr(local.importlib.util, "find_spec", lambda name: None)
    reason = local.local_unavailable()
    assert reason.endswith("(llama-cpp-python is not installed)")
    assert 'pip install "orgteams[local]"' in reason
