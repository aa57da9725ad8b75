"""Bad input is one line naming what is wrong, exit 2; our own bugs keep their traceback
(issue 10, "Bad input")."""

from __future__ import annotations

import json
import re

import pytest

from orgteams.cli.main import main
from orgteams.envs import household_v0
from orgteams.envs.core.layout import Layout, load_layout
from orgteams.envs.core.limits import MAX_AGENTS, MAX_SEED
from orgteams.errors import UserError


def fails(capsys, argv: list[str]) -> str:
    """Run the CLI, expect exit 2 and exactly one line on stderr; return that line."""
    with pytest.raises(SystemExit) as exc:  # argparse options
        main(argv)
    assert exc.value.code == 2
    return one_line(capsys)


def one_line(capsys) -> str:
    out, err = capsys.readouterr()
    assert out == "" and err.endswith("\n") and err.count("\n") == 1, err
    return err.rstrip("\n")


@pytest.mark.parametrize(("argv", "line"), [
    (["run", "--seed", "-1"], f"orgteams run: error: argument --seed: must be from 0 to "
                              f"{MAX_SEED}, got -1"),
    (["run", "--max-rounds", "0"], "orgteams run: error: argument --max-rounds: must be from 1 "
                                   "to 10000, got 0"),
    (["run", "--max-ticks", "-5"], "orgteams run: error: argument --max-ticks: must be from 1 "
                                   "to 1000000, got -5"),
    (["run", "--agents", "3000"], f"orgteams run: error: argument --agents: must be from 1 to "
                                  f"{MAX_AGENTS}, got 3000"),
    (["run", "--agents", "three"], f"orgteams run: error: argument --agents: expected an "
                                   f"integer from 1 to {MAX_AGENTS}, got 'three'"),
    (["reflect", "--step-weight", "nan"], "orgteams reflect: error: argument --step-weight: "
                                          "must be a finite number >= 0, got 'nan'"),
    (["reflect", "--seeds", "1,-2"], f"orgteams reflect: error: argument --seeds: must be "
                                     f"from 0 to {MAX_SEED}, got -2"),
    (["sweep", "--out", "x", "--workers", "0"], "orgteams sweep: error: argument --workers: "
                                                "must be from 1 to 256, got 0"),
])
def test_bad_options_are_one_line(capsys, argv, line):
    assert fails(capsys, argv) == line


def run_fails(capsys, tmp_path, monkeypatch, *argv: str) -> str:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--backend", "planner", "--layout", "studio", "--quiet",
                 *argv]) == 2
    line = one_line(capsys)
    assert not (tmp_path / "runs").exists()  # refused before anything was written
    return line


def test_local_with_a_model_name_is_one_line(capsys, tmp_path, monkeypatch):
    assert run_fails(capsys, tmp_path, monkeypatch, "--backend", "local:foo") == (
        "orgteams run: error: member spec 'local:foo': local takes no model name (the embedded "
        "model is SmolLM2; another model is openai:<model> on any OpenAI-compatible server)")


LAYOUT = {"name": "bad", "rooms": {"k": "kitchen"}, "grid": ["#####", "#kkk#", "#####"],
          "require_rooms": False}


@pytest.mark.parametrize(("change", "problem"), [
    ({"grid": 7}, "field 'grid': must be the grid as a block of text or a list of rows, got int"),
    ({"rooms": ["k", "l"]}, "field 'rooms': Input should be a valid dictionary"),
    ({"rooms": {"k": None}}, "field 'rooms.k': Input should be a valid string"),
    ({"furniture": {"F": 3}}, "field 'furniture.F': Input should be a valid string"),
    ({"colour": "red"}, "field 'colour': unknown field"),
    ({"grid": ["#" * 600] * 600}, "whole layout: grid is 600 rows x 600 columns; the limit is "
                                  "512 x 512"),
])
def test_layout_files_with_wrong_types(capsys, tmp_path, monkeypatch, change, problem):
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps({**LAYOUT, **change}))
    with pytest.raises(UserError, match=re.escape(f"{path}: {problem}")):
        load_layout(path)
    line = run_fails(capsys, tmp_path, monkeypatch, "--layout", str(path))
    assert line == f"orgteams run: error: {path}: {problem}"


def test_a_huge_grid_is_refused_at_once():
    row = "#" * 10_000
    with pytest.raises(UserError, match=re.escape(
            "<big>: whole layout: grid is 10000 rows x 10000 columns; the limit is 512 x 512")):
        Layout.from_grid([row] * 10_000, {"k": "kitchen"}, source="<big>")


TASK = {"name": "bad", "description": "x", "candidates": ["ON(cupcake, coffee_table)"]}


@pytest.mark.parametrize(("change", "problem"), [
    ({"units": "three"}, "field 'units': Input should be a valid tuple"),
    ({"units": [1, "three"]}, "field 'units.1': Input should be a valid integer, unable to "
                              "parse string as an integer"),
    ({"default_step_limit": -5}, "field 'default_step_limit': Input should be greater than or "
                                 "equal to 1"),
    ({"step_limits": {"studio": 0}}, "field 'step_limits.studio': Input should be greater than "
                                     "or equal to 1"),
    ({"far": "maybe"}, "field 'far': Input should be a valid boolean, unable to interpret input"),
    ({"candidates": [None]}, "field 'candidates.0': a predicate must look like ON(class, "
                             "target) or [on, class, target], got None"),
])
def test_task_files_with_wrong_types(capsys, tmp_path, monkeypatch, change, problem):
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps({**TASK, **change}))
    line = run_fails(capsys, tmp_path, monkeypatch, "--task", str(path))
    assert line == f"orgteams run: error: {path}: {problem}"


def test_a_sweep_spec_past_the_seed_cap_is_one_line(capsys, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("seeds: 1000000000\n")
    assert main(["sweep", "--spec", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert one_line(capsys) == (f"orgteams sweep: error: {spec}: sweep spec field 'seeds': "
                                "1000000000 seeds; the limit is 100000")
    assert not (tmp_path / "out").exists()
    spec.write_text("agents: [3, 3000]\n")
    assert main(["sweep", "--spec", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert one_line(capsys) == (f"orgteams sweep: error: {spec}: sweep spec field 'agents': a "
                                f"team size must be from 1 to {MAX_AGENTS}, got 3000")


def test_a_sweep_spec_field_checked_before_the_run_names_its_file_or_the_flag(capsys,
                                                                              tmp_path):
    # names checked before the run (tasks, layouts, organizations, backends) said only
    # "sweep spec field 'tasks': ...", not which file; a flag over the file is named too
    spec = tmp_path / "spec.yaml"
    spec.write_text("tasks: [put_fridge, nosuch]\nbackends: [human]\n")
    out = str(tmp_path / "out")
    assert main(["sweep", "--spec", str(spec), "--out", out]) == 2
    assert one_line(capsys).startswith(
        f"orgteams sweep: error: {spec}: sweep spec field 'tasks': Unknown task 'nosuch'.")
    assert main(["sweep", "--spec", str(spec), "--tasks", "put_fridge", "--out", out]) == 2
    assert one_line(capsys) == (f"orgteams sweep: error: {spec}: sweep spec field 'backends': "
                                "a sweep cannot wait for a human member; use planner, random, "
                                "local or openai:<m>")
    assert main(["sweep", "--spec", str(spec), "--tasks", "put_frige", "--out", out]) == 2
    assert one_line(capsys).startswith("orgteams sweep: error: command line: argument "
                                       "--tasks: Unknown task 'put_frige'.")
    # a flag is named as argparse names it, in experiment too (not the spec's field)
    assert main(["sweep", "--backend", "bogus", "--out", out]) == 2
    assert one_line(capsys) == (
        "orgteams sweep: error: command line: argument --backend: Unknown member kind "
        "'bogus'. Known: human, local, openai, planner, policy, random, scripted")
    assert main(["experiment", "paper1-organizations", "--backend", "bogus", "--out",
                 str(tmp_path / "exp")]) == 2
    assert one_line(capsys) == (
        "orgteams experiment: error: command line: argument --backend: Unknown member kind "
        "'bogus'. Known: human, local, openai, planner, policy, random, scripted")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "exp" / "results.jsonl").exists()


def test_a_results_row_without_its_task_is_one_line(capsys, tmp_path):
    pytest.importorskip("scipy")
    results = tmp_path / "results.jsonl"
    cell = {"layout": "studio", "organization": "none", "agents": 3, "backend": "planner",
            "seed": 0}
    results.write_text(json.dumps({"cell": cell, "status": "ok", "summary": {}}) + "\n")
    assert main(["report", str(results), "--out", str(tmp_path / "rep")]) == 2
    assert one_line(capsys) == (
        f"orgteams report: error: {results}: result row 1: field 'cell.task' is missing (rows "
        "written by orgteams sweep name task, layout, organization, agents, backend, seed)")


@pytest.mark.parametrize(("text", "unreadable"), [
    ("", 0), ("not json\n", 1), ('{"a": 1}\n', 1), ('{"stop": "budget"}\n', 0)])
def test_a_results_file_without_rows_is_one_line(capsys, tmp_path, text, unreadable):
    # it wrote an empty report.md and said "0 groups from 0 cells", exit 0
    pytest.importorskip("scipy")
    results = tmp_path / "results.jsonl"
    results.write_text(text)
    assert main(["report", str(results), "--out", str(tmp_path / "rep")]) == 2
    assert one_line(capsys) == (
        f"orgteams report: error: {results}: no result rows ({unreadable} unreadable line(s)); "
        "expected the results.jsonl orgteams sweep writes")
    assert not (tmp_path / "rep").exists()


@pytest.mark.parametrize(("argv", "line"), [
    (["--agent", "Zed"], "--agent 'Zed' is not one of the 3 agents: agent_0 to agent_2, or "
                         "their names (Alice, Bob, Charlie)"),
    (["--agent", "agent_5", "--agents", "5", "--others", "planner"],
     "--agent 'agent_5' is not one of the 5 agents: agent_0 to agent_4, or their names "
     "(Alice, Bob, Charlie, ...)")])
def test_play_as_an_agent_not_in_the_team_is_one_line(capsys, argv, line):
    # it said "human_agent 'Zed' is not one of ['agent_0', ...]": a parameter, not the flag
    assert main(["play", "--layout", "studio", *argv]) == 2
    assert one_line(capsys) == f"orgteams play: error: {line}"


def test_debug_shows_the_traceback_of_a_user_error(capsys):
    assert main(["--debug", "run", "--backend", "planner", "--org", "leadr", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert err.splitlines()[-1].startswith(
        "orgteams run: error: Unknown organization 'leadr'. Did you mean 'leader'? Known: ")
    assert main(["run", "--backend", "planner", "--org", "leadr", "--quiet", "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err  # --debug after the command name too


def test_our_own_bugs_are_not_bad_input(monkeypatch):
    """A plain ValueError is a bug: it escapes main() with its traceback, not exit 2."""
    def broken(**kwargs):
        raise ValueError("a bug of ours")

    monkeypatch.setattr("orgteams.run.run_episode", broken)
    with pytest.raises(ValueError, match="a bug of ours"):
        main(["run", "--backend", "planner", "--quiet"])


def test_step_refuses_bools_as_actions():
    env = household_v0.parallel_env(layout="studio", num_agents=1)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=re.escape("agent_0: action True is outside the action "
                                                   "space Discrete(")):
        env.step({"agent_0": True})


@pytest.mark.parametrize(("kwargs", "msg"), [
    ({"agents": 3000}, f"agents must be from 1 to {MAX_AGENTS}, got 3000"),
    ({"seed": -1}, f"seed must be from 0 to {MAX_SEED}, got -1"),
    ({"max_rounds": 0}, "max_rounds must be from 1 to 10000, got 0"),
    ({"max_ticks": True}, "max_ticks must be an integer from 1 to 1000000, got True"),
])
def test_run_episode_checks_its_limits_too(kwargs, msg):
    from orgteams import run_episode

    with pytest.raises(UserError, match=re.escape(msg)):
        run_episode(layout="studio", backend="planner", log_path=None, **kwargs)


@pytest.mark.parametrize("exc", [
    PermissionError(13, "Permission denied", "/data/runs/out"),
    PermissionError(1, "Operation not permitted", "/sys/out"),
    OSError(30, "Read-only file system", "/mnt/ro/out"),
    OSError(28, "No space left on device", "/full/results.jsonl"),
    FileNotFoundError(2, "No such file or directory", "/proc/out")])
def test_an_unusable_path_is_one_line_naming_it(capsys, monkeypatch, exc):
    # an --out folder that cannot be made was a PermissionError traceback (sweep, demos,
    # report, experiment, reflect, record); a missing one read "[Errno 2] No such file..."
    def fails(args):
        raise exc

    monkeypatch.setattr("orgteams.cli.main.cmd_list", fails)
    assert main(["list"]) == 2
    assert one_line(capsys) == f"orgteams list: error: {exc.filename}: {exc.strerror}"


def test_an_os_error_not_about_a_path_keeps_its_traceback(monkeypatch):
    def fails(args):
        raise OSError(32, "Broken pipe")  # ours: no path the user gave

    monkeypatch.setattr("orgteams.cli.main.cmd_list", fails)
    with pytest.raises(OSError, match="Broken pipe"):
        main(["list"])


@pytest.mark.parametrize("argv", [
    ["run", "--scale", "nan"], ["run", "--fps", "inf"], ["record", "--out", "x.png",
                                                        "--scale", "inf"],
    ["replay", "x.jsonl", "--fps", "nan"], ["play", "--scale", "nan"]])
def test_a_scale_or_fps_that_is_no_finite_number_is_one_line(capsys, argv):
    # nan and inf passed: a ValueError or OverflowError traceback in the renderer
    flag, value = argv[-2:]
    bounds = {"--scale": "must be from 0.1 to 8", "--fps": "must be above 0 and at most 1000"}
    assert fails(capsys, argv) == (
        f"orgteams {argv[0]}: error: argument {flag}: {bounds[flag]}, got {value}")
    from orgteams import EpisodeConfig

    with pytest.raises(UserError, match=re.escape(f"{flag[2:]} {bounds[flag]}, got {value}")):
        EpisodeConfig(**{flag[2:]: float(value)})


@pytest.mark.parametrize("backend", ["human", "planner,human"])
def test_run_json_with_a_human_member_is_one_line(capsys, tmp_path, backend):
    # the person's prompts went to stdout beside the summary: not one JSON object (with
    # stdin closed, hundreds of prompts)
    log = tmp_path / "ep.jsonl"
    assert main(["run", "--backend", backend, "--agents", "2", "--json", "--log",
                 str(log)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        "orgteams run: error: argument --json: a human member talks on the terminal "
        "(stdout), so the output would not be one JSON object; drop --json (the summary is "
        "the last line of the episode's log)\n")
    assert not log.exists()
