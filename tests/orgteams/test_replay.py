"""Replaying episodes from their logs: exact, checked, in a window, to a video."""

from __future__ import annotations

import json

import imageio.v2 as iio
import pytest

from orgteams.cli.main import main
from orgteams.organizations.rounds.episode_log import read_log
from orgteams.replay import replay
from orgteams.run import run_episode


@pytest.fixture(scope="module")
def episode(tmp_path_factory):
    """A planner team episode with a removal shock, logged to a file."""
    path = tmp_path_factory.mktemp("replay") / "ep.jsonl"
    result = run_episode(layout="studio", organization="leader", agents=3, backend="planner",
                         seed=4, log_path=path, shocks=["remove:agent_2@3"])
    return path, result


def rewrite(src, dst, edit) -> None:
    """Copy a log, passing every record through ``edit`` (None drops it)."""
    records = [edit(r) for r in read_log(src)]
    dst.write_text("".join(json.dumps(r) + "\n" for r in records if r is not None))


def test_replay_reproduces_the_logged_episode(episode):
    path, result = episode
    out = replay(path, render=None)
    assert out.matches is True and out.problem == ""
    assert out.ticks == result.summary["ticks"] and out.success == result.summary["success"]
    # the replay lines are in the file, not in the records metrics are computed from
    kinds = {r.get("record") for r in read_log(path)}
    assert {"episode", "tick", "end", "summary"} <= kinds
    assert not {r.get("record") for r in result.records} & {"episode", "tick", "end"}


def test_a_tampered_log_does_not_match(episode, tmp_path):
    path, _ = episode
    bad = tmp_path / "bad.jsonl"
    first = [True]

    def edit(r):
        if r.get("record") == "tick" and r["tick"] > 5 and first[0]:
            first[0] = False
            r["actions"] = [1, 1, 1]  # everyone walks north instead
        return r

    rewrite(path, bad, edit)
    out = replay(bad, render=None)
    assert out.matches is False
    assert out.problem == ("the final state differs from the logged one: the log was edited, "
                           "or the dynamics changed since it was written")
    assert main(["replay", str(bad), "--no-window"]) == 1


def test_a_log_cut_short_replays_what_there_is(episode, tmp_path):
    path, _ = episode
    cut = tmp_path / "cut.jsonl"
    rewrite(path, cut, lambda r: None if r.get("record") in ("end", "summary")
            or r.get("tick", 0) > 7 else r)
    with cut.open("a") as fh:
        fh.write('{"record": "tick", "rou')  # torn by a crash mid-write
    out = replay(cut, render=None)
    assert out.matches is None and out.ticks == 7
    assert out.problem == ("the log ends at tick 7 without an end line (the run was cut "
                           "short); replayed what there is")


def test_logs_without_an_episode_line_are_refused_clearly(episode, tmp_path):
    path, _ = episode
    old = tmp_path / "old.jsonl"
    rewrite(path, old, lambda r: None if r.get("record") == "episode" else r)
    with pytest.raises(ValueError, match=r"old.jsonl: no episode line, so it cannot be "
                                         r"replayed"):
        replay(old, render=None)
    with pytest.raises(FileNotFoundError, match="no episode log at"):
        replay(tmp_path / "missing.jsonl", render=None)


def test_ticks_out_of_sequence_are_an_error(episode, tmp_path):
    path, _ = episode
    gap = tmp_path / "gap.jsonl"
    rewrite(path, gap, lambda r: None if r.get("record") == "tick" and r["tick"] == 3 else r)
    with pytest.raises(ValueError, match="tick line 4 follows tick 2; the log is out of "
                                         "sequence"):
        replay(gap, render=None)


def test_replay_to_a_gif_and_in_a_window(episode, tmp_path):
    path, result = episode
    gif = tmp_path / "replay.gif"
    out = replay(path, render=None, video=gif, fps=50)
    ticks = result.summary["ticks"]
    assert out.frames == ticks + 1 and out.matches is True  # the start, then every tick
    with iio.get_reader(gif) as reader:
        assert reader.get_data(0).shape[2] in (3, 4)
    window = replay(path, render="human", fps=1000, hold=False)  # SDL dummy driver
    assert window.matches is True and not window.stopped


def test_cli_replay_json(episode, capsys):
    path, result = episode
    assert main(["replay", str(path), "--no-window", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["matches"] is True and out["ticks"] == result.summary["ticks"]
    assert main(["replay", str(path), "--no-window"]) == 0
    assert "matches the log" in capsys.readouterr().out
    run_folder = path.parent / "run"
    run_folder.mkdir(exist_ok=True)
    (run_folder / "episode.jsonl").write_text(path.read_text())  # as runs/<run>/ holds it
    assert main(["replay", str(run_folder), "--no-window"]) == 0


def test_replay_matches_after_shocks_that_change_the_world(tmp_path):
    # a removed member sets down what it holds and a priority shift changes the goal:
    # both change the world outside the dynamics, and the log carries them
    path = tmp_path / "shocked.jsonl"
    result = run_episode(layout="apartment", organization="leader", agents=3,
                         backend="planner", seed=2, log_path=path,
                         shocks=["remove:agent_1@3", "priority:put_fridge@5"])
    worlds = [r for r in read_log(path) if r.get("record") == "world"]
    assert worlds and worlds[-1]["state"]["scene"]["task"] == "put_fridge"
    out = replay(path, render=None)
    assert out.matches is True and out.problem == ""
    assert out.success == result.summary["success"]
    # an edit before the world line is still caught: the line carries the digest before
    bad = tmp_path / "bad.jsonl"
    rewrite(path, bad, lambda r: {**r, "actions": [1, 1, 1]} if r.get("record") == "tick"
            and r["tick"] == 1 else r)
    assert replay(bad, render=None).matches is False


def replay_line(capsys, log) -> tuple[int, str]:
    """``orgteams replay --no-window``: exit code and the one line on stderr."""
    code = main(["replay", str(log), "--no-window"])
    out, err = capsys.readouterr()
    assert err.count("\n") == 1, err
    return code, err.rstrip("\n")


def line_of(path, kind: str, tick: int | None = None) -> int:
    """The line number of the first record of ``kind`` (at ``tick``) in a log."""
    for number, text in enumerate(path.read_text().splitlines(), 1):
        r = json.loads(text)
        if r.get("record") == kind and (tick is None or r.get("tick") == tick):
            return number
    raise AssertionError(kind)


@pytest.mark.parametrize(("actions", "problem"), [
    ([1, 1, 99], "field 'actions': 99 is not an action id (0 to {top})"),
    ([1, -1, 1], "field 'actions': -1 is not an action id (0 to {top})"),
    ([1, True, 1], "field 'actions': True is not an action id (0 to {top})"),
    ([1, 1], "field 'actions' must be a list of 3 action ids, got [1, 1]"),
    ("north", "field 'actions' must be a list of 3 action ids, got 'north'"),
])
def test_bad_actions_in_a_log_are_one_line(episode, tmp_path, capsys, actions, problem):
    from orgteams.envs.core.actions import NUM_ACTIONS

    path, _ = episode
    bad = tmp_path / "bad.jsonl"
    rewrite(path, bad, lambda r: {**r, "actions": actions} if r.get("record") == "tick"
            and r["tick"] == 4 else r)
    line = line_of(bad, "tick", 4)
    assert replay_line(capsys, bad) == (2, f"orgteams replay: error: {bad}: line {line}: "
                                           + problem.format(top=NUM_ACTIONS - 1))


@pytest.mark.parametrize(("edit", "problem"), [
    (lambda s: "a house", "field 'initial_state': must be a world state (a mapping), got str"),
    (lambda s: {k: v for k, v in s.items() if k != "hands"},
     "field 'initial_state': field 'hands' must be a list, got None"),
    (lambda s: {**s, "scene": {**s["scene"], "layout": 5}},
     "field 'initial_state': <dict>: expected a mapping with keys name, grid, rooms, "
     "furniture"),
    (lambda s: {k: v for k, v in s.items() if k != "tick"},
     "field 'initial_state': field 'tick' is missing"),
    (lambda s: {**s, "tick": "0"},
     "field 'initial_state': field 'tick' must be an integer >= 0, got '0'"),
    (lambda s: {**s, "agent_pos": [[0, 0]] + s["agent_pos"][1:]},
     "field 'initial_state': field 'agent_pos': agent at [0, 0] is not on a walkable cell"),
    (lambda s: {**s, "agent_pos": [["a", 1]] + s["agent_pos"][1:]},
     "field 'initial_state': field 'agent_pos' must be [row, column] pairs of integers"),
    (lambda s: {**s, "agent_pos": [s["agent_pos"][0]] * 3},
     "field 'initial_state': field 'agent_pos': two agents share a cell"),
    (lambda s: {**s, "agent_pos": s["agent_pos"][:2], "hands": s["hands"][:2]},
     "field 'initial_state': 2 agent cells and 2 hands for a scene of 3 agents"),
    (lambda s: {**s, "contents": [[0, 0]] + s["contents"][1:]},
     "field 'initial_state': fields 'hands' and 'contents' must hold each of the {objects} "
     "objects exactly once"),
    (lambda s: {**s, "door_open": [1] * len(s["door_open"])},
     "field 'initial_state': fields 'container_open' and 'door_open' must hold true or "
     "false"),
])
def test_a_malformed_initial_state_is_one_line(episode, tmp_path, capsys, edit, problem):
    path, _ = episode
    bad = tmp_path / "bad.jsonl"
    rewrite(path, bad, lambda r: {**r, "initial_state": edit(r["initial_state"])}
            if r.get("record") == "episode" else r)
    objects = len(next(read_log(path))["initial_state"]["scene"]["objects"])
    assert replay_line(capsys, bad) == (2, f"orgteams replay: error: {bad}: line "
                                           f"{line_of(bad, 'episode')}: "
                                           + problem.format(objects=objects))


def test_an_edited_summary_does_not_match(episode, tmp_path, capsys):
    """The final state is right, the summary's world facts are not: exit 1, saying which
    (issue 24: ``ticks: 1, success: true`` replayed as "matches the log")."""
    path, result = episode
    bad = tmp_path / "bad.jsonl"
    won, ticks = result.summary["success"], result.summary["ticks"]
    rewrite(path, bad, lambda r: {**r, "ticks": 1, "success": not won}
            if r.get("record") == "summary" else r)
    out = replay(bad, render=None)
    assert out.matches is False and out.problem == (
        f"the log's summary disagrees with the replay: ticks: the summary says 1, the replay "
        f"{ticks}; success: the summary says {not won}, the replay {won} (the summary was "
        "edited)")
    assert main(["replay", str(bad), "--no-window"]) == 1
    out, err = capsys.readouterr()
    done = "goal complete" if won else "goal not met"
    assert out == f"replayed {ticks} ticks: {done}, does NOT match the log\n"
    assert err == f"  {replay(bad, render=None).problem}\n"
    units = result.summary["units_done"]
    rewrite(path, bad, lambda r: {**r, "units_done": units + 1}
            if r.get("record") == "summary" else r)
    assert replay(bad, render=None).problem == (
        f"the log's summary disagrees with the replay: units_done: the summary says "
        f"{units + 1}, the replay {units} (the summary was edited)")


def test_replay_of_a_log_that_only_has_its_partial_points_to_it(episode, tmp_path, capsys):
    path, _ = episode
    log = tmp_path / "ep.jsonl"
    partial = tmp_path / "ep.jsonl.partial"
    partial.write_text(path.read_text())
    assert replay_line(capsys, log) == (
        2, f"orgteams replay: error: no episode log at {log}, but {partial} holds the rounds "
           f"of a run that did not finish: orgteams replay {partial}")
    assert main(["replay", str(partial), "--no-window"]) == 0


def test_a_summary_without_goal_units_still_matches_but_one_without_ticks_does_not(
        episode, tmp_path):
    """Play logs written before their summary had goal units replay as matching; ticks
    and success are in every summary line, so removing one is an edit."""
    path, result = episode
    old = tmp_path / "old.jsonl"
    rewrite(path, old, lambda r: {k: v for k, v in r.items() if k not in (
        "units_done", "units_total")} if r.get("record") == "summary" else r)
    assert replay(old, render=None).matches is True
    rewrite(path, old, lambda r: {k: v for k, v in r.items() if k != "ticks"}
            if r.get("record") == "summary" else r)
    assert replay(old, render=None).problem == (
        f"the log's summary disagrees with the replay: ticks: the summary says 'nothing', "
        f"the replay {result.summary['ticks']} (the summary was edited)")
