"""Check the episode README command 1 just played: it ended with a summary, and the
team's messages and high-level actions were not all the same (>= 2 distinct of each).

    python .ci/check_episode.py [runs/]     # the newest runs/*/episode.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(root: str = "runs") -> int:
    logs = sorted(Path(root).glob("*/episode.jsonl"), key=lambda p: p.stat().st_mtime)
    if not logs:
        print(f"no episode log under {root}/", file=sys.stderr)
        return 1
    records = [json.loads(line) for line in logs[-1].read_text().splitlines() if line.strip()]
    summary = [r for r in records if r.get("record") == "summary"]
    messages = {r["message"] for r in records
                if r.get("phase") == "communicate" and r.get("message")}
    actions = {r["action"] for r in records
               if r.get("phase") == "act" and r.get("action") not in (None, "continue")}
    print(f"{logs[-1]}: summary={bool(summary)}, {len(messages)} distinct messages, "
          f"{len(actions)} distinct actions")
    return 0 if summary and len(messages) >= 2 and len(actions) >= 2 else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
