"""A tiny OpenAI-compatible chat server that injects faults, for backend tests.

Runs stdlib ``http.server`` on 127.0.0.1 in a daemon thread. Set ``server.mode``:

* ``"ok"``: reply with ``server.reply_text`` (default a small JSON object; ``None``:
  the minimal valid object of the request's schema, so any caller's reply validates).
* ``"http500"``: HTTP 500 on every chat request, its message ``server.error_message``
  (with ``retry-after-ms`` so retries are fast).
* ``"http429"``: HTTP 429 rate limit (with ``retry-after-ms``).
* ``"timeout"`` (a hang): sleep ``server.delay`` seconds before answering.
* ``"truncated"``: HTTP 200, then the connection closes halfway through the JSON body
  (no content-length: the client reads a cut-off body, as when a server dies mid-reply).
* ``"non_json"``: HTTP 200 with an HTML page instead of JSON (a proxy's error page).
* ``"drop"``: close the connection without any response.
* ``"gzip"``: a normal reply sent gzip-compressed (``content-encoding: gzip``) whatever
  the request's ``Accept-Encoding``, kept in ``server.accept_encodings``.
* ``"deep_json"``: HTTP 200 with a JSON body nested 50,000 arrays deep (past Python's
  recursion limit: decoding it raises ``RecursionError``).
* ``"invalid_json"``: a well-formed reply whose assistant text is not JSON.
* ``"reject_json_schema"``: HTTP 500 for ``response_format.type == "json_schema"``
  with llama-cpp-python 0.3.x's own message, normal replies otherwise.
* ``"reject_response_format"``: HTTP 400 for any ``response_format``.
* ``"echo_auth"``: a normal reply with the request's ``Authorization`` header echoed
  after the JSON object (``{...}\n(you sent Authorization: Basic ...)``), as a model
  repeating its input or a debugging proxy would.
* ``"echo_auth_401"``: HTTP 401 whose message echoes the ``Authorization`` header.
* ``"trickle"``: the status line and headers at once, then the body one byte every
  ``server.trickle_interval`` seconds (a stalled server that never times out a read).
* ``"trickle_head"``: the same from the status line on (the headers trickle too).
* ``"big_reply"``: a normal reply followed by ``server.big_size`` characters of prose
  (a model that rambles on).
* ``"big_error"``: HTTP 500 whose message has ``server.big_size`` characters.
* ``"redirect_loop"``: HTTP 307, then 308, and so on, each back to the same path (a
  proxy that redirects to itself; 307 and 308 keep the method and body, so the client
  follows with the POST until its redirect limit).
* ``"chaos"``: each chat request gets a fault with probability ``server.fault_rate``
  (seeded by ``seed``), else a normal reply; the faults take turns in the order of
  ``server.faults`` (default ``CHAOS_FAULTS``; ``FLOOD_FAULTS`` may be listed too), so
  every kind comes up once as many as are listed have been injected.

Modes put in ``server.queue`` are taken first, one per request, in any mode (e.g. a
run of ``invalid_json`` replies in the middle of a chaotic sweep).

Every chat request body is appended to ``server.requests``, and every injected fault
to ``server.injected`` as ``{"n": request index, "fault": mode}``.

Usage: every reply reports 11 prompt and 5 completion tokens, or with
``usage="count"`` the tokens of its request's messages and of its reply text counted
with orgteams' tokenizer (as the ``scripted`` double counts them), each reply's in
``server.usages`` (a priced server: what a run spent is computable from them).

``server.usage_body``, when set, is sent as every reply's ``usage`` as it is (a server
reporting nonsense: negative, text, missing counts); ``server.choices_body`` likewise
as its ``choices`` (a choice without a message, a content that is no text).

``GET /health`` answers 200, as llama.cpp's server does once its model is loaded.
The local-server tests run it behind a fake ``xllamacpp`` package
(``test_backends_local_fake.py``).
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = ("http500", "http429", "timeout", "truncated", "non_json", "drop")
"""The transport faults: the model call fails."""
CHAOS_FAULTS = (*FAULTS, "invalid_json")
"""What ``chaos`` mode injects by default: the transport faults and a reply whose
assistant text is not JSON (``INVALID_TEXT``; the model's fault, not the server's)."""
INVALID_TEXT = "Sure! I would pick a."
FLOOD_FAULTS = ("trickle", "big_reply", "big_error")
"""Stalls and floods ``chaos`` mode injects when ``server.faults`` lists them."""
MODES = ("ok", *CHAOS_FAULTS, "deep_json", "gzip", "reject_json_schema", "reject_response_format",
         "echo_auth", "echo_auth_401", "trickle_head", "redirect_loop", *FLOOD_FAULTS, "chaos")
LLAMA_CPP_JSON_SCHEMA_ERROR = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}"
)
"""What llama-cpp-python 0.3.36's server answers (HTTP 500) to a json_schema request."""


class _Handler(BaseHTTPRequestHandler):
    server: FaultServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (stdlib name)
        pass  # keep test output clean

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            if status >= 500 or status == 429:
                self.send_header("retry-after-ms", "5")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout mode)

    def _raw(self, head: bytes, body: bytes) -> None:
        try:
            self.wfile.write(head + body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _trickle(self, head: bytes, body: bytes) -> None:
        """Send ``head`` at once, then ``body`` byte by byte, until the client gives up or
        the server closes (a daemon handler thread must not outlive its test)."""
        srv = self.server
        try:
            self.wfile.write(head)
            self.wfile.flush()
            for i in range(len(body)):
                if srv.closing.wait(srv.trickle_interval):
                    break
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
        except OSError:  # the client closed the connection (its deadline)
            pass
        self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802  (stdlib name)
        if self.path.rstrip("/") == "/health":  # llama.cpp's readiness check
            self._send(200, {"status": "ok"})
        elif self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802  (stdlib name)
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        srv = self.server
        mode = srv.draw()
        with srv.lock:
            n = len(srv.requests)
            srv.requests.append(body)
            srv.auth_headers.append(self.headers.get("authorization", ""))
            srv.accept_encodings.append(self.headers.get("accept-encoding", ""))
            if mode in CHAOS_FAULTS or mode in FLOOD_FAULTS:
                srv.injected.append({"n": n, "fault": mode})
        fmt = body.get("response_format") or {}
        auth = self.headers.get("authorization", "")
        if mode == "http500":
            return self._send(500, {"error": {"message": srv.error_message}})
        if mode == "big_error":
            return self._send(500, {"error": {"message": "e" * srv.big_size}})
        if mode == "echo_auth_401":
            return self._send(401, {"error": {"message": f"bad credentials: Authorization: "
                                                         f"{auth}"}})
        if mode == "http429":
            return self._send(429, {"error": {"message": "rate limit (injected)"}})
        if mode == "redirect_loop":
            self.send_response((307, 308)[n % 2])
            self.send_header("location", self.path)
            self.send_header("content-length", "0")
            self.end_headers()
            return None
        if mode == "drop":
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return None
        if mode == "non_json":
            page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
            return self._raw(b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n"
                             b"content-length: %d\r\nconnection: close\r\n\r\n" % len(page), page)
        if mode == "reject_json_schema" and fmt.get("type") == "json_schema":
            return self._send(500, {"error": {"message": LLAMA_CPP_JSON_SCHEMA_ERROR,
                                              "type": "internal_server_error"}})
        if mode == "reject_response_format" and fmt:
            return self._send(400, {"error": {"message": "unknown field: response_format"}})
        if mode == "timeout":
            time.sleep(srv.delay)
        text = INVALID_TEXT if mode == "invalid_json" else srv.reply_for(fmt)
        if mode == "echo_auth":
            text += f"\n(you sent Authorization: {auth})"
        if mode == "big_reply":
            text += " and so on" * (srv.big_size // 10)
        reply = _chat_response(body.get("model", "fake-model"), text, srv.usage_of(body, text))
        if srv.usage_body is not None:
            reply["usage"] = srv.usage_body
        if srv.choices_body is not None:
            reply["choices"] = srv.choices_body
        if mode in ("trickle", "trickle_head"):
            data = json.dumps(reply).encode()
            head = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n" % len(data))
            if mode == "trickle_head":
                return self._trickle(b"", head + data)
            return self._trickle(head, data)
        if mode == "gzip":
            import gzip

            data = gzip.compress(json.dumps(reply).encode())
            return self._raw(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-encoding: gzip\r\ncontent-length: %d\r\n\r\n"
                             % len(data), data)
        if mode == "deep_json":
            deep = b'{"choices": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
            return self._raw(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\n\r\n" % len(deep), deep)
        if mode == "truncated":
            data = json.dumps(reply).encode()
            # HTTP/1.0-style: no content-length, the body ends where the connection does.
            return self._raw(b"HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n",
                             data[: len(data) // 2])
        return self._send(200, reply)


def _chat_response(model: str, text: str, usage: tuple[int, int] = (11, 5)) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                  "total_tokens": sum(usage)},
    }


class FaultServer(ThreadingHTTPServer):
    """The fault-injecting server; use as a context manager or call ``close()``."""

    daemon_threads = True

    def __init__(
        self,
        mode: str = "ok",
        reply_text: str | None = '{"action": "a"}',
        delay: float = 2.0,
        port: int = 0,
        *,
        fault_rate: float = 0.3,
        faults: tuple[str, ...] = CHAOS_FAULTS,
        seed: int = 0,
        error_message: str = "injected failure",
        trickle_interval: float = 0.2,
        big_size: int = 1_000_000,
        usage: str = "fixed",
    ) -> None:
        if usage not in ("fixed", "count"):
            raise ValueError(f"usage is 'fixed' or 'count', got {usage!r}")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
        known = (*CHAOS_FAULTS, *FLOOD_FAULTS)
        unknown = [f for f in faults if f not in known]
        if unknown:
            raise ValueError(f"unknown faults {unknown}; known: {', '.join(known)}")
        super().__init__(("127.0.0.1", port), _Handler)
        self.mode = mode
        self.reply_text = reply_text
        self.delay = delay
        self.fault_rate = fault_rate
        self.error_message = error_message
        self.trickle_interval = trickle_interval
        self.big_size = big_size
        self.closing = threading.Event()
        self.faults = tuple(faults)
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str] = []
        self.accept_encodings: list[str] = []
        self.injected: list[dict[str, Any]] = []
        self.queue: list[str] = []
        self.usage = usage
        self.usages: list[tuple[int, int]] = []
        self.usage_body: Any = None
        self.choices_body: Any = None
        self._rng = random.Random(seed)
        self._turn = 0
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def draw(self) -> str:
        """The mode of the next request: the next queued one, else ``mode`` (in chaos
        mode a random fault or ``ok``)."""
        with self.lock:
            if self.queue:
                return self.queue.pop(0)
        if self.mode != "chaos":
            return self.mode
        with self.lock:
            if self._rng.random() < self.fault_rate:
                self._turn += 1
                return self.faults[(self._turn - 1) % len(self.faults)]
        return "ok"

    def usage_of(self, body: dict[str, Any], text: str) -> tuple[int, int]:
        """The ``(prompt, completion)`` tokens a reply reports (see the module docstring),
        kept in ``usages``."""
        if self.usage == "count":
            from orgteams.agents.llm.tokens import count_tokens

            usage = (sum(count_tokens(m.get("content") or "") for m in body.get("messages", [])),
                     count_tokens(text))
        else:
            usage = (11, 5)
        with self.lock:
            self.usages.append(usage)
        return usage

    def reply_for(self, response_format: dict[str, Any]) -> str:
        """``reply_text``, or the minimal valid object of the request's schema."""
        if self.reply_text is not None:
            return self.reply_text
        from orgteams.agents.backends.scripted import minimal_instance

        schema = response_format.get("schema") or (
            response_format.get("json_schema") or {}).get("schema")
        return json.dumps(minimal_instance(schema) if schema else {})

    @property
    def base_url(self) -> str:
        """The ``/v1`` URL to give an OpenAI client."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def close(self) -> None:
        """Stop serving and release the port (a trickling handler stops too)."""
        self.closing.set()
        self.shutdown()
        self.server_close()

    def __enter__(self) -> FaultServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
