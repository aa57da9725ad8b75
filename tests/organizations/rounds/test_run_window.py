"""Closing the window stops a team's run (interrupted, in the summary, the log and a sweep
row); Ctrl-C is one line and exit status 130 in every long command."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

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


def test_ctrl_c_at_the_held_last_frame_closes_it_and_the_run_stands(tmp_path, monkeypatch,
                                                                    capsys):
    """Ctrl-C while a finished episode's last frame was up printed "interrupted (Ctrl-C);
    partial log" and exited 130: the log was complete, the summary never printed."""
    from orgteams.envs.render.renderer import PygameRenderer

    def ctrl_c(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(PygameRenderer, "hold", ctrl_c)
    log = tmp_path / "ep.jsonl"
    assert main(["run", "--layout", "studio", "--backend", "planner", "--seed", "4",
                 "--render", "human", "--fps", "1000", "--quiet", "--log", str(log),
                 "--json"]) == 0
    captured = capsys.readouterr()
    s = json.loads(captured.out)
    assert s["episode_status"] == "complete" and s["success"]
    assert "Ctrl-C" not in captured.err and "partial" not in captured.err
    assert list(read_dicts(log))[-1]["episode_status"] == "complete"


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


def test_a_window_destroyed_from_outside_is_a_closed_window(tmp_path, monkeypatch, capsys):
    """``xdotool windowclose`` made X errors on our window (BadDrawable): the process
    exited 1 with no stop line and no summary, only a .partial log (issue 30). The X
    error handler marks the window lost (see test_an_x_error_on_our_window...); here a
    window that becomes lost after six frames stops the run like a closed one."""
    from orgteams.envs.render.window import Window

    shown = [0]
    original = Window.show

    def show(window, canvas, pace="tick"):
        shown[0] += 1
        return original(window, canvas, pace)

    monkeypatch.setattr(Window, "show", show)
    monkeypatch.setattr(Window, "lost", property(lambda window: shown[0] >= 6))
    log = tmp_path / "ep.jsonl"
    assert main(["run", "--layout", "studio", "--backend", "planner", "--seed", "4",
                 "--render", "human", "--fps", "1000", "--quiet", "--log", str(log),
                 "--json"]) == 1
    captured = capsys.readouterr()
    s = json.loads(captured.out)
    assert s["episode_status"] == "interrupted" and s["stop_reason"] == "window closed"
    assert captured.err.splitlines()[-1] == (f"stopped at round {s['rounds']} (window closed);"
                                             f" partial log {log}")
    written = list(read_dicts(log))
    assert written[-1]["record"] == "summary" and written[-1]["episode_status"] == "interrupted"
    assert not log.with_name(log.name + ".partial").exists()


def test_an_x_error_on_our_window_is_kept_and_others_go_to_the_old_handler():
    import ctypes

    from orgteams.envs.render.window import BAD_DRAWABLE, BAD_WINDOW, _X11Guard, _XErrorEvent

    passed = []

    class FakeX11:
        class XSetErrorHandler:  # noqa: N801 (the C name)
            restype = argtypes = None

            def __new__(cls, handler):
                return ctypes.cast(FakeX11.previous, ctypes.c_void_p).value

    from orgteams.envs.render.window import _X_HANDLER

    FakeX11.previous = _X_HANDLER(lambda display, event: passed.append(
        event.contents.resourceid) or 7)
    guard = _X11Guard(FakeX11)

    def error(resource, code):
        return guard._handle(None, ctypes.pointer(_XErrorEvent(0, None, resource, 1, code)))

    guard.window = 0x200008
    assert error(0x200008, BAD_DRAWABLE) == 0 and error(0x200008, BAD_WINDOW) == 0
    assert guard.lost and guard.errors == 2 and passed == []
    assert error(0x300001, BAD_WINDOW) == 0 and passed == []  # once lost, all is swallowed
    guard.errors = 0
    assert error(0x300001, BAD_WINDOW) == 7 and passed == [0x300001]  # not ours: passed on
    assert error(0x300001, 2) == 7 and not guard.lost
    assert error(0x200008, 170) == 0 and guard.lost  # an extension's error on our window
    # Destroyed while it was being made (before its id was known): lost all the same.
    guard.window, guard.errors = None, 0
    assert error(0x500008, BAD_WINDOW) == 0 and not guard.lost

    class Display:  # pygame.display, as far as bind() asks
        @staticmethod
        def get_wm_info():
            return {"window": 0x500008}

    guard.bind(type("pg", (), {"display": Display, "error": RuntimeError}))
    assert guard.window == 0x500008 and guard.lost


def _window_of(proc: subprocess.Popen, env: dict) -> str:
    """The X id of the orgteams window of ``proc`` (by process: SDL's WM_NAME is UTF-8,
    which xdotool's --name does not match; SDL also makes helper windows). Gives up
    after 120 s: a run whose window is never found (a loaded machine once hung this test
    for 25 minutes) fails the test, and the caller kills the run."""
    deadline = time.monotonic() + 120
    while proc.poll() is None:
        if time.monotonic() > deadline:
            raise AssertionError("no orgteams window of the run found in 120 s")
        ids = subprocess.run(["xdotool", "search", "--pid", str(proc.pid)], env=env,
                             capture_output=True, text=True, timeout=30).stdout.split()
        for window in ids:
            name = subprocess.run(["xdotool", "getwindowname", window], env=env,
                                  capture_output=True, text=True, timeout=30).stdout
            if name.startswith("orgteams"):
                return window
        time.sleep(0.05)
    raise AssertionError(f"the run ended before its window was found: {proc.communicate()}")


@pytest.mark.skipif(not (shutil.which("Xvfb") and shutil.which("xdotool")),
                    reason="needs Xvfb and xdotool (a real X server)")
def test_xdotool_windowclose_stops_a_run_honestly(tmp_path):
    """The real thing, on a private Xvfb: the window is destroyed from outside while a
    team plays; the run stops with its stop line, exit 1 and the summary written."""
    read, write = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1400x900x24",
                             "-nolisten", "tcp"], pass_fds=(write,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    run = None
    try:
        number = os.read(read, 16).decode().strip()  # Xvfb writes its display when ready
        assert number.isdigit(), number
        env = {k: v for k, v in os.environ.items() if k != "SDL_VIDEODRIVER"}
        env.update(DISPLAY=f":{number}", SDL_AUDIODRIVER="dummy")
        log = tmp_path / "ep.jsonl"
        run = subprocess.Popen([sys.executable, "-m", "orgteams", "run", "--layout", "house",
                                "--agents", "9", "--backend", "planner", "--fps", "2",
                                "--render", "human", "--log", str(log)],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        window = _window_of(run, env)
        # Close it while the team plays, as a person would: once the first round is out.
        first = run.stderr.readline()
        assert re.match(r"  r0 ", first), first
        subprocess.run(["xdotool", "windowclose", window], env=env, check=True, timeout=30)
        out, err = run.communicate(timeout=120)
    finally:
        if run is not None and run.poll() is None:
            run.kill()
            run.communicate()
        xvfb.terminate()
        xvfb.wait(timeout=30)
        os.close(read)
    assert "X Error" not in err and "Traceback" not in err
    assert run.returncode == 1
    assert re.search(r"^stopped at round \d+ \(window closed\); partial log ", err, re.M), err
    written = list(read_dicts(log))
    assert written[-1]["record"] == "summary"
    assert written[-1]["episode_status"] == "interrupted"
    assert written[-1]["stop_reason"] == "window closed"
