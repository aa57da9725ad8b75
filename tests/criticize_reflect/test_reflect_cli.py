"""``orgteams reflect`` end to end: planner teams, scripted Critic and Coordinator."""

from __future__ import annotations

import json

from doubles import read_dicts

from orgteams.cli.main import main
from orgteams.organizations.spec.organization import Organization


def test_reflect_two_iterations_through_the_cli(capsys, tmp_path):
    out = tmp_path / "reflect"
    argv = ["reflect", "--org", "leader", "--task", "prepare_afternoon_tea", "--layout",
            "studio", "--critic", "scripted", "--coordinator", "scripted", "--backend",
            "planner", "--iterations", "2", "--out", str(out), "--json"]
    # The scripted Coordinator's minimal reply repeats the current organization, so its
    # one call fell back: the run is kept, but it says so in one line and exits 1.
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "orgteams reflect: every Coordinator call fell back (1 of 1; last: invalid reply "
        "after 2 attempt(s): no candidate is valid (candidate 0: invalid: plays exactly like "
        "the current organization (set at least one field to a new value))); the "
        f"organization was never revised. Results are kept in {out}"]
    lines = captured.out.strip().splitlines()
    assert len(lines) == 1  # exactly one JSON object
    result = json.loads(lines[0])
    assert result["iterations_done"] == 2 and result["ran"] == [0, 1]
    first, second = result["history"]
    assert first["organization"] == "leader" and first["success"] is True
    assert first["cost"] == first["ticks"] + first["comm_tokens_per_step"]
    assert second["organization"] == first["next_organization"]
    best = Organization.from_yaml(out / "best.yaml")
    assert best.name == result["best"]["organization"]
    assert (out / "logs" / "iteration_1.jsonl").is_file()
    # rerun: nothing left to do, the same best (and still never revised)
    assert main(argv) == 1
    again = json.loads(capsys.readouterr().out)
    assert again["resumed_from"] == 2 and again["ran"] == [] and again["best"] == result["best"]


def test_reflect_refuses_a_different_run_in_the_same_folder(capsys, tmp_path):
    base = ["reflect", "--layout", "studio", "--critic", "scripted", "--coordinator",
            "scripted", "--backend", "planner", "--iterations", "1", "--out", str(tmp_path)]
    assert main(base) == 0
    capsys.readouterr()
    assert main([*base, "--no-critic"]) == 2
    assert "different use_critic" in capsys.readouterr().err


def test_bad_schedule_writes_nothing(capsys, tmp_path):
    out = tmp_path / "reflect"
    argv = ["reflect", "--layout", "studio", "--task", "no_such_task", "--critic", "scripted",
            "--coordinator", "scripted", "--backend", "planner", "--out", str(out)]
    assert main(argv) == 2
    assert "no_such_task" in capsys.readouterr().err
    assert not out.exists()  # no config.json, no folder


def test_resumed_iteration_replaces_its_log(capsys, tmp_path):

    out = tmp_path / "reflect"
    argv = ["reflect", "--layout", "studio", "--critic", "scripted", "--coordinator",
            "scripted", "--backend", "planner", "--iterations", "1", "--out", str(out)]
    assert main(argv) == 0
    log = out / "logs" / "iteration_0.jsonl"
    first = log.read_text()
    (out / "history.jsonl").unlink()  # as if killed before the iteration was finished
    assert main(argv) == 0
    records = list(read_dicts(log))
    assert sum(r.get("record") == "episode" for r in records) == 1  # one episode, not two
    assert log.read_text().count("\n") == first.count("\n")
    assert not log.with_name("iteration_0.jsonl.partial").exists()
