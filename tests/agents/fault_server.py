"""A tiny OpenAI-compatible chat server that injects faults, for backend tests.

Runs stdlib ``http.server`` on 127.0.0.1 in a daemon thread. Set ``server.mode``:

* ``"ok"``: reply with ``server.reply_text`` (default a small JSON object).
* ``"http500"``: HTTP 500 on every chat request (with ``retry-after-ms`` so the SDK
  retries fast).
* ``"timeout"``: sleep ``server.delay`` seconds before answering.
* ``"invalid_json"``: reply with assistant text that is not JSON.
* ``"reject_json_schema"``: HTTP 500 for ``response_format.type == "json_schema"``
  (like llama-cpp-python 0.3.x), normal replies otherwise.
* ``"reject_response_format"``: HTTP 400 for any ``response_format``.

Every chat request body is appended to ``server.requests``.

Run as a script (``python fault_server.py --port N [--model PATH] ...``) it stands in
for ``python -m llama_cpp.server`` in tests of the local-server process management:
it exits with an error when the model file starts with ``b"crash"``.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = ("ok", "http500", "timeout", "invalid_json", "reject_json_schema", "reject_response_format")


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
            if status >= 500:
                self.send_header("retry-after-ms", "5")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout mode)

    def do_GET(self) -> None:  # noqa: N802  (stdlib name)
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802  (stdlib name)
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        srv = self.server
        with srv.lock:
            srv.requests.append(body)
            srv.auth_headers.append(self.headers.get("authorization", ""))
        mode = srv.mode
        fmt = (body.get("response_format") or {}).get("type")
        if mode == "http500":
            return self._send(500, {"error": {"message": "injected failure"}})
        if mode == "reject_json_schema" and fmt == "json_schema":
            return self._send(
                500, {"error": {"message": "response_format type json_schema is not supported"}}
            )
        if mode == "reject_response_format" and fmt is not None:
            return self._send(400, {"error": {"message": "unknown field: response_format"}})
        if mode == "timeout":
            time.sleep(srv.delay)
        text = "Sure! I would pick a." if mode == "invalid_json" else srv.reply_text
        self._send(200, _chat_response(body.get("model", "fake-model"), text))


def _chat_response(model: str, text: str) -> dict[str, Any]:
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
        "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
    }


class FaultServer(ThreadingHTTPServer):
    """The fault-injecting server; use as a context manager or call ``close()``."""

    daemon_threads = True

    def __init__(
        self,
        mode: str = "ok",
        reply_text: str = '{"action": "a"}',
        delay: float = 2.0,
        port: int = 0,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
        super().__init__(("127.0.0.1", port), _Handler)
        self.mode = mode
        self.reply_text = reply_text
        self.delay = delay
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str] = []
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        """The ``/v1`` URL to give an OpenAI client."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def close(self) -> None:
        """Stop serving and release the port."""
        self.shutdown()
        self.server_close()

    def __enter__(self) -> FaultServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _main() -> None:
    import argparse
    import sys

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="")
    args, _ = parser.parse_known_args()
    if args.model and open(args.model, "rb").read(5) == b"crash":
        print("error loading model: invalid magic", file=sys.stderr)
        sys.exit(3)
    server = FaultServer(port=args.port)
    server._thread.join()


if __name__ == "__main__":
    _main()
