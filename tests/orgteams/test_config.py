"""One EpisodeConfig / ReflectConfig for every entry point (issue 26, "Entry points"): the
same bad value is the same problem from Python, the command line and a sweep spec;
``run_episode(config, **overrides)`` plays what its keywords play; the CLI's options and
help come from the fields."""

from __future__ import annotations

import argparse
import json
import re
from typing import Annotated

import pytest
from pydantic import Field

from orgteams.cli.main import build_parser, main
from orgteams.cli.options import add_fields, config_from_args
from orgteams.config import Cli, EpisodeConfig, ReflectConfig, int_arg
from orgteams.envs.core.limits import MAX_AGENTS, MAX_SEED
from orgteams.errors import UserError
from orgteams.experiments.sweep_spec import SweepSpec, cell_config
from orgteams.run import run_episode


def cli_line(capsys, argv: list[str]) -> str:
    """The one stderr line of a command line refused with exit 2 (argparse or ours)."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    assert code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    return err.rstrip("\n")


# Every episode field a sweep spec shares: (field, bad value, its command-line text, problem)
SHARED_WITH_SWEEPS = [
    ("max_rounds", 0, "0", "must be from 1 to 10000, got 0"),
    ("max_ticks", -5, "-5", "must be from 1 to 1000000, got -5"),
    ("max_transport_failures", -1, "-1", "must be from 0 to 1000, got -1"),
    ("max_invalid_replies", 5000, "5000", "must be from 0 to 1000, got 5000"),
]


@pytest.mark.parametrize(("field", "value", "text", "problem"), SHARED_WITH_SWEEPS)
def test_the_same_bad_value_is_the_same_problem_everywhere(capsys, tmp_path, field, value,
                                                            text, problem):
    flag = "--" + field.replace("_", "-")
    with pytest.raises(UserError, match=re.escape(f"{field} {problem}")):
        run_episode(layout="studio", backend="planner", log_path=None, **{field: value})
    with pytest.raises(UserError, match=re.escape(f"{field} {problem}")):
        EpisodeConfig(**{field: value})
    for command in (["run"], ["sweep", "--out", str(tmp_path / "cli")]):
        assert cli_line(capsys, [*command, flag, text]) == (
            f"orgteams {command[0]}: error: argument {flag}: {problem}")
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"{field}: {value}\n")
    assert cli_line(capsys, ["sweep", "--spec", str(spec), "--out", str(tmp_path / "o")]) == (
        f"orgteams sweep: error: {spec}: sweep spec field '{field}' {problem}")
    with pytest.raises(UserError, match=re.escape(
            f"experiment x: sweep spec field '{field}' {problem}")):
        SweepSpec.from_dict({field: value}, source="experiment x")
    assert not (tmp_path / "cli").exists() and not (tmp_path / "o").exists()


@pytest.mark.parametrize(("field", "value", "text", "problem"), [
    ("agents", 3000, "3000", f"must be from 1 to {MAX_AGENTS}, got 3000"),
    ("seed", -1, "-1", f"must be from 0 to {MAX_SEED}, got -1"),
    ("temperature", 3, "3", "must be between 0 and 2, got 3"),
    ("scale", 0, "0", "must be from 0.1 to 8, got 0"),
    ("fps", -2, "-2", "must be above 0 and at most 1000, got -2"),
    # nan, inf and huge values passed 'positive': a traceback in the video writer (nan,
    # 1e-9), pygame out of memory (1e9), a writer that never finished (--fps 1e9)
    ("scale", float("nan"), "nan", "must be from 0.1 to 8, got nan"),
    ("scale", 100, "100", "must be from 0.1 to 8, got 100"),
    ("scale", 0.01, "0.01", "must be from 0.1 to 8, got 0.01"),
    ("fps", float("inf"), "inf", "must be above 0 and at most 1000, got inf"),
    ("fps", 5000, "5000", "must be above 0 and at most 1000, got 5000"),
])
def test_python_and_the_run_command_tell_the_same_problem(capsys, field, value, text,
                                                           problem):
    flag = "--" + field.replace("_", "-")
    with pytest.raises(UserError, match=re.escape(f"{field} {problem}")):
        run_episode(layout="studio", backend="planner", log_path=None, **{field: value})
    assert cli_line(capsys, ["run", flag, text]) == (
        f"orgteams run: error: argument {flag}: {problem}")


def test_a_sweep_team_size_is_checked_as_agents_is():
    with pytest.raises(UserError, match=re.escape(
            f"sweep spec field 'agents': a team size must be from 1 to {MAX_AGENTS}, got 0")):
        SweepSpec.from_dict({"agents": [3, 0]}).validate()


@pytest.mark.parametrize(("field", "value", "text", "problem"), [
    ("iterations", 0, "0", "must be >= 1, got 0"),
    ("candidates", 5000, "5000", "must be at most 1000, got 5000"),
    ("episodes_per_iteration", 0, "0", "must be >= 1, got 0"),
    ("seeds", [1, -2], "1,-2", f"must be from 0 to {MAX_SEED}, got -2"),
])
def test_python_and_the_reflect_command_tell_the_same_problem(capsys, tmp_path, field, value,
                                                               text, problem):
    from orgteams.experiments.reflect import run_reflect

    flag = "--" + field.replace("_", "-")
    out = tmp_path / "reflect"
    with pytest.raises(UserError, match=re.escape(f"{field} {problem}")):
        run_reflect("leader", backend="planner", coordinator="heuristic", out_dir=out,
                    **{field: value})
    assert cli_line(capsys, ["reflect", "--out", str(out), flag, text]) == (
        f"orgteams reflect: error: argument {flag}: {problem}")
    assert not out.exists()


def test_a_weight_shows_what_was_typed_on_the_command_line(capsys):
    with pytest.raises(UserError, match=re.escape(
            "step_weight must be a finite number >= 0, got nan")):
        ReflectConfig(step_weight=float("nan"))
    assert cli_line(capsys, ["reflect", "--step-weight", "nan"]) == (
        "orgteams reflect: error: argument --step-weight: must be a finite number >= 0, "
        "got 'nan'")


def test_names_and_specs_keep_their_own_lines():
    """A bad shock or prompt variant is a whole line of its own, from any front end."""
    with pytest.raises(UserError, match=re.escape("malformed shock 'kill:agent_1@2': unknown "
                                                  "kind 'kill'")):
        EpisodeConfig(shocks=["kill:agent_1@2"])
    with pytest.raises(UserError, match=re.escape(
            "unknown prompt variant 'terse'; known: default, compact")):
        run_episode(layout="studio", backend="planner", log_path=None, prompts="terse")


def test_a_config_plays_what_its_keywords_play(tmp_path):
    config = EpisodeConfig(layout="studio", backend="planner", max_rounds=3, log_path=None)
    by_config = run_episode(config, seed=2).summary.to_dict()
    by_keywords = run_episode(layout="studio", backend="planner", max_rounds=3, seed=2,
                              log_path=tmp_path / "e.jsonl")
    for key in ("ticks", "rounds", "units_done", "seed", "layout", "organization"):
        assert by_config[key] == by_keywords.summary.value(key), key
    assert by_config["seed"] == 2 and by_config["rounds"] == 3
    episode = next(json.loads(line) for line in (tmp_path / "e.jsonl").open()
                   if json.loads(line).get("record") == "episode")
    assert episode["seed"] == 2 and config.seed == 0  # the override made a copy


def test_an_unknown_keyword_or_a_positional_name_is_a_type_error():
    with pytest.raises(TypeError, match=re.escape(
            "run_episode() got an unexpected keyword argument 'max_round'")):
        run_episode(max_round=3)
    with pytest.raises(TypeError, match=re.escape(
            "run_episode() takes EpisodeConfig as its config (or keywords), got str")):
        run_episode("prepare_afternoon_tea")


def test_overrides_are_checked_like_the_config():
    config = EpisodeConfig(backend="planner")
    with pytest.raises(UserError, match=re.escape("max_rounds must be from 1 to 10000, got 0")):
        config.replace(max_rounds=0)
    assert config.replace(max_transport_failures=0).max_transport_failures == 0  # 0: never


def test_a_sweep_cell_is_an_episode_config():
    spec = SweepSpec.from_dict({"max_rounds": 4, "max_transport_failures": 0,
                                "shocks": {"cut": ["remove:agent_1@2"]}})
    cell = next(spec.cells())
    config = cell_config(cell, "x.jsonl", spec.episode_options())
    assert (config.task, config.organization, config.seed, config.max_rounds) == (
        cell["task"], cell["organization"], cell["seed"], 4)
    assert config.max_transport_failures == 0 and config.log_path == "x.jsonl"
    assert [s.text() for s in config.shocks] == ["remove:agent_1@2"]


def test_a_sweep_flag_overrides_the_spec_even_with_zero(tmp_path, monkeypatch):
    """``--max-transport-failures 0`` (never stop) replaces the spec's 3; it is no
    "not given"."""
    seen = {}

    def fake_run_sweep(spec, out, **kw):
        seen["options"] = spec.episode_options()
        return {"ran": 0, "ok": 0, "errors": 0, "skipped": 0, "results": "r"}

    monkeypatch.setattr("orgteams.experiments.sweep.run_sweep", fake_run_sweep)
    spec = tmp_path / "spec.yaml"
    spec.write_text("max_transport_failures: 3\nmax_rounds: 7\n")
    assert main(["sweep", "--spec", str(spec), "--out", str(tmp_path / "o"),
                 "--max-transport-failures", "0", "--quiet"]) == 0
    assert seen["options"]["max_transport_failures"] == 0
    assert seen["options"]["max_rounds"] == 7  # not given: the spec's


def test_run_help_lists_every_option_it_always_listed():
    """The flags and metavars of ``orgteams run`` before the options came from the config
    (the list is today's; an option removed or renamed fails here)."""
    run = build_parser()._subparsers._group_actions[0].choices["run"]
    shown = {s: a.metavar for a in run._actions for s in a.option_strings}
    assert set(shown) == {
        "-h", "--help", "--task", "--layout", "--agents", "--seed", "--json", "--org",
        "--backend", "--max-rounds", "--max-ticks", "--render", "--video", "--fps",
        "--scale", "--log", "--shock", "--monitor", "--cache", "--quiet",
        "--max-transport-failures", "--max-invalid-replies", "--temperature", "--prompts",
        "--max-cost", "--price-per-mtok", "--debug"}
    assert shown["--max-transport-failures"] == shown["--max-invalid-replies"] == "N"
    assert (shown["--max-cost"], shown["--price-per-mtok"]) == ("USD", "IN,OUT")
    assert (shown["--org"], shown["--log"], shown["--shock"]) == ("ORG", "LOG", "SHOCK")
    text = " ".join(run.format_help().split())
    for name, field in EpisodeConfig.model_fields.items():
        cli = next((m for m in field.metadata if isinstance(m, Cli)), None)
        if cli is not None:
            assert f"{cli.flag}" in text and " ".join(field.description.split()) in text, name


def test_a_new_field_is_a_new_option_in_one_place():
    class Config(EpisodeConfig):
        patience: Annotated[int, Cli("--patience", int_arg(1, 9))] = Field(
            3, description="rounds to wait")

    p = argparse.ArgumentParser()
    add_fields(p, Config, ["seed", "patience"])
    assert "rounds to wait (default: 3)" in " ".join(p.format_help().split())
    config = config_from_args(Config, p.parse_args(["--patience", "5"]))
    assert (config.patience, config.seed) == (5, 0)  # not given: the config's default
    assert config_from_args(Config, p.parse_args([])).patience == 3


def test_shared_constants_stay_equal():
    from orgteams.agents.llm.prompts import PROMPT_VARIANTS
    from orgteams.config import PROMPT_CHOICES

    assert PROMPT_CHOICES == tuple(PROMPT_VARIANTS)


def test_a_reflect_recipe_with_a_bad_variant_fails_before_any_variant_plays(tmp_path):
    from orgteams.experiments.recipes import _run_reflect

    recipe = {"kind": "reflect", "organization": "leader", "layout": "studio",
              "critic": "heuristic", "coordinator": "heuristic", "iterations": 1,
              "variants": {"good": {}, "bad": {"candidates": 0}}}
    with pytest.raises(UserError, match=re.escape(
            "experiment 't' variant 'bad' field 'candidates' must be >= 1, got 0")):
        _run_reflect("t", recipe, "planner", 1, tmp_path, progress=False)
    assert not list(tmp_path.iterdir())


def test_reflect_config_runs_as_its_keywords(tmp_path):
    from orgteams.experiments.reflect import run_reflect

    config = ReflectConfig(layout="studio", backend="planner", critic="heuristic",
                           coordinator="heuristic", iterations=1, episodes_per_iteration=1,
                           out_dir=tmp_path / "a")
    a = run_reflect(config)
    b = run_reflect("leader", layout="studio", backend="planner", critic="heuristic",
                    coordinator="heuristic", iterations=1, episodes_per_iteration=1,
                    out_dir=tmp_path / "b")
    assert [r["cost"] for r in a.history] == [r["cost"] for r in b.history]
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run["seeds"] == [0] and run["episodes_per_iteration"] == 1
    assert run["critic"] == "heuristic" and run["coordinator"] == "heuristic"


@pytest.mark.parametrize(("argv", "line"), [
    (["replay", "ep.jsonl", "--fps", "nan"],
     "orgteams replay: error: argument --fps: must be above 0 and at most 1000, got nan"),
    (["replay", "ep.jsonl", "--scale", "x"],
     "orgteams replay: error: argument --scale: must be a number, got 'x'"),
    (["play", "--scale", "100"],
     "orgteams play: error: argument --scale: must be from 0.1 to 8, got 100"),
])
def test_replay_and_play_check_fps_and_scale_as_run_does(capsys, argv, line):
    assert cli_line(capsys, argv) == line
