"""Keyboard play loop, headless: key presses are injected as pygame events."""

import os
import re

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import pytest  # noqa: E402

pygame = pytest.importorskip("pygame")

from doubles import free_direction, scripted_teammates, slow_teammates  # noqa: E402

from orgteams.envs.core.actions import Verb, encode  # noqa: E402
from orgteams.envs.core.layout import DIRECTIONS  # noqa: E402
from orgteams.envs.play.keyboard import HELP_LINES, PlaySession, play  # noqa: E402

ARROWS = (pygame.K_UP, pygame.K_RIGHT, pygame.K_DOWN, pygame.K_LEFT)


def wait_policy(agent, env):
    return 0


def key(k, mod=0):
    return pygame.event.Event(pygame.KEYDOWN, key=k, mod=mod)


@pytest.fixture
def session():
    s = PlaySession(layout="studio", others=wait_policy, seed=0, fps=240)
    yield s
    s.close()


def test_arrow_key_event_moves_the_agent(session):
    d, target = free_direction(session)
    pygame.event.post(key(ARROWS[d]))
    assert session.tick()
    assert session.raw.world.agent_pos[session.index] == target
    assert session.raw.world.tick == 1


def test_no_key_means_no_tick(session):
    for _ in range(3):
        session.tick()
    assert session.raw.world.tick == 0 and session.frames == 3


def test_verb_then_arrow_queues_that_action(session):
    session.handle_event(key(pygame.K_o))
    assert session.pending == Verb.OPEN
    session.handle_event(key(pygame.K_RIGHT))
    assert list(session.queue) == [encode(Verb.OPEN, 1)]
    session.handle_event(key(pygame.K_3))
    session.handle_event(key(pygame.K_g))
    session.handle_event(key(pygame.K_LEFT))
    session.handle_event(key(pygame.K_SPACE))
    assert list(session.queue) == [encode(Verb.OPEN, 1), encode(Verb.PICK, 3, 2), 0]


def test_escape_cancels_a_pending_verb_then_quits(session):
    session.handle_event(key(pygame.K_p))
    session.handle_event(key(pygame.K_ESCAPE))
    assert session.pending is None and session.running
    session.handle_event(key(pygame.K_ESCAPE))
    assert not session.running
    assert session.tick() is False


def test_shift_arrow_opens_a_closed_door():
    s = PlaySession(layout="studio", others=wait_policy, seed=0, fps=240)
    state = s.raw.world
    scene = state.scene
    door = next(i for i, o in enumerate(state.door_open) if not o)
    r, c = scene.layout.doors[door].cell
    d, stand = next((d, (r - dr) * scene.width + (c - dc))
                    for d, (dr, dc) in enumerate(DIRECTIONS)
                    if scene.floor[(r - dr) * scene.width + (c - dc)])
    pos = list(state.agent_pos)
    if stand in pos:
        pos[pos.index(stand)] = pos[s.index]
    pos[s.index] = stand
    s.raw.world = type(state)(scene, state.tick, pos, state.hands, state.contents,
                              state.container_open, state.door_open)
    s.handle_event(key(ARROWS[d], pygame.KMOD_LSHIFT))
    assert list(s.queue) == [encode(Verb.OPEN, d)]
    s.tick()
    assert s.raw.world.door_open[door]
    s.close()


def test_help_and_fov_toggles(session):
    session.handle_event(key(pygame.K_h))
    assert session.renderer.help_lines == HELP_LINES
    fov = session.renderer.show_fov
    session.handle_event(key(pygame.K_f))
    assert session.renderer.show_fov is not fov
    session.tick()
    session.handle_event(key(pygame.K_h))
    assert session.renderer.help_lines is None


def test_q_and_window_close_quit_cleanly():
    for event in (key(pygame.K_q), pygame.event.Event(pygame.QUIT)):
        s = PlaySession(layout="studio", others="random", seed=1, fps=240)
        s.tick()
        pygame.event.post(event)
        summary = s.run(max_frames=50)
        assert summary["quit"] and summary["frames"] == 1
        assert pygame.display.get_surface() is None


def test_play_runs_headless_with_max_frames():
    summary = play(layout="studio", num_agents=2, human_agent="agent_1", seed=2, fps=240,
                   max_frames=5)
    episode = {"seed": 2, "ticks": 0, "success": False, "episode_status": "interrupted",
               "stop_reason": "max frames"}
    assert summary == {**episode, "frames": 5, "quit": False, "episodes": [episode],
                       "reveal": False, "player": "agent_1", "player_name": "agent_1"}
    assert pygame.display.get_surface() is None


def test_space_waits_one_tick_for_everyone(session):
    pygame.event.post(key(pygame.K_SPACE))
    summary = session.run(max_frames=4)
    assert summary["ticks"] == 1 and summary["frames"] == 4


def test_unknown_human_agent_is_rejected():
    with pytest.raises(ValueError, match="human_agent 'agent_9' is not one of"):
        PlaySession(layout="studio", human_agent="agent_9")


# ---- keyboard play beside high-level (planner) teammates ----
def test_keys_move_you_while_planner_teammates_make_progress():
    from orgteams.play.teammates import PlannerTeammates

    teammates = PlannerTeammates()
    s = PlaySession(layout="studio", num_agents=3, teammates=teammates, seed=0, fps=240)
    d, target = free_direction(s)
    pygame.event.post(key(ARROWS[d]))
    assert s.tick()
    assert s.raw.world.agent_pos[s.index] == target and s.raw.world.tick == 1
    assert set(teammates.planners) == {"agent_1", "agent_2"}
    assert s.env.current("agent_2").kind == "grab"  # a plan over several ticks
    here = s.raw.world.agent_pos[s.index]
    for _ in range(20):  # you wait (Space); the planners work the task
        s.handle_event(key(pygame.K_SPACE))
        s.tick()
    world = s.raw.world
    assert world.tick == 21  # one tick per key press, never more
    assert world.agent_pos[s.index] == here
    assert sum(world.progress) > 0  # goal units placed by the planners
    s.close()


def test_teammates_need_a_highlevel_env():
    from orgteams.envs import household_v0
    from orgteams.play.teammates import PlannerTeammates

    env = household_v0.parallel_env(layout="studio")
    with pytest.raises(TypeError, match="teammates play in a HighLevelEnv, got env"):
        PlaySession(env, teammates=PlannerTeammates())
    env.close()


def test_r_starts_a_new_episode_for_the_teammates_too():
    from orgteams.play.teammates import PlannerTeammates

    teammates = PlannerTeammates()
    s = PlaySession(layout="studio", num_agents=2, teammates=teammates, seed=0, fps=240)
    s.step(0)
    assert teammates.planners
    s.env.agents = []  # the episode is over
    s.handle_event(key(pygame.K_r))
    assert s.seed == 1 and s.raw.world.tick == 0 and not teammates.planners
    s.close()


def test_cli_play_others_flag(monkeypatch):
    import orgteams.play.teammates as play_team
    from orgteams.cli.main import main

    seen = {}
    monkeypatch.setattr(play_team, "play_with", lambda others, **kw: seen.update(kw, o=others)
                        or {"ticks": 0})
    assert main(["play", "--others", "planner", "--agents", "2", "--json"]) == 0
    assert seen["o"] == "planner" and seen["num_agents"] == 2 and seen["layout"] == "studio"
    assert main(["play", "--others", "local", "--cache", "c.sqlite", "--json"]) == 0
    assert seen["o"] == "local" and seen["cache"] == "c.sqlite"


def test_cli_play_unknown_others_is_one_clear_line(capsys):
    from orgteams.cli.main import main

    assert main(["play", "--others", "llm"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("orgteams play: error: Unknown others 'llm'.")


def test_play_with_rejects_unknown_others():
    from orgteams.play.teammates import play_with

    with pytest.raises(ValueError, match=re.escape("Unknown others 'planer'. Did you mean")):
        play_with("planer")


def test_llm_teammates_decide_when_their_plans_end():
    from orgteams.play.teammates import MemberTeammates

    teammates = MemberTeammates("scripted")  # the offline test double of an LLM backend
    s = PlaySession(layout="studio", num_agents=3, teammates=teammates, seed=0, fps=240)
    for _ in range(6):
        s.handle_event(key(pygame.K_SPACE))
        assert s.tick()
    assert s.raw.world.tick == 6 and set(teammates.members) == {"agent_1", "agent_2"}
    assert teammates.decisions >= 2 and teammates.fallbacks == 0
    s.close()
    teammates.close()


def test_slow_teammates_keep_the_window_alive_and_closing_it_quits(monkeypatch):
    from orgteams.play.teammates import MemberTeammates

    slow_teammates(monkeypatch, 0.3)  # an LLM that takes a while to answer
    teammates = MemberTeammates("local", talk=False)
    s = PlaySession(layout="studio", num_agents=2, teammates=teammates, seed=0, fps=240)
    footers = []  # the status lines of every frame drawn
    draw = s.renderer.render
    s.renderer.render = lambda *a: footers.append(list(s.renderer.footer)) or draw(*a)
    s.handle_event(key(pygame.K_SPACE))
    assert s.tick()
    waiting = [f for f in footers if "teammates are thinking..." in f]
    assert len(waiting) > 3  # frames drawn while the teammate thought
    pygame.event.post(pygame.event.Event(pygame.QUIT))
    s.handle_event(key(pygame.K_SPACE))
    assert not s.tick()  # closed while waiting: the session ends after that tick
    s.close()
    teammates.close()


def test_llm_teammates_reject_other_kinds():
    from orgteams.play.teammates import MemberTeammates

    with pytest.raises(ValueError, match=re.escape("Unknown LLM teammate kind 'planr'")):
        MemberTeammates("planr")


def test_llm_teammates_talk_before_they_act_and_the_player_sees_it(monkeypatch):
    from orgteams.play.teammates import MemberTeammates

    scripted_teammates(monkeypatch, say="I take the kitchen.")
    for talk in (True, False):
        teammates = MemberTeammates("scripted", talk=talk)
        s = PlaySession(layout="studio", num_agents=3, teammates=teammates, seed=0, fps=240)
        s.handle_event(key(pygame.K_SPACE))
        assert s.tick()
        said = s.raw.overlay.latest
        if talk:
            assert teammates.messages == 2 and set(said) == {"agent_1", "agent_2"}
            assert said["agent_1"].text == "I take the kitchen."
            assert said["agent_1"].audience == ("agent_0", "agent_2")  # the player too
            heard = [(m.sender, m.text) for m in teammates.members["agent_2"].log.dialogue]
            assert ("agent_1", "I take the kitchen.") in heard  # delivered after choosing
        else:
            assert teammates.messages == 0 and not said
        s.close()
        teammates.close()
