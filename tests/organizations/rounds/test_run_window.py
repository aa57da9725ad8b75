"""Closing the window stops a team's run (interrupted, in the summary, the log and a sweep
row); Ctrl-C is one line and exit status 130 in every long command."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading

import pytest

pygame = pytest.importorskip("pygame")

from doubles import read_dicts, records_of  # noqa: E402
from window_script import Script, key  # noqa: E402

from orgteams.cli.main import main  # noqa: E402
from orgteams.experiments.sweep import SweepSpec, run_sweep  # noqa: E402
from orgteams.run import run_episode  # noqa: E402

QUIT = pygame.event.Event(pygame.QUIT)
KW = {"layout": "studio", "organization": "leader", "agents": 3, "backend": "planner",
      "seed": 4}


@pytest.fixture(scope="module")
def headless():
    return run_episode(**KW, log_path=None).summary.to_dict()


def test_a_run_in_the_window_is_complete_and_holds_its_last_frame(tmp_path, monkeypatch,
                                                                   headless):
    script = Script(monkeypatch, when_holding=[key(pygame.K_q)], hold_reads=4)
    s = run_episode(**KW, render="human", fps=1000,
                    log_path=tmp_path / "ep.jsonl").summary.to_dict()
    assert s["episode_status"] == "complete" and s["stop_reason"] == "goal met"
    assert s["ticks"] == headless["ticks"] and s["success"] == headless["success"]
    assert script.banners[0] == ["Episode over: goal complete",
                                 f"tick {s['ticks']} of {s['step_limit']}, {s['rounds']} rounds, "
                                 f"{s['units_done']}/{s['units_total']} goal units",
                                 "Q to close, R to replay"]
    assert len(script.banners) == 4


def test_closing_the_window_stops_the_run(tmp_path, monkeypatch, headless):
    Script(monkeypatch, {6: [QUIT]})
    log = tmp_path / "ep.jsonl"
    result = run_episode(**KW, render="human", fps=1000, log_path=log)
    s = result.summary.to_dict()
    assert s["episode_status"] == "interrupted" and s["stop_reason"] == "window closed"
    assert s["ticks"] < headless["ticks"] and not s["success"]
    written = list(read_dicts(log))
    assert written[-1]["record"] == "summary"
    assert written[-1]["episode_status"] == "interrupted"
    # Nothing was played after the close: the last tick line is the summary's tick.
    ticks = [r["tick"] for r in written if r.get("record") == "tick"]
    assert ticks[-1] == s["ticks"]


def test_cli_says_where_it_stopped(tmp_path, monkeypatch, capsys):
    Script(monkeypatch, {6: [QUIT]})
    log = tmp_path / "ep.jsonl"
    assert main(["run", "--layout", "studio", "--backend", "planner", "--seed", "4",
                 "--render", "human", "--fps", "1000", "--quiet", "--log", str(log),
                 "--json"]) == 1  # the episode did not complete
    captured = capsys.readouterr()
    s = json.loads(captured.out)
    # Without the local extra's tokenizer, token counts are approximate and a run says so.
    note = f"warning: {s['tokens_approximate']}\n" if s.get("tokens_approximate") else ""
    assert captured.err == (f"{note}stopped at round {s['rounds']} (window closed); "
                            f"partial log {log}\n")
    assert s["episode_status"] == "interrupted"


def test_closing_the_window_while_a_person_is_asked_interrupts(tmp_path, monkeypatch):
    Script(monkeypatch, when_asked=[QUIT])
    log = tmp_path / "ep.jsonl"
    result = run_episode(**{**KW, "backend": "human,planner,planner"}, render="human",
                         fps=1000, log_path=log)
    s = result.summary.to_dict()
    assert s["episode_status"] == "interrupted" and s["stop_reason"] == "window closed"
    assert not s["success"] and s["ticks"] == 0
    # No turn of the person was filled in for them.
    assert not [r for r in read_dicts(log) if r.get("fallback") == "input closed"]
    assert not [r for r in records_of(result) if r.get("agent") == "agent_0"]


def _stopped_after_two_rounds(cell, log_path, options):
    rounds = []

    def stop():
        return "test budget" if len(rounds) >= 2 else None

    return run_episode(task=cell["task"], layout=cell["layout"],
                       organization=cell["organization"], agents=cell["agents"],
                       backend=cell["backend"], seed=cell["seed"], log_path=log_path,
                       on_round=lambda r, _: rounds.append(r), should_stop=stop,
                       **options).summary.to_dict()


def test_an_interrupted_episode_is_not_an_ok_sweep_row(tmp_path):
    spec = SweepSpec(tasks=("prepare_afternoon_tea",), layouts=("studio",),
                     organizations=("leader",), agents=(3,), backends=("planner",), seeds=(4,))
    out = run_sweep(spec, tmp_path, workers=1, episode_fn=_stopped_after_two_rounds,
                    progress=False)
    assert out["ok"] == 0 and out["errors"] == 1
    row = json.loads((tmp_path / "results.jsonl").read_text())
    assert row["status"] == "error" and row["error"] == "episode interrupted: test budget"
    assert row["summary"]["rounds"] == 2
    # A rerun retries it.
    again = run_sweep(spec, tmp_path, workers=1, episode_fn=_stopped_after_two_rounds,
                      progress=False)
    assert again["ran"] == 1


@pytest.mark.parametrize("argv, target", [
    (["run", "--backend", "planner"], "orgteams.run.run_episode"),
    (["play"], "orgteams.play.teammates.play_with"),
    (["replay", "x.jsonl"], "orgteams.replay.replay"),
    (["sweep", "--out", "o"], "orgteams.experiments.sweep.run_sweep"),
    (["reflect", "--backend", "planner"], "orgteams.experiments.reflect.run_reflect"),
    (["record", "--out", "x.gif"], "orgteams.run.run_episode"),
])
def test_ctrl_c_is_one_line_and_status_130(argv, target, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(target, interrupted)
    assert main(argv) == 130
    captured = capsys.readouterr()
    assert captured.err == f"orgteams {argv[0]}: interrupted (Ctrl-C)\n"
    assert captured.out == ""


def _sigint_as_at_a_terminal() -> None:
    # Runs in the child, before exec. A shell that starts a job in the background without
    # job control (`nohup pytest &`, a CI runner) sets SIGINT to "ignored"; that survives
    # exec, and Python then installs no KeyboardInterrupt handler. A person's Ctrl-C
    # reaches a program whose SIGINT has the default disposition: give the child that.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_real_sigint_during_a_watched_run(tmp_path):
    env = {**os.environ, "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}
    with subprocess.Popen(
            [sys.executable, "-m", "orgteams", "run", "--layout", "studio", "--backend",
             "planner", "--render", "human", "--fps", "2", "--log", str(tmp_path / "ep.jsonl")],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=_sigint_as_at_a_terminal) as proc:
        # A child that never prints would block readline: kill it after a generous while.
        guard = threading.Timer(120, proc.kill)
        guard.start()
        try:
            first = proc.stderr.readline()  # the live printer's first line: the run is going
            assert re.match(r"  r0 ", first), first
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:  # whatever failed above, no child is left running
            guard.cancel()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (f"orgteams run: interrupted (Ctrl-C); partial "
                                            f"log: {tmp_path / 'ep.jsonl'}")


def test_a_pyramid_keeps_its_tiers_and_shows_its_roles(monkeypatch):
    """Nine agents: one leader, two vice leaders, six members, in the log and the window."""
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv

    seen = []
    original = HighLevelEnv.step

    def step(env, actions, **hooks):
        seen.append(dict(env.overlay.roles))
        return original(env, actions, **hooks)

    monkeypatch.setattr(HighLevelEnv, "step", step)
    result = run_episode(layout="house", organization="pyramid", agents=9, backend="planner",
                         seed=0, max_rounds=1, log_path=None)
    roles = {r["agent"]: r["role"] for r in records_of(result) if r.get("phase") == "communicate"}
    expected = {"agent_0": "leader", "agent_1": "vice_leader", "agent_2": "vice_leader",
                **{f"agent_{i}": "member" for i in range(3, 9)}}
    assert roles == expected
    assert seen[0] == expected
