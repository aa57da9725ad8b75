"""Episodes that end early say so (issue 30): a replay of a cut-short or interrupted log,
the record progress bar of an episode that met its goal early, and the run summary
table's install hint."""

from __future__ import annotations

import json

import pytest

from orgteams.cli.commands import _print_summary
from orgteams.cli.main import main
from orgteams.organizations.rounds.episode_summary import EpisodeSummary
from orgteams.run import run_episode

KW = {"layout": "studio", "organization": "leader", "agents": 3, "backend": "planner",
      "seed": 4}


def test_the_summary_table_keeps_brackets_in_values(capsys):
    """rich read ``[local]`` in ``pip install 'orgteams[local]'`` as markup and dropped it."""
    pytest.importorskip("rich")
    _print_summary(EpisodeSummary.from_dict({
        "task": "prepare_afternoon_tea", "layout": "studio", "organization": "team[1]",
        "num_agents": 3, "episode_status": "error",
        "stop_detail": "pip install 'orgteams[local]'"}))
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "stop_detail" in line)
    assert "pip install 'orgteams[local]'" in row
    assert "team[1]" in out.splitlines()[0]  # the title


@pytest.fixture(scope="module")
def interrupted_log(tmp_path_factory):
    """A run stopped after its second round, as a closed window stops it."""
    path = tmp_path_factory.mktemp("ends") / "ep.jsonl"
    rounds = []
    result = run_episode(**KW, log_path=path, on_round=lambda r, _: rounds.append(r),
                         should_stop=lambda: "window closed" if len(rounds) >= 2 else None)
    assert result.summary.episode_status == "interrupted"
    return path, result.summary.to_dict()


def test_replaying_an_interrupted_run_says_where_it_stopped(interrupted_log, capsys):
    path, summary = interrupted_log
    assert main(["replay", str(path), "--no-window"]) == 0
    out = capsys.readouterr().out
    assert out == (f"replayed {summary['ticks']} ticks: interrupted at tick {summary['ticks']} "
                   "(window closed), matches the log\n")


def test_replaying_a_log_cut_short_says_interrupted_at_its_last_tick(interrupted_log,
                                                                    tmp_path, capsys):
    path, _ = interrupted_log
    cut = tmp_path / "cut.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    kept = [r for r in lines if r.get("record") not in ("end", "summary")
            and not (r.get("record") == "tick" and r["tick"] > 3)]
    cut.write_text("".join(json.dumps(r) + "\n" for r in kept))
    assert main(["replay", str(cut), "--no-window", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outcome"] == "interrupted at tick 3 (the log ends there)"
    assert out["matches"] is None and out["ticks"] == 3
    assert main(["replay", str(cut), "--no-window"]) == 0
    assert capsys.readouterr().out == ("replayed 3 ticks: interrupted at tick 3 (the log ends "
                                       "there), not checked\n")


def test_the_record_progress_bar_ends_full_when_the_goal_is_met_early(tmp_path, capsys):
    """It counted against the tick limit and froze at 10% (84 of 850)."""
    out = tmp_path / "last.png"
    assert main(["record", "--layout", "studio", "--seed", "4", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    ticks = int(captured.out.split(": ")[1].split(" ticks")[0])
    assert captured.out == f"wrote 1 frame(s) to {out}: {ticks} ticks, goal complete\n"
    bar = [x for x in captured.err.splitlines() if x.startswith(f"recording {out}")]
    assert bar[-1] == f"recording {out} tick {ticks}, goal complete: {ticks}/{ticks}"
    limit = run_episode(**KW, log_path=None).summary.step_limit
    assert ticks < limit  # it did end early: the bar would have stopped short of full


def test_the_summary_without_rich_is_the_same_rows_aligned(capsys, monkeypatch):
    """Without rich (command 1's install) the keys overflowed their column of 26
    (``algebraic_connectivity_binary``), floats printed 16 digits, and no title."""
    import builtins

    real = builtins.__import__

    def no_rich(name, *args, **kwargs):
        if name.startswith("rich"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_rich)
    _print_summary(EpisodeSummary.from_dict({
        "task": "prepare_afternoon_tea", "layout": "studio", "organization": "leader",
        "num_agents": 3, "episode_status": "complete", "comm_tokens_per_step": 61 / 3,
        "algebraic_connectivity_binary": 1.0}))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "prepare_afternoon_tea on studio, leader (3 agents)"
    assert len({line.index(": ") for line in lines[1:]}) == 1  # one column
    assert f"{'comm_tokens_per_step':>31}: 20.333" in lines
    assert "algebraic_connectivity_per_tick: 0.000" in lines
