"""The human player's view in ``orgteams play`` (issue 30): only what the player's agent
knows unless ``--reveal``; Alice, Bob... as in ``run``; the end banner of ``run``; every
episode reported; quitting mid-episode is ``interrupted`` in the log."""

from __future__ import annotations

import json
import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pygame = pytest.importorskip("pygame")

from orgteams.envs import household_v0  # noqa: E402
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv  # noqa: E402
from orgteams.envs.play.chat import parse_chat  # noqa: E402
from orgteams.envs.play.keyboard import PlaySession  # noqa: E402
from orgteams.envs.render.renderer import to_array  # noqa: E402
from orgteams.envs.render.sight import UNSEEN_VEIL  # noqa: E402
from orgteams.organizations.rounds.episode_log import read_log  # noqa: E402


def key(k, mod=0):
    return pygame.event.Event(pygame.KEYDOWN, key=k, mod=mod)


def wait_policy(agent, env):
    return 0


def frame(s: PlaySession) -> np.ndarray:
    s._draw(s._status())
    return to_array(s.renderer.pg, s.renderer._canvas)


def cell_pixels(s: PlaySession, picture: np.ndarray, rc: tuple[int, int]) -> np.ndarray:
    cell = s.renderer.last.cell
    ox, oy = s.renderer.last.map_offset
    r, c = rc
    return picture[oy + r * cell:oy + (r + 1) * cell, ox + c * cell:ox + (c + 1) * cell]


def unseen_furniture_with_objects(s: PlaySession) -> int:
    world = s.raw.world
    scene = world.scene
    here = set(scene.view_rooms(scene.view_of_cell[world.agent_pos[s.index]]))
    return next(f for f, spec in enumerate(scene.layout.furniture)
                if world.contents[f] and spec.room not in here)


def test_rooms_the_agent_never_saw_hide_their_contents_unless_revealed():
    s = PlaySession(layout="house", num_agents=3, others=wait_policy, seed=0, fps=240)
    f = unseen_furniture_with_objects(s)
    spec = s.raw.world.scene.layout.furniture[f]
    hidden = frame(s)
    known = s.renderer.last.known
    assert f in known.hidden_furniture and known.state.contents[f] == ()
    assert s.raw.world.contents[f]  # the objects are there, the player is not shown them
    dark = cell_pixels(s, hidden, spec.cell).reshape(-1, 3).mean(axis=0)
    s.reveal = True
    shown = frame(s)
    assert s.renderer.last.known is None
    bright = cell_pixels(s, shown, spec.cell).reshape(-1, 3).mean(axis=0)
    assert dark.mean() < 90 < bright.mean()  # under the dark veil vs drawn with its objects
    assert dark.mean() < np.mean(UNSEEN_VEIL[:3]) + 40
    s.close()


def test_other_agents_out_of_view_are_not_drawn_nor_placed_in_the_panel():
    s = PlaySession(layout="house", num_agents=9, others=wait_policy, seed=0, fps=240,
                    display_names=[f"N{i}" for i in range(9)])
    frame(s)
    known = s.renderer.last.known
    world = s.raw.world
    scene = world.scene
    here = set(scene.view_rooms(scene.view_of_cell[world.agent_pos[0]]))
    away = [a for a in range(1, 9) if scene.room_of_cell[world.agent_pos[a]] not in here
            and scene.view_of_cell[world.agent_pos[a]] != scene.view_of_cell[world.agent_pos[0]]]
    assert away, "house seed 0: someone is in another room"
    assert 0 in known.visible_agents and not set(away) & known.visible_agents
    assert not set(away) & set(s.renderer.last.tags)
    s.close()


def test_a_room_left_behind_is_drawn_as_remembered_even_when_it_changed():
    s = PlaySession(layout="apartment", num_agents=1, others=wait_policy, seed=0, fps=240)
    world = s.raw.world
    scene = world.scene
    here = scene.view_rooms(scene.view_of_cell[world.agent_pos[0]])
    seen = [f for f in scene.furniture_in_room[here[0]] if world.contents[f]
            and (not scene.is_container[f] or world.container_open[f])]
    assert seen, "apartment seed 0: objects on view in the first room"
    f = seen[0]
    remembered = tuple(world.contents[f])
    # Somewhere else (another room), and the furniture emptied meanwhile: the player's
    # agent did not see that, so the window shows what it remembers.
    other = next(c for c in scene.floor_cells if scene.room_of_cell[c] not in here
                 and scene.room_of_cell[c] >= 0)
    contents = [list(c) for c in world.contents]
    moved = contents[f]
    contents[f] = []
    dest = next(g for g, spec in enumerate(scene.layout.furniture)
                if spec.room not in here and g != f and
                len(contents[g]) + len(moved) <= scene.capacity[g])
    contents[dest] += moved
    changed = type(world)(scene, world.tick, [int(other)], world.hands,
                          [tuple(c) for c in contents], world.container_open, world.door_open)
    s.raw.world = changed
    frame(s)
    known = s.renderer.last.known
    assert f in known.remembered_furniture
    assert known.state.contents[f] == remembered and changed.contents[f] == ()
    assert here[0] in known.seen_rooms
    s.close()


def test_reveal_is_recorded_in_the_play_log(tmp_path):
    from orgteams.play.teammates import play_with

    for reveal in (False, True):
        path = tmp_path / f"p{reveal}.jsonl"
        out = play_with("planner", layout="studio", num_agents=2, seed=0, fps=240,
                        max_frames=2, log_path=str(path), reveal=reveal)
        assert out["reveal"] is reveal
        assert list(read_log(path))[-1]["reveal"] is reveal


def test_play_names_agents_as_run_does_and_at_bob_works():
    from orgteams.play.teammates import _name_the_team

    kwargs = {"num_agents": 3, "human_agent": "bob"}
    _name_the_team(kwargs)
    assert kwargs["display_names"] == ["Alice", "Bob", "Charlie"]
    assert kwargs["human_agent"] == "agent_1"  # --agent Bob
    s = PlaySession(layout="studio", num_agents=3, others=wait_policy, seed=0, fps=240,
                    display_names=kwargs["display_names"])
    message = parse_chat("@Bob take the apples", "agent_0", s._names())
    assert message.receivers == ("agent_1",)
    assert s.renderer.title == "orgteams play - you are Alice (agent_0)"
    s.close()


def test_the_cli_plays_with_names(monkeypatch):
    import orgteams.play.teammates as play_team
    from orgteams.cli.main import main

    seen = {}

    def fake_play(**kw):
        seen.update(kw)
        return {"ticks": 0, "success": False, "seed": 0, "frames": 1}

    monkeypatch.setattr(play_team, "play", fake_play)
    assert main(["play", "--agent", "Charlie", "--json"]) == 0
    assert seen["display_names"] == ["Alice", "Bob", "Charlie"]
    assert seen["human_agent"] == "agent_2" and seen["reveal"] is False


def short_session(**kw) -> PlaySession:
    env = HighLevelEnv(layout="studio", num_agents=2, max_ticks=2)
    return PlaySession(env, teammates=kw.pop("teammates", None) or _planners(), seed=0,
                       fps=240, **kw)


def _planners():
    from orgteams.play.teammates import PlannerTeammates

    return PlannerTeammates()


def test_an_episode_that_ends_shows_runs_banner_and_the_footer_fits():
    s = short_session()
    for _ in range(2):
        pygame.event.post(key(pygame.K_SPACE))
        assert s.tick()
    assert not s.env.agents
    world = s.raw.world
    units = sum(p.count for p in world.scene.goal)
    assert s.renderer.banner == ["Episode over: time is up",
                                 f"tick 2 of 2, {sum(world.progress)}/{units} goal units",
                                 "R: new episode, Q: quit"]
    rows = s.renderer.last.panel.footer
    width = s.renderer._panel.get_width() - 28
    assert rows and all(s.renderer.text.width(r, 13) <= width for r in rows)
    s.close()


def test_after_r_the_summary_has_every_episode_and_the_cli_prints_them(capsys, monkeypatch):
    s = short_session()
    for k in (pygame.K_SPACE, pygame.K_SPACE, pygame.K_r, pygame.K_SPACE, pygame.K_q):
        pygame.event.post(key(k))
        s.tick()
    out = s.run()
    first, second = out["episodes"]
    assert first == {"seed": 0, "ticks": 2, "success": False, "episode_status": "complete",
                     "stop_reason": "max ticks"}
    assert second == {"seed": 1, "ticks": 1, "success": False,
                      "episode_status": "interrupted", "stop_reason": "quit"}
    import orgteams.play.teammates as play_team
    from orgteams.cli.main import main

    monkeypatch.setattr(play_team, "play_with", lambda others, **kw: out)
    assert main(["play"]) == 0
    assert capsys.readouterr().out == ("played 2 episodes: seed 0: goal not met in 2 tick(s); "
                                       "seed 1: interrupted at tick 1 (quit)\n")


def test_quitting_mid_episode_writes_interrupted_and_a_finished_one_complete(tmp_path):
    from orgteams.play.play_log import PlayLog
    from orgteams.play.teammates import PlannerTeammates

    log = PlayLog(tmp_path / "p.jsonl")
    s = short_session(teammates=PlannerTeammates(log=log))
    for k in (pygame.K_SPACE, pygame.K_SPACE, pygame.K_r, pygame.K_SPACE, pygame.K_q):
        pygame.event.post(key(k))
        s.tick()
    out = s.run()
    log.end(out["stop_reason"])
    first, second = (list(read_log(p))[-1] for p in log.paths)
    assert (first["episode_status"], first["stop_reason"]) == ("complete", "max ticks")
    assert (second["episode_status"], second["stop_reason"]) == ("interrupted", "quit")
    assert second["ticks"] == 1


def test_q_in_the_cli_play_log_is_interrupted(tmp_path):
    from orgteams.cli.main import main

    path = tmp_path / "p.jsonl"
    pygame.display.init()
    pygame.event.post(key(pygame.K_SPACE))
    pygame.event.post(key(pygame.K_q))
    assert main(["play", "--others", "planner", "--layout", "studio", "--fps", "240",
                 "--log", str(path), "--json"]) == 0
    summary = list(read_log(path))[-1]
    assert summary["record"] == "summary" and summary["episode_status"] == "interrupted"
    assert summary["stop_reason"] == "quit" and summary["reveal"] is False


def test_the_panel_says_what_the_agent_sees(capsys):
    env = household_v0.parallel_env(layout="house", num_agents=2)
    s = PlaySession(env, others=wait_policy, seed=0, fps=240)
    frame(s)
    assert "You see what your agent knows" in " ".join(s.renderer.last.panel.footer)
    s.close()
    env.close()
    assert json.dumps(s.summary()["episodes"])  # plain data


def test_an_agent_out_of_view_leaves_no_trace_in_the_frame():
    """Wherever a teammate is out of view, the player's frame is the same pixel for pixel
    (no disc, no tag, no room name or tag pushed aside, nothing in the panel)."""
    s = PlaySession(layout="house", num_agents=2, others=wait_policy, seed=0, fps=240)
    world = s.raw.world
    scene = world.scene
    here = set(scene.view_rooms(scene.view_of_cell[world.agent_pos[0]]))
    away = [int(c) for c in scene.floor_cells if scene.room_of_cell[c] >= 0
            and scene.room_of_cell[c] not in here]
    frames = []
    for cell in (away[0], away[len(away) // 2], away[-1]):
        s.raw.world = type(world)(scene, world.tick, [world.agent_pos[0], cell], world.hands,
                                  world.contents, world.container_open, world.door_open)
        frames.append(frame(s).copy())
    assert all(np.array_equal(frames[0], f) for f in frames[1:])
    s.reveal = True
    revealed = [frame(s).copy()]  # the teammate at away[-1]
    s.raw.world = type(world)(scene, world.tick, [world.agent_pos[0], away[0]], world.hands,
                              world.contents, world.container_open, world.door_open)
    revealed.append(frame(s).copy())
    assert not np.array_equal(*revealed)  # revealed, the teammate is drawn where it is
    s.close()
