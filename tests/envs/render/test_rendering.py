"""Rendering: rgb_array frames, human window under the dummy driver, ansi, video files."""

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import re  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pygame = pytest.importorskip("pygame")
iio = pytest.importorskip("imageio.v2")

from orgteams.agents.messages import TeamMessage  # noqa: E402
from orgteams.envs import household_v0  # noqa: E402
from orgteams.envs.core.state import HouseholdState  # noqa: E402
from orgteams.envs.render.ansi import LEGEND  # noqa: E402
from orgteams.envs.render.renderer import (  # noqa: E402
    INSTALL_HINT,
    PygameRenderer,
    attach_renderer,
    render_frame,
    window_closed,
)
from orgteams.envs.render.video import VideoRecorder, record_episode, save_frame  # noqa: E402


def make_env(mode="rgb_array", layout="studio", **kw):
    env = household_v0.parallel_env(layout=layout, render_mode=mode, **kw)
    env.reset(seed=3)
    return env


def replace(state: HouseholdState, **changes) -> HouseholdState:
    d = {k: getattr(state, k) for k in ("tick", "agent_pos", "hands", "contents",
                                         "container_open", "door_open")}
    d.update(changes)
    return HouseholdState(state.scene, **d)


def test_rgb_array_shape_dtype_and_even_size():
    env = make_env()
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert frame.shape[0] % 2 == 0 and frame.shape[1] % 2 == 0
    assert frame.shape[0] >= 400 and frame.shape[1] >= 600
    assert frame.std() > 10  # not a blank picture
    env.close()


def test_rgb_array_is_deterministic_for_a_state():
    env = make_env()
    a = env.render()
    b = env.render()
    other = make_env()  # same seed, a separate renderer
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, other.render())
    env.close()
    other.close()


def test_frame_changes_when_an_agent_moves():
    env = make_env()
    before = env.render()
    world = env.unwrapped.world
    free = next(c for c in world.scene.floor_cells if c not in world.agent_pos)
    moved = replace(world, agent_pos=[int(free)] + world.agent_pos[1:])
    assert not np.array_equal(before, render_frame(moved))
    env.close()


def test_open_and_closed_container_are_drawn_differently():
    env = make_env()
    world = env.unwrapped.world
    f = world.scene.is_container.index(True)
    closed = replace(world, container_open=[i != f and o for i, o in
                                            enumerate(world.container_open)])
    opened = replace(world, container_open=[i == f or o for i, o in
                                            enumerate(world.container_open)])
    renderer = PygameRenderer("rgb_array")
    assert not np.array_equal(renderer.render(closed), renderer.render(opened))
    env.close()


def test_open_and_closed_door_are_drawn_differently():
    env = make_env()
    world = env.unwrapped.world
    shut = replace(world, door_open=[False] * len(world.door_open))
    wide = replace(world, door_open=[True] * len(world.door_open))
    renderer = PygameRenderer("rgb_array")
    assert not np.array_equal(renderer.render(shut), renderer.render(wide))
    env.close()


def test_overlay_message_marker_and_caption_change_the_frame():
    env = make_env()
    plain = env.render()
    raw = env.unwrapped
    raw.overlay.say(TeamMessage("agent_0", ("agent_1",), "I will fetch the apples.", round=1))
    with_message = env.render()
    raw.overlay.markers["agent_2"] = "abstained"
    with_marker = env.render()
    raw.overlay.caption = "round 1 - communicate"
    with_caption = env.render()
    frames = [plain, with_message, with_marker, with_caption]
    for x, y in zip(frames, frames[1:]):
        assert not np.array_equal(x, y)
    raw.overlay.clear()
    np.testing.assert_array_equal(plain, env.render())
    env.close()


def test_long_messages_and_display_names_render():
    env = make_env(num_agents=4)
    raw = env.unwrapped
    raw.display_names = ["Alice", "Bob", "Carol", "Dave"]
    for i in range(20):
        raw.overlay.say(TeamMessage(f"agent_{i % 4}", ("agent_0", "agent_1", "agent_2"),
                                    "word " * 80 + "x" * 300, round=i))
    frame = env.render()
    assert frame.shape == make_env().render().shape
    env.close()


def test_a_message_with_a_nul_or_a_lone_surrogate_draws_as_a_replacement_character():
    # a model's JSON reply can carry "\u0000": SDL_ttf raised "A null character was found
    # in the text" in the middle of the episode (window and video alike)
    frames = []
    for text in ("fetch \x00 the apples", "fetch \ud800 the apples",
                 "fetch \ufffd the apples"):
        env = make_env()
        env.unwrapped.display_names = ["Al\x00ice", "Bob", "Charlie"]
        env.unwrapped.overlay.say(TeamMessage("agent_0", ("agent_1",), text, round=1))
        frames.append(env.render())
        env.close()
    np.testing.assert_array_equal(frames[0], frames[2])
    np.testing.assert_array_equal(frames[1], frames[2])


def test_field_of_view_option_changes_the_frame():
    env = make_env()
    plain = env.render()
    renderer = attach_renderer(env, show_fov=True)
    assert renderer.show_fov
    fov = env.render()
    assert fov.shape == plain.shape and not np.array_equal(plain, fov)
    renderer.toggle_fov()
    np.testing.assert_array_equal(plain, env.render())
    env.close()


def test_help_box_is_drawn_and_fully_removed():
    env = make_env()
    renderer = attach_renderer(env)
    plain = env.render()
    renderer.help_lines = ["Keys", "arrows  move"]
    assert not np.array_equal(plain, env.render())
    renderer.help_lines = None
    np.testing.assert_array_equal(plain, env.render())
    env.close()


@pytest.mark.parametrize("layout", ["apartment", "house"])
def test_larger_layouts_render(layout):
    env = make_env(layout=layout)
    frame = env.render()
    assert frame.shape[1] > 900
    env.close()


def test_missing_font_falls_back_to_default():
    env = make_env()
    renderer = attach_renderer(env, font_path="/nonexistent/font.ttf")
    frame = env.render()
    assert renderer.text.font(12) is not None and frame.ndim == 3
    env.close()


def test_missing_pygame_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygame", None)
    with pytest.raises(ImportError, match=re.escape(INSTALL_HINT)):
        PygameRenderer("rgb_array")


def test_bad_render_mode_is_rejected():
    with pytest.raises(ValueError, match="render_mode must be one of"):
        PygameRenderer("ansi")


def test_render_mode_none_never_imports_the_renderer():
    env = household_v0.parallel_env(layout="studio")
    env.reset(seed=0)
    env.step({a: 0 for a in env.agents})
    assert env.unwrapped._renderer is None
    env.close()


def test_ansi_contains_legend_and_agent_digits():
    env = make_env(mode="ansi")
    text = env.render()
    assert LEGEND in text
    grid = "\n".join(text.splitlines()[: env.unwrapped.layout.height])
    for i in range(3):
        assert str(i) in grid
    env.close()


def test_human_mode_steps_and_closes_cleanly():
    env = make_env(mode="human", render_fps=240)
    for _ in range(5):
        env.step({a: env.action_space(a).sample() for a in env.agents})
    surface = pygame.display.get_surface()
    assert surface is not None and surface.get_size()[0] > 600
    assert np.asarray(pygame.surfarray.array3d(surface)).std() > 10
    env.close()
    assert pygame.display.get_surface() is None
    env.close()  # twice is fine


def test_human_window_close_button_stops_drawing_without_error():
    env = make_env(mode="human", render_fps=240)
    pygame.event.post(pygame.event.Event(pygame.QUIT))
    env.step({a: 0 for a in env.agents})  # render pumps the QUIT event
    assert window_closed(env)
    env.step({a: 0 for a in env.agents})  # further steps do not draw or raise
    assert env.render() is None
    env.close()


def test_record_mp4_has_expected_frame_count(tmp_path):
    path = tmp_path / "ep.mp4"
    n = record_episode({"layout": "studio"}, "random", path, seed=0, max_ticks=12, fps=8)
    assert n == 13  # the reset frame plus one per tick
    reader = iio.get_reader(path)
    frames = [f for f in reader]
    reader.close()
    assert len(frames) == 13
    assert frames[0].shape == make_env().render().shape


def test_record_gif_and_callable_policy(tmp_path):
    path = tmp_path / "ep.gif"
    env = make_env(mode=None)
    n = record_episode(env, lambda agent, e: 1 + (e.world.tick % 4), path, seed=1, max_ticks=6)
    assert n == 7
    assert len(iio.mimread(path)) == 7
    assert env.unwrapped.world.tick == 6  # the caller's env was used and left open
    env.close()


def test_video_recorder_validates_frames(tmp_path):
    with pytest.raises(ValueError, match=re.escape(
            f"{tmp_path / 'x.avi'}: unknown file type '.avi'; accepted: .mp4, .gif")):
        VideoRecorder(tmp_path / "x.avi")
    with VideoRecorder(tmp_path / "x.mp4", fps=5) as video:
        video.add_frame(np.zeros((31, 41, 3), np.uint8))  # odd sizes are padded
        with pytest.raises(ValueError, match="differs from the first frame"):
            video.add_frame(np.zeros((32, 40, 3), np.uint8))
    assert video.frames == 1


def test_save_frame_writes_png(tmp_path):
    env = make_env(mode=None)
    path = save_frame(env, tmp_path / "shot.png")
    image = iio.imread(path)
    assert image.shape[:2] == make_env().render().shape[:2]
    env.close()


@pytest.mark.parametrize("suffix", [".gif", ".mp4"])
def test_a_video_where_nothing_can_be_written_names_its_path(tmp_path, monkeypatch, suffix):
    """A GIF's error named our temporary folder (``.frames-ds122w_4``); an MP4 got as far
    as ffmpeg's broken pipe at the first frame, a traceback."""
    import builtins
    import tempfile

    path = tmp_path / f"ep{suffix}"
    real_open = builtins.open

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(args[0]))

    monkeypatch.setattr(tempfile, "mkdtemp", lambda **kw: refused(kw["dir"] / ".frames-x"))
    monkeypatch.setattr(builtins, "open", lambda file, *a, **kw: refused(file)
                        if str(file) == str(path) else real_open(file, *a, **kw))
    with pytest.raises(PermissionError) as info:
        VideoRecorder(path)
    assert info.value.filename == str(path) and info.value.strerror == "Permission denied"
