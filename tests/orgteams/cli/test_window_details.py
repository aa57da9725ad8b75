"""The smaller things a person meets: words of play feedback, planners' speech in play,
the answer box out of the way, help texts, printed results, the reflect progress bar."""

from __future__ import annotations

import pytest

pygame = pytest.importorskip("pygame")

from orgteams.cli.main import build_parser, main  # noqa: E402
from orgteams.envs.core.actions import Verb, encode  # noqa: E402
from orgteams.envs.play.keyboard import PlaySession, describe_action  # noqa: E402


def test_play_feedback_counts_slots_and_hands_from_one():
    assert describe_action(encode(Verb.PICK, 0, 1)) == "pick up slot 2 north"
    assert describe_action(encode(Verb.PUT, 3, 0)) == "put hand 1 west"
    assert describe_action(encode(Verb.MOVE, 1)) == "move east"
    assert describe_action(0) == "wait"


def test_planner_teammates_speak_in_play_and_the_end_line_has_the_tick():
    from orgteams.play.teammates import PlannerTeammates

    teammates = PlannerTeammates()
    s = PlaySession(layout="studio", num_agents=3, teammates=teammates, seed=0, fps=240)
    for _ in range(5):
        s.step(0)
    log = list(s.raw.overlay.log)
    assert log and {m.sender for m in log} <= {"agent_1", "agent_2"}
    assert teammates.messages == s.raw.overlay.said
    assert s.raw.overlay.you == "agent_0"
    s.env.agents = []  # the episode is over
    assert s._status()[1] == "Episode over at tick 5: time is up. R: new episode"
    s.close()


def test_the_answer_box_goes_where_your_agent_is_not_and_shows_what_it_sees():
    from orgteams.envs import household_v0
    from orgteams.envs.render.boxes import TextEntry
    from orgteams.envs.render.overlay import Overlay
    from orgteams.envs.render.renderer import PygameRenderer

    env = household_v0.parallel_env(layout="house", num_agents=2)
    env.reset(seed=0)
    state = env.unwrapped.world
    floor = [c for c in range(len(state.scene.floor)) if state.scene.floor[c]]
    renderer = PygameRenderer("rgb_array")
    entry = TextEntry("Round 1: you are Alice", "Your action (letter): ", ["A. wait"],
                      sees="You see: the kitchen, a fridge (closed)")
    edge = (255, 230, 150)
    for cell, box_on_top in ((max(floor), True), (min(floor), False)):
        moved = type(state)(state.scene, 0, [cell, state.agent_pos[1]], state.hands,
                            state.contents, state.container_open, state.door_open)
        renderer.entry = entry
        frame = renderer.render(moved, Overlay(you="agent_0"), ["Alice", "Bob"])
        top_rows = (abs(frame[:40].astype(int) - edge).sum(axis=2) < 10).any()
        bottom_rows = (abs(frame[-40:].astype(int) - edge).sum(axis=2) < 10).any()
        assert (top_rows, bottom_rows) == (box_on_top, not box_on_top)
    env.close()


def test_window_input_keeps_what_the_agent_sees():
    from orgteams.agents.human.window_input import WindowInput
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv

    env = HighLevelEnv(layout="studio", num_agents=2, render_mode="human")
    window = WindowInput(env, echo=None)
    window.show("=== Round 1: you are Alice ===\nGoal: x\nYou see: a sofa\nActions:\nA. wait")
    assert window.sees == "You see: a sofa" and window.lines == ["A. wait"]
    env.close()


def test_help_texts_show_defaults_and_no_rst_markup(capsys):
    parser = build_parser()
    assert "``" not in parser.format_help()
    sub = parser._subparsers._group_actions[0].choices
    record = sub["record"].format_help()
    assert "(default: planner)" in record and "(default: leader)" in record
    assert "(default: None)" not in record and "(default: False)" not in record
    for name, p in sub.items():
        for action in p._actions:
            assert action.help, f"orgteams {name} {action.option_strings or action.dest}"


def test_play_and_demos_print_sentences_not_reprs(capsys, monkeypatch, tmp_path):
    import orgteams.play.teammates as play_team

    monkeypatch.setattr(play_team, "play_with", lambda others, **kw: {
        "ticks": 12, "success": True, "frames": 40, "seed": 0, "quit": True,
        "teammate_messages": 3, "player_messages": 1, "logs": ["p.jsonl", "p.2.jsonl"]})
    assert main(["play", "--others", "planner"]) == 0
    assert capsys.readouterr().out == ("played 12 tick(s) of seed 0: goal complete, "
                                       "teammates said 3 message(s), you said 1; "
                                       "log p.jsonl, p.2.jsonl\n")
    assert main(["demos", "--layout", "studio", "--task", "put_dishwasher_easy", "--seeds",
                 "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "{" not in out and out.endswith(f"1 demonstration(s), 1 successful, in {tmp_path}\n")


def test_reflect_reports_progress_while_an_episode_plays():
    from orgteams.experiments.reflect import make_episode_fn
    from orgteams.organizations.spec.library import load_organization

    seen = []
    episode_fn = make_episode_fn(layout="studio", backend="planner", seeds=(0,),
                                 on_progress=lambda i, tick, limit: seen.append((i, tick,
                                                                                  limit)))
    result = episode_fn(load_organization("leader"), 2)
    ticks = result.summary.ticks
    assert seen[0] == (2, 1, result.summary.step_limit)
    assert seen[-1][1] == ticks and len(seen) == ticks


def test_record_scale_and_unknown_extension(capsys, tmp_path):
    import imageio.v2 as iio

    sizes = {}
    for scale in ("1", "0.5"):
        path = tmp_path / f"s{scale}.png"
        assert main(["record", "--layout", "studio", "--max-ticks", "2", "--scale", scale,
                     "--out", str(path), "--json"]) == 0
        sizes[scale] = iio.imread(path).shape[:2]
    assert sizes["0.5"] == (sizes["1"][0] // 2, sizes["1"][1] // 2)
    capsys.readouterr()
    assert main(["record", "--out", str(tmp_path / "x.webm")]) == 2
    assert capsys.readouterr().err == (f"orgteams record: error: {tmp_path / 'x.webm'}: unknown "
                                       "file type '.webm'; accepted: .mp4, .gif, .png\n")


def test_progress_bar_is_on_stderr_and_only_once_work_starts(capsys):
    from orgteams.cli.progress import Progress

    bar = Progress(10, "recording x.gif")
    bar.close()
    assert capsys.readouterr().err == ""  # nothing done, nothing drawn
    bar = Progress(10, "recording x.gif")
    bar.update(10, "tick 10")
    bar.close()
    captured = capsys.readouterr()
    assert "recording x.gif tick 10" in captured.err and captured.out == ""
    quiet = Progress(10, "reflect", enabled=False)
    quiet.update(5)
    quiet.close()
    assert capsys.readouterr().err == ""
