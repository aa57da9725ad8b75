"""The orgteams command line: --json output, clear errors, the main subcommands."""

from __future__ import annotations

import json

import pytest
from doubles import read_dicts

from orgteams.cli.main import main
from orgteams.errors import MissingExtraError


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1, out  # exactly one JSON object on stdout
    return json.loads(out[0])


def test_run_prints_the_episode_summary_and_writes_the_log(capsys, tmp_path):
    log = tmp_path / "ep.jsonl"
    s = run_json(capsys, "run", "--backend", "planner", "--layout", "studio", "--org", "leader",
                 "--seed", "2", "--log", str(log), "--quiet")
    assert s["success"] is True and s["organization"] == "leader"
    assert s["ticks"] > 0 and s["rounds"] > 0
    records = list(read_dicts(log))
    assert records[-1]["record"] == "summary" and records[-1]["ticks"] == s["ticks"]
    assert {r["phase"] for r in records if "phase" in r} == {"communicate", "act"}


def test_run_with_shock_and_monitor_flags(capsys, tmp_path):
    s = run_json(capsys, "run", "--backend", "planner", "--layout", "studio", "--org",
                 "sequential", "--shock", "remove:agent_2@1", "--monitor", "--max-rounds", "4",
                 "--log", str(tmp_path / "e.jsonl"), "--quiet")
    assert s["shocks"][0]["kind"] == "remove" and s["shocks"][0]["agent"] == "agent_2"
    assert s["rounds"] == 4


def test_run_prints_every_shock_kind_as_a_team_event(capsys, tmp_path):
    code = main(["run", "--backend", "planner", "--layout", "apartment", "--org", "leader",
                 "--seed", "1", "--shock", "remove:agent_2@1", "--shock",
                 "substitute:agent_1=planner@2", "--shock", "regulate:protocol=free@3",
                 "--shock", "priority:put_fridge@4", "--max-rounds", "6",
                 "--log", str(tmp_path / "e.jsonl"), "--json"])
    out = capsys.readouterr()
    assert code == 0 and "Traceback" not in out.err
    s = json.loads(out.out)
    assert [x["kind"] for x in s["shocks"]] == ["remove", "substitute", "regulate", "priority"]
    assert all(x["applied"] for x in s["shocks"])
    assert "event shock: {'round': 4" in out.err and "'to_task': 'put_fridge'" in out.err


def test_bad_regulation_and_priority_shocks_are_one_line(capsys):
    assert main(["run", "--backend", "planner", "--shock", "regulate:protocol=bogus@2",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("orgteams run: error: regulate shock protocol='bogus': ")
    assert "Traceback" not in err
    assert main(["run", "--backend", "planner", "--layout", "apartment", "--seed", "1",
                 "--shock", "priority:setup_table@2", "--quiet"]) == 2
    assert ("orgteams run: error: priority shift to task 'setup_table': it uses none of "
            "the goal's object classes") in capsys.readouterr().err


def test_unknown_organization_is_one_clear_line(capsys):
    assert main(["run", "--backend", "planner", "--org", "leadr", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "orgteams run: error: Unknown organization 'leadr'. Did you mean 'leader'?" in err
    assert "Traceback" not in err


def test_unknown_layout_and_bad_shock(capsys):
    assert main(["run", "--backend", "planner", "--layout", "apartmnt", "--quiet"]) == 2
    assert "Did you mean 'apartment'?" in capsys.readouterr().err
    assert main(["run", "--backend", "planner", "--shock", "boom", "--quiet"]) == 2
    assert "malformed shock 'boom'" in capsys.readouterr().err


def test_list(capsys):
    out = run_json(capsys, "list")
    assert "apartment" in out["layouts"] and "sequential" in out["organizations"]
    assert "prepare_afternoon_tea" in out["tasks"]


def test_record_writes_a_video(capsys, tmp_path):
    pytest.importorskip("imageio")
    path = tmp_path / "ep.gif"
    out = run_json(capsys, "record", "--layout", "studio", "--out", str(path),
                   "--max-ticks", "5", "--fps", "10")
    # A planner team (the default): five ticks, the ones with new speech held 1 s (10
    # frames), then the last frame again, 2 s (20 frames).
    assert out["ticks"] == 5 and out["organization"] == "leader"
    held = (out["frames"] - 5 - 20) / 9
    assert held == int(held) and 1 <= held <= 5
    import imageio.v2 as iio

    assert len(iio.mimread(path)) == out["frames"]  # the GIF stores every frame


def test_demos(capsys, tmp_path):
    out = run_json(capsys, "demos", "--layout", "studio", "--task", "put_dishwasher_easy",
                   "--seeds", "1", "--out", str(tmp_path / "demos"))
    index = [json.loads(line) for line in
             (tmp_path / "demos" / "index.jsonl").read_text().splitlines()]
    # one JSON object, as every command's --json (it printed a bare list)
    assert out == {"demonstrations": index, "successful": sum(r["success"] for r in index),
                   "out": str(tmp_path / "demos")}
    assert [r["seed"] for r in index] == [0]


def test_record_a_png_frame(capsys, tmp_path):
    pytest.importorskip("pygame")
    path = tmp_path / "frame.png"
    out = run_json(capsys, "record", "--layout", "studio", "--out", str(path),
                   "--max-ticks", "3")
    assert out == {"path": str(path), "frames": 1, "ticks": 3, "success": False,
                   "organization": "leader"}
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_missing_local_extra_is_one_clear_line(capsys, monkeypatch):
    import orgteams.agents.backends.local as local

    def missing():  # what _require_xllamacpp raises where xllamacpp is absent
        raise MissingExtraError(f"{local._install_hint()} (xllamacpp is not installed)")

    monkeypatch.setattr(local, "_require_xllamacpp", missing)
    assert main(["run", "--backend", "local", "--quiet", "--max-rounds", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{local.install_command()} (xllamacpp is not installed)" in err
    assert "Traceback" not in err


def test_run_without_json_names_the_full_log_path_and_how_to_replay_it(capsys, tmp_path):
    log = tmp_path / "a" / "rather" / "long" / "folder" / "name" / "episode.jsonl"
    assert main(["run", "--backend", "planner", "--layout", "studio", "--org", "leader",
                 "--agents", "2", "--log", str(log), "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2:] == [f"log: {log}", f"replay it: orgteams replay {log}"]
    assert main(["replay", str(log), "--no-window"]) == 0


def test_ctrl_c_during_a_run_names_the_partial_log(capsys, tmp_path, monkeypatch):
    """Issue 25: ``interrupted (Ctrl-C)`` said nothing of the rounds already logged."""
    def interrupt_after_round_1(names=None):
        def show(round_, records):
            if round_ == 1:
                raise KeyboardInterrupt

        return show

    monkeypatch.setattr("orgteams.cli.commands._round_printer", interrupt_after_round_1)
    log = tmp_path / "ep.jsonl"
    assert main(["run", "--backend", "planner", "--layout", "studio", "--log", str(log)]) == 130
    out, err = capsys.readouterr()
    assert err == f"orgteams run: interrupted (Ctrl-C); partial log: {log}\n" and out == ""
    rounds = {r["round"] for r in read_dicts(log) if r.get("phase")}
    assert rounds == {0, 1}  # what was played is kept, and replays
    assert main(["replay", str(log), "--no-window"]) == 0
    assert "the log ends at tick" in capsys.readouterr().err


def test_help_lists_every_command(capsys):
    from orgteams.cli.main import build_parser

    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    commands = list(build_parser()._subparsers._group_actions[0].choices)
    assert "experiment" in commands
    assert f"The orgteams command line: {', '.join(commands)}." in text


def test_demos_start_at_the_given_seed(capsys, tmp_path):
    # --seed was accepted and ignored: `demos --seed 7 --seeds 2` played seeds 0 and 1
    out = run_json(capsys, "demos", "--layout", "studio", "--task", "put_dishwasher_easy",
                   "--seed", "7", "--seeds", "2", "--out", str(tmp_path / "demos"))
    out = out["demonstrations"]
    assert [r["seed"] for r in out] == [7, 8]
    index = [json.loads(line) for line in
             (tmp_path / "demos" / "index.jsonl").read_text().splitlines()]
    assert [r["seed"] for r in index] == [7, 8]
    assert [r["file"] for r in out] == ["studio_put_dishwasher_easy_n3_s7.npz",
                                        "studio_put_dishwasher_easy_n3_s8.npz"]


def test_demos_seeds_past_the_last_seed_are_one_line(capsys, tmp_path):
    assert main(["demos", "--seed", "4294967295", "--seeds", "2",
                 "--out", str(tmp_path / "d")]) == 2
    assert capsys.readouterr().err == ("orgteams demos: error: --seed 4294967295 with --seeds "
                                       "2 goes past the last seed, 4294967295\n")


def test_help_shows_a_default_of_zero():
    # 0 == False hid --seed's default of 0 from every command's help
    import argparse

    from orgteams.cli.main import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in ("run", "play", "record", "reflect"):
        assert "episode seed (default: 0)" in " ".join(sub.choices[name].format_help().split())
    assert "(default: 0)" in " ".join(sub.choices["demos"].format_help().split())


def test_experiment_prints_its_table_as_one_json_object(capsys, tmp_path):
    # docs/cli.md: every command that produces results accepts --json; experiment did not
    table = run_json(capsys, "experiment", "paper1-organizations", "--seeds", "1",
                     "--max-rounds", "1", "--out", str(tmp_path / "exp"))
    assert table == json.loads((tmp_path / "exp" / "table.json").read_text())
    assert table["experiment"] == "paper1-organizations" and len(table["rows"]) == 12
    names = run_json(capsys, "experiment", "--list")
    assert "paper2-shocks" in names and names["paper2-shocks"].startswith("Paper 2:")


def test_sweep_help_names_the_defaults_a_sweep_without_flags_plays(capsys, tmp_path):
    # --help said "comma list of tasks" and nothing of what a sweep without the flag plays
    import argparse

    from orgteams.cli.main import build_parser
    sub = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    text = " ".join(sub.choices["sweep"].format_help().split("options:")[1].split())
    for flag, default in (("--tasks", "prepare_afternoon_tea"), ("--layouts", "studio"),
                          ("--orgs", "none,leader"), ("--agents", "3"),
                          ("--backend", "planner"), ("--seeds", "5")):
        part = text.split(f"{flag} {flag[2:].upper()}", 1)[1].split(" --", 1)[0]
        assert part.endswith(f"(default: the spec's, else {default})"), (flag, part)
    out = run_json(capsys, "sweep", "--out", str(tmp_path / "sw"), "--quiet")
    rows = [json.loads(line) for line in (tmp_path / "sw" / "results.jsonl").open()]
    assert out["cells"] == len(rows) == 10
    assert {(r["cell"]["task"], r["cell"]["layout"], r["cell"]["organization"],
             r["cell"]["agents"], r["cell"]["backend"]) for r in rows} == {
        ("prepare_afternoon_tea", "studio", org, 3, "planner") for org in ("none", "leader")}
    assert sorted({r["cell"]["seed"] for r in rows}) == [0, 1, 2, 3, 4]


HOSTILE = "hi\x1b[2J\x1b]0;pwned\x07\nfake line\r\x1b[31mRED"
ESCAPED = "hi\\x1b[2J\\x1b]0;pwned\\x07\\nfake line\\r\\x1b[31mRED"


def test_model_text_cannot_drive_the_terminal(capsys):
    """A model's message went raw to the terminal: ESC [2J cleared the screen, OSC set the
    window title, a newline and a carriage return forged a line of ours."""
    from orgteams.agents.records import decision_line
    from orgteams.cli.commands import _round_printer

    _round_printer({"agent_0": "Alice", "agent_1": "Bob"})(0, [
        decision_line({"phase": "communicate", "agent": "agent_0", "round": 0,
                       "message": HOSTILE, "delivered": ["agent_1"]}),
        decision_line({"phase": "act", "agent": "agent_1", "round": 0, "action": "wait",
                       "status": "done", "tick": 1, "fallback": f"invalid reply: {HOSTILE}"})])
    assert capsys.readouterr().err.splitlines() == [
        f"  r0   Alice -> Bob: {ESCAPED}",
        f"  r0   Bob does wait (done, tick 1)  [fallback: invalid reply: {ESCAPED}]"]


def test_a_servers_text_in_an_error_line_cannot_drive_the_terminal(capsys, monkeypatch):
    from orgteams.errors import UserError

    def fails(args):
        raise UserError(f"HTTP 500 from 'm': {HOSTILE}")

    monkeypatch.setattr("orgteams.cli.commands.cmd_list", fails)
    monkeypatch.setattr("orgteams.cli.main.cmd_list", fails)
    assert main(["list"]) == 2
    assert capsys.readouterr().err == (
        "orgteams list: error: HTTP 500 from 'm': hi\\x1b[2J\\x1b]0;pwned\\x07 fake line "
        "\\x1b[31mRED\n")


def test_a_person_at_the_terminal_sees_teammates_text_escaped(capsys):
    from orgteams.agents.human.human_agent import HumanAgent

    HumanAgent("agent_0").output_fn(f"Round 1, Bob said: {HOSTILE}\nActions:")
    assert capsys.readouterr().out == (
        "Round 1, Bob said: hi\\x1b[2J\\x1b]0;pwned\\x07\nfake line\\r\\x1b[31mRED\nActions:\n")
