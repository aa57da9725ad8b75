"""A sweep process for the parent-death test: ``python sweep_victim.py OUT``.

Each episode writes its worker's pid to ``OUT/pids/<pid>`` and then sleeps, so the
test can kill this process with SIGKILL while its workers are busy.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def sleepy_episode(cell, log_path, options):  # module level: picklable under spawn
    pids = Path(log_path).parents[1] / "pids"  # OUT/logs/<cell>.jsonl -> OUT/pids
    pids.mkdir(exist_ok=True)
    (pids / str(os.getpid())).write_text("")
    time.sleep(120)
    return {"ticks": 1, "episode_status": "complete"}


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from sweep_victim import sleepy_episode as episode  # importable by name in workers

    from orgteams.experiments.sweep import SweepSpec, run_sweep

    out = Path(sys.argv[1])
    spec = SweepSpec(organizations=("none",), seeds=(0, 1))
    run_sweep(spec, out, workers=2, episode_fn=episode, progress=False)
