"""Watching runs and replays in the window, headless: playback keys, closing, the held
last frame, scaling. Key presses are real pygame events, posted when the renderer
reads its events for the k-th time (SDL dummy driver)."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

pygame = pytest.importorskip("pygame")

from doubles import read_dicts  # noqa: E402
from window_script import Script, key  # noqa: E402  (tests/envs, beside this file)

from orgteams.envs.render.renderer import PygameRenderer  # noqa: E402
from orgteams.envs.render.window import Playback  # noqa: E402
from orgteams.replay import replay  # noqa: E402
from orgteams.run import run_episode  # noqa: E402

assert os.environ["SDL_VIDEODRIVER"] == "dummy"  # tests/conftest.py


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    path = tmp_path_factory.mktemp("watch") / "ep.jsonl"
    result = run_episode(layout="studio", organization="leader", agents=3, backend="planner",
                         seed=4, log_path=path)
    return path, result


def test_space_pauses_n_steps_one_tick_and_space_resumes(logged, monkeypatch):
    path, result = logged
    script = Script(monkeypatch, {
        3: [key(pygame.K_SPACE)],  # pause after the third read
        12: [key(pygame.K_n)],  # one tick forward
        20: [key(pygame.K_SPACE)],  # resume
    }, when_holding=[key(pygame.K_q)])
    out = replay(path, render="human", fps=1000)
    assert out.matches is True and out.ticks == result.summary.ticks
    f = script.frames
    # Reads 4..12 happen while paused: no new frame is drawn.
    assert len(set(f[3:12])) == 1
    paused_at = f[3]
    # N lets exactly one frame (one tick) through, then it is paused again.
    assert set(f[13:20]) == {paused_at + 1}
    # Space resumes: every tick is drawn to the end.
    assert f[-1] == out.ticks + 1


def test_plus_and_minus_change_the_speed(logged, monkeypatch):
    path, _ = logged
    speeds = []
    script = Script(monkeypatch, {2: [key(pygame.K_PLUS), key(pygame.K_EQUALS)],
                                  4: [key(pygame.K_MINUS)]}, when_holding=[key(pygame.K_q)])
    original = PygameRenderer.draw

    def draw(renderer, *args, **kwargs):
        speeds.append(renderer.playback.speed)
        return original(renderer, *args, **kwargs)

    monkeypatch.setattr(PygameRenderer, "draw", draw)
    replay(path, render="human", fps=1000)
    assert speeds[0] == 1.0 and 4.0 in speeds and speeds[-1] == 2.0
    assert script.reads > 5


def test_playback_speed_steps_and_limits():
    p = Playback()
    for _ in range(10):
        p.faster()
    assert p.speed == 16.0
    for _ in range(10):
        p.slower()
    assert p.speed == 0.125
    assert Playback(paused=True).status() == "PAUSED x1: Space resumes, N next tick, H keys"


def test_h_shows_the_watch_keys(logged, monkeypatch):
    path, _ = logged
    shown = []
    Script(monkeypatch, {2: [key(pygame.K_h)]}, when_holding=[key(pygame.K_q)])
    original = PygameRenderer.draw

    def draw(renderer, *args, **kwargs):
        shown.append(renderer.help_lines)
        return original(renderer, *args, **kwargs)

    monkeypatch.setattr(PygameRenderer, "draw", draw)
    replay(path, render="human", fps=1000)
    assert shown[0] is None and "Space\tpause / resume" in shown[-1]


def test_the_help_lists_r_once_the_episode_can_be_replayed(logged, monkeypatch):
    """The end banner said "R to replay" but H listed no R."""
    path, _ = logged
    during, held = [], []
    Script(monkeypatch, {2: [key(pygame.K_h)]}, when_holding=[key(pygame.K_r)],
           then=[key(pygame.K_q)], hold_reads=2)
    original = PygameRenderer.draw

    def draw(renderer, *args, **kwargs):
        if renderer.help_lines:
            (held if renderer.banner else during).append(list(renderer.help_lines))
        return original(renderer, *args, **kwargs)

    monkeypatch.setattr(PygameRenderer, "draw", draw)
    replay(path, render="human", fps=1000)
    replay_key = "R\treplay the episode (it is over)"
    assert during and held and all(replay_key not in lines for lines in during)
    assert all(lines[-2:] == [replay_key, "Q / Esc\tclose the window (stops the run)"]
               for lines in held)
    # H pressed while the last frame is held lists R too.
    renderer = PygameRenderer("human")
    renderer._holding = True
    renderer.handle_event(key(pygame.K_h))
    assert replay_key in renderer.help_lines
    renderer.close()


def test_the_last_frame_is_held_until_q(logged, monkeypatch):
    path, result = logged
    script = Script(monkeypatch, when_holding=[key(pygame.K_q)], hold_reads=8)
    out = replay(path, render="human", fps=1000)
    assert out.matches is True and not out.stopped
    assert len(script.banners) == 8  # up for eight reads, gone after Q
    assert script.banners[0] == ["Replay over: goal complete" if out.success
                                 else "Replay over: goal not met",
                                 f"tick {out.ticks}", "Q to close, R to replay"]
    assert min(w for w, _ in script.window_sizes) > 600  # the real frame, not a 1x1 leftover
    assert pygame.display.get_surface() is None  # Q closed it


def test_r_replays_again_in_the_same_window(logged, monkeypatch):
    path, _ = logged
    script = Script(monkeypatch, when_holding=[key(pygame.K_r)], then=[key(pygame.K_q)],
                    hold_reads=3)
    result = replay(path, render="human", fps=1000)
    assert result.matches is True and len(script.banners) == 6  # held twice
    assert script.renderer.frames == 2 * (result.ticks + 1)  # every tick drawn twice


def test_closing_the_replay_window_stops_it(logged, monkeypatch):
    path, _ = logged
    Script(monkeypatch, {4: [pygame.event.Event(pygame.QUIT)]})
    out = replay(path, render="human", fps=1000)
    assert out.stopped and out.problem == f"stopped at tick {out.ticks} (window closed)"


def test_orgteams_replay_says_once_that_its_window_was_closed(logged, monkeypatch, capsys):
    """The stop was printed twice: in the replay's line and again on stderr."""
    from orgteams.cli.main import main

    path, _ = logged
    Script(monkeypatch, {4: [pygame.event.Event(pygame.QUIT)]})
    assert main(["replay", str(path), "--fps", "1000"]) == 0
    out, err = capsys.readouterr()
    ticks = int(out.split()[1])
    assert out == (f"replayed {ticks} ticks: replay stopped at tick {ticks} (window closed), "
                   "not checked\n")
    assert err == ""


def test_ctrl_c_at_the_replays_held_last_frame_closes_it(logged, monkeypatch, capsys):
    """Ctrl-C at the held last frame lost the replay's verdict: "interrupted (Ctrl-C)",
    exit 130, for a replay that had played to its end."""
    from orgteams.cli.main import main

    def ctrl_c(*_args, **_kwargs):
        raise KeyboardInterrupt

    path, result = logged
    monkeypatch.setattr(PygameRenderer, "hold", ctrl_c)
    assert main(["replay", str(path), "--fps", "1000"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"replayed {result.summary.ticks} ticks: ")
    assert out.endswith(", matches the log\n") and err == ""


def test_scale_sets_the_window_and_the_frames(logged, monkeypatch):
    path, _ = logged
    script = Script(monkeypatch, when_holding=[key(pygame.K_q)], hold_reads=2)
    replay(path, render="human", fps=1000, render_options={"scale": 0.5})
    full = PygameRenderer("rgb_array").render(*_state_of(path))
    half = PygameRenderer("rgb_array", scale=0.5).render(*_state_of(path))
    assert script.window_sizes[0] == (full.shape[1] // 2, full.shape[0] // 2)
    assert half.shape == (full.shape[0] // 2, full.shape[1] // 2, 3)


def _state_of(path):
    from orgteams.envs.core.state import HouseholdState

    header = next(r for r in read_dicts(path) if r.get("record") == "episode")
    return HouseholdState.from_dict(header["initial_state"]), None, header["names"]


def test_a_resized_window_shows_the_whole_frame_scaled(logged, monkeypatch):
    path, _ = logged
    renderer = PygameRenderer("human", fps=1000)
    state, _, names = _state_of(path)
    renderer.render(state, None, names)
    pygame.display.set_mode((400, 300), pygame.RESIZABLE)  # as the window manager would
    renderer.render(replace(state, tick=state.tick + 1), None, names)  # the next tick's frame
    surface = pygame.display.get_surface()
    assert surface.get_size() == (400, 300)
    pixels = pygame.surfarray.array3d(surface)
    assert pixels[:, 60:240].std() > 10  # the house, scaled down, fills the middle
    renderer.close()


def test_a_replay_shows_the_organization_and_roles(logged, monkeypatch):
    path, _ = logged
    seen = []
    original = PygameRenderer.draw

    def draw(renderer, state, overlay=None, names=None):
        seen.append((overlay.organization, dict(overlay.roles)))
        return original(renderer, state, overlay, names)

    monkeypatch.setattr(PygameRenderer, "draw", draw)
    replay(path, render=None, video=path.parent / "roles.mp4")
    assert seen[-1] == ("leader", {"agent_0": "leader", "agent_1": "member",
                                   "agent_2": "member"})


class _FakeClock:
    """time.monotonic and time.sleep of the window, without waiting."""

    def __init__(self):
        self.now = 0.0
        self.slept = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        self.slept += seconds


def test_speaking_stages_between_ticks_do_not_cost_a_tick_each(logged, monkeypatch):
    """32 agents ran 0.3 ticks/s at x1: every speaking stage waited a whole tick. Now a
    tick's frame waits for its turn and frames of the same tick do not wait (on a clock
    that only moves when the window sleeps: no wall-clock threshold)."""
    from orgteams.envs.render import renderer as renderer_module
    from orgteams.envs.render import window as window_module

    clock = _FakeClock()
    monkeypatch.setattr(window_module, "time", clock)
    monkeypatch.setattr(renderer_module, "time", clock)
    state, _, names = _state_of(logged[0])
    renderer = PygameRenderer("human", fps=10)
    for tick in range(11):
        world = replace(state, tick=tick)
        for _ in range(32):  # a round's speaking stages: the same tick, new bubbles
            renderer.render(world, None, names)
    # Ten ticks after the first at 10 per second: one second of waiting, not 33.
    assert clock.slept == pytest.approx(1.0)
    assert renderer.frames == 11  # stage frames within 1/30 s of the last are skipped
    renderer.close()


def test_slow_work_between_ticks_is_not_waited_for_again(logged, monkeypatch):
    from orgteams.envs.render import renderer as renderer_module
    from orgteams.envs.render import window as window_module

    clock = _FakeClock()
    monkeypatch.setattr(window_module, "time", clock)
    monkeypatch.setattr(renderer_module, "time", clock)
    state, _, names = _state_of(logged[0])
    renderer = PygameRenderer("human", fps=10)
    renderer.render(state, None, names)
    clock.now += 0.08  # the team thought for 80 ms: 20 ms left of the tick
    renderer.render(replace(state, tick=1), None, names)
    assert clock.slept == pytest.approx(0.02)
    clock.now += 0.5  # far behind: shown at once, no catching up afterwards
    renderer.render(replace(state, tick=2), None, names)
    renderer.render(replace(state, tick=3), None, names)
    assert clock.slept == pytest.approx(0.02 + 0.1)
    renderer.close()


def test_the_agent_under_the_mouse_is_tagged_and_listed(monkeypatch):
    from orgteams.envs import household_v0
    from orgteams.envs.render.overlay import Overlay

    env = household_v0.parallel_env(layout="house", num_agents=32)
    env.reset(seed=0)
    world = env.unwrapped.world
    renderer = PygameRenderer("human", fps=1000)
    renderer.render(world, Overlay(), None)
    picked = 17
    assert picked not in renderer.last.tags  # 32 agents: no tag without a reason
    cell, (ox, oy) = renderer.last.cell, renderer.last.map_offset
    r, c = divmod(world.agent_pos[picked], world.scene.width)
    at = (ox + c * cell + cell // 2, oy + r * cell + cell // 2)  # the window is not scaled
    renderer.handle_event(pygame.event.Event(pygame.MOUSEMOTION, pos=at, rel=(0, 0),
                                             buttons=(0, 0, 0)))
    renderer.render(replace(world, tick=1), Overlay(), None)
    assert picked in renderer.last.tags and picked in renderer.last.panel.listed
    renderer.handle_event(pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=at, button=1))
    renderer.handle_event(pygame.event.Event(pygame.WINDOWLEAVE))
    renderer.render(replace(world, tick=2), Overlay(), None)
    assert renderer.selected == picked and picked in renderer.last.tags  # pinned by a click
    renderer.close()
    env.close()
