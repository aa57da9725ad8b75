"""A round of three embedded-model agents with one server slot and with one slot per agent.

One run, side by side on the same machine: for each slot count (``--slots``, default
1 and 3, in the order 1, 3, 3, 1 with ``--repeats 2`` so a drift in the machine's load
hits both alike) it starts the package's ``LocalServer`` with that many parallel
slots, plays the same episode of three ``local`` agents (``--org shared`` by default:
all three speak in one stage, then all three act, so the round has two batches of
three concurrent calls), and prints:

* the episode's wall time (the server is started before the clock starts);
* the model calls (communicate + act) and their prompt / completion tokens, and the
  completion tokens per second of wall time (greedy decoding, but batching changes
  the arithmetic's rounding, so the two settings may not generate the same replies:
  compare the token counts before the wall times);
* the prompt-cache hit rate as the server counts it (its ``/metrics``:
  ``prompt_tokens_cached_total`` / all prompt tokens): tokens a slot reused from the
  prompt it held instead of evaluating them again;
* the server's mean busy slots per decode step (1.0 = no batching happened).

    python benchmarks/llm/local_slots.py [--rounds 1] [--org shared] [--slots 1,3] [--repeats 1]

Needs the ``local`` extra and the model file (README command 1).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import cores_and_load, load_average, parser, run_local  # noqa: E402


def play(slots: int, org: str, rounds: int, seed: int) -> dict[str, float]:
    """One episode of three ``local`` agents on a fresh ``slots``-slot server."""
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.agents.records import DecisionLine
    from orgteams.run import run_episode

    with BackendPool(local_slots=slots) as pool:
        pool.get("local")  # start the server now: its start-up is not the round's time
        server = pool.local_server
        before = server.metrics()
        started = time.perf_counter()
        result = run_episode(task="prepare_afternoon_tea", layout="studio", organization=org,
                             agents=3, backend="local", seed=seed, max_rounds=rounds,
                             log_path=None, pool=pool)
        wall = time.perf_counter() - started
        after = server.metrics()
    calls = [r for r in result.records if isinstance(r, DecisionLine) and r.call.usage.total]
    evaluated = after["prompt_tokens_total"] - before["prompt_tokens_total"]
    cached = after["prompt_tokens_cached_total"] - before["prompt_tokens_cached_total"]
    phases = [r.phase for r in calls]
    return {
        "wall": wall,
        "calls": f"{phases.count('communicate')}+{phases.count('act')}",
        "prompt": sum(r.call.usage.prompt_tokens for r in calls),
        "completion": sum(r.call.usage.completion_tokens for r in calls),
        "hit": cached / (cached + evaluated) if cached + evaluated else 0.0,
        "busy": after["n_busy_slots_per_decode"],
        "fallbacks": sum(1 for r in calls if r.get("fallback")),
    }


def main(argv: list[str] | None = None) -> int:
    options = parser(__doc__)
    options.add_argument("--rounds", type=int, default=1)
    options.add_argument("--org", default="shared")
    options.add_argument("--slots", default="1,3", help="comma list of slot counts")
    options.add_argument("--repeats", type=int, default=1,
                         help="passes over the slot counts, every other one reversed")
    options.add_argument("--seed", type=int, default=0)
    args = options.parse_args(argv)
    counts = [int(s) for s in args.slots.split(",")]
    order = [c for i in range(args.repeats) for c in (counts if i % 2 == 0 else counts[::-1])]
    print(f"3 local agents, organization {args.org}, {args.rounds} round(s), seed "
          f"{args.seed}; {cores_and_load()}")
    print(f"{'slots':>5} | {'wall s':>7} {'calls':>7} {'prompt tok':>10} {'compl tok':>9} "
          f"{'gen tok/s':>9} {'cache hit':>9} {'busy slots':>10} {'fallbacks':>9}")
    walls: dict[int, list[float]] = {c: [] for c in counts}

    def measure() -> None:
        for slots in order:
            row = play(slots, args.org, args.rounds, args.seed)
            walls[slots].append(row["wall"])
            print(f"{slots:>5} | {row['wall']:>7.1f} {row['calls']:>7} {row['prompt']:>10} "
                  f"{row['completion']:>9} {row['completion'] / row['wall']:>9.1f} "
                  f"{row['hit']:>9.1%} {row['busy']:>10.2f} {row['fallbacks']:>9}", flush=True)

    if run_local(measure):
        return 2
    base = statistics.mean(walls[counts[0]])
    for c in counts[1:]:
        print(f"wall with {counts[0]} slot(s) / wall with {c}: "
              f"{base / statistics.mean(walls[c]):.2f}x")
    print(f"load average at end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
