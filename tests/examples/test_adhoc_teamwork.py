"""examples/adhoc_teamwork.py: the learner's env beside a planner leader, the baselines'
measure, and (slow) a tiny training run whose saved model then plays in an
``orgteams run`` team as a ``policy:<model.zip>`` member."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from doubles import load_script, records_of

pytest.importorskip("sb3_contrib", reason="needs the rl extra")

EXAMPLE = Path(__file__).parents[2] / "examples" / "adhoc_teamwork.py"


@pytest.fixture(scope="module")
def adhoc():
    yield load_script(EXAMPLE)
    sys.modules.pop("train_ppo", None)


def test_the_learner_joins_a_planner_leader(adhoc):
    env = adhoc.make_env()
    assert env.agent == "agent_1" and env.teammate_ids == ["agent_0"]
    env.reset(seed=adhoc.HELD_OUT)
    assert env.highlevel is not None and env.base.overlay.you == "agent_1"
    waits = adhoc.evaluate(lambda obs, mask: 0, episodes=2)
    assert set(waits) == {"success", "ticks"} and 0 <= waits["success"] <= 1
    assert 0 < waits["ticks"] <= adhoc.SETTING["max_ticks"]


@pytest.mark.slow
def test_a_tiny_run_saves_a_model_that_plays_in_an_orgteams_team(adhoc, tmp_path):
    from orgteams import run_episode

    result = adhoc.train(1024, tmp_path, copies=2, eval_every=512, episodes=2)
    assert result["timesteps"] >= 1024 and [c[0] for c in result["curve"]][0] == 0
    assert (tmp_path / "model.zip").exists()
    assert json.loads((tmp_path / "model.json").read_text()) == adhoc.SETTING
    spec = f"planner,policy:{tmp_path / 'model.zip'}"
    played = run_episode(task="put_dishwasher_easy", layout="studio", organization="leader",
                         agents=2, backend=spec, seed=0, max_ticks=15, log_path=None)
    acts = [r for r in records_of(played) if r.get("kind") == "action"
            and r["agent"] == "agent_1"]
    assert played.summary["members"]["agent_1"] == f"policy:{tmp_path / 'model.zip'}"
    assert len(acts) == played.summary["ticks"] == 15
    assert all(r["action"].startswith("primitive:") and r["fallback"] is None for r in acts)


@pytest.mark.parametrize("argv, line", [
    # a division by zero episodes, an index into no learner envs
    (["--baselines-only", "--episodes", "0"], "argument --episodes: must be positive, got 0"),
    (["--copies", "0"], "argument --copies: must be positive, got 0"),
])
def test_bad_counts_are_one_line_before_anything_runs(adhoc, capsys, argv, line):
    with pytest.raises(SystemExit) as stop:
        adhoc.main(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(f": error: {line}")  # prog: argv[0]
