"""Prompt and generation speed of the embedded model per thread setting, idle and loaded.

For each setting (threads, OpenMP wait policy) it starts the package's
``LocalServer`` and measures, through the same OpenAI wire path the agents use:

* prompt tok/s: fresh ~700-token decision prompts (a unique first line, so the
  server's prompt cache cannot help) with ``max_tokens=1``;
* generation tok/s: a cached prompt asked for up to 64 tokens of free text.

Each setting runs idle and then beside a competing process (one Python busy loop, as
when the runner, a window or another job shares the cores). The machine's load
average is printed: on a shared machine, "idle" means "with nothing of ours beside it".

    python benchmarks/llm/local_threads.py [--calls 3] [--settings 1:passive,2:passive,2:active]

Needs the ``local`` extra and the model file (README command 1).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import cores_and_load, parser, run_local  # noqa: E402
from llm_latency import decision_prompt, raw_rates  # noqa: E402


def _competitor() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def measure(threads: int, policy: str, calls: int, loaded: bool) -> tuple[float, float]:
    from orgteams.agents.backends import LocalBackend, LocalServer

    with LocalServer(n_threads=threads, omp_wait_policy=policy) as server:
        backend = LocalBackend(server, max_tokens_cap=64)
        busy = _competitor() if loaded else None
        try:
            return raw_rates(backend, decision_prompt(), calls)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()


def main(argv: list[str] | None = None) -> int:
    options = parser(__doc__)
    options.add_argument("--calls", type=int, default=3, help="timed calls per measurement")
    options.add_argument("--settings", default="1:passive,1:active,2:passive,2:active",
                         help="comma list of threads:policy")
    args = options.parse_args(argv)
    settings = [(int(t), p) for t, p in (s.split(":") for s in args.settings.split(","))]
    print(cores_and_load())
    print(f"{'threads':>7} {'omp wait':>8} | {'idle prompt':>11} {'idle gen':>8} | "
          f"{'loaded prompt':>13} {'loaded gen':>10}   (tok/s)")

    def measure_all() -> None:
        for threads, policy in settings:
            started = time.perf_counter()
            idle = measure(threads, policy, args.calls, loaded=False)
            loaded = measure(threads, policy, args.calls, loaded=True)
            print(f"{threads:>7} {policy:>8} | {idle[0]:>11.1f} {idle[1]:>8.1f} | "
                  f"{loaded[0]:>13.1f} {loaded[1]:>10.1f}   "
                  f"({time.perf_counter() - started:.0f}s, load "
                  f"{os.getloadavg()[0]:.2f})", flush=True)

    return run_local(measure_all)


if __name__ == "__main__":
    sys.exit(main())
