"""How scrubbing scales with text length: ours against the URL pattern it replaced.

``orgteams.agents.backends.redact.scrub_text`` masks secrets in everything we record.
Its URL pattern used to have an unbounded scheme (``[a-zA-Z][a-zA-Z0-9+.-]*://``),
which made each letter of a long word without ``://`` rescan the rest of the word:
quadratic (2 MB took 675 s). This script times, for each text shape, ``scrub_text``
at doubling sizes and prints the time per million characters and the ratio of each
time to the previous one (2 for linear, 4 for quadratic); the old pattern alone is
timed the same way at smaller sizes, side by side.

    python benchmarks/llm/scrub_scaling.py [--max-chars 2000000]
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from orgteams.agents.backends.redact import scrub_text

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import parser  # noqa: E402

OLD_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>]+")
SHAPES = {"word without ://": "a", "many URLs": "http://u:p@h/?key=v ",
          "Bearer runs": "Bearer ", "prose": "the cup is on the kitchen table. "}


def best_of(fn, text: str, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - started)
    return min(times)


def sizes(top: int, count: int) -> list[int]:
    return [top >> k for k in reversed(range(count))]


def row(label: str, fn, shape: str, lengths: list[int]) -> None:
    previous = None
    cells = []
    for n in lengths:
        seconds = best_of(fn, shape * (n // len(shape)))
        ratio = f" x{seconds / previous:.1f}" if previous else ""
        cells.append(f"{n:>9,}: {seconds * 1e6 / n:6.3f} s/M{ratio}")
        previous = seconds
    print(f"{label:34} " + " | ".join(cells))


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--max-chars", type=int, default=2_000_000)
    args = options.parse_args()
    print("time per million characters at doubling sizes (xN: time / previous size's)")
    for name, shape in SHAPES.items():
        row(f"scrub_text, {name}", scrub_text, shape, sizes(args.max_chars, 4))
    # the old pattern is quadratic: keep it to sizes that finish in seconds
    row("old URL pattern, word without ://", lambda t: OLD_URL.sub("", t), "a",
        sizes(40_000, 3))


if __name__ == "__main__":
    main()
