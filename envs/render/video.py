"""Recording episodes to MP4 or GIF, and saving single frames as PNG.

Frames come from an off-screen :class:`~orgteams.envs.render.renderer.PygameRenderer`,
so any env can be recorded whatever its ``render_mode`` (a human window, if any,
keeps working). Needs the ``render`` extra (pygame, imageio, imageio-ffmpeg).

Example::

    from orgteams.envs.render.video import record_episode
    n = record_episode({"layout": "studio", "num_agents": 3}, "random", "run.mp4", seed=0)
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from orgteams.envs.render.renderer import INSTALL_HINT, PygameRenderer
from orgteams.errors import MissingExtraError, UserError

Policy = Callable[[str, Any], int]
VIDEO_SUFFIXES = (".mp4", ".gif")
IMAGE_SUFFIXES = (".png",)
HOLD_SPEECH_SECONDS = 1.0  # a frame with new speech bubbles stays this long in a video
HOLD_END_SECONDS = 2.0  # and the last frame this long


def check_video_path(path: str | Path, images: bool = False) -> Path:
    """``path`` as a Path when its suffix is one we write, else a UserError listing them."""
    accepted = VIDEO_SUFFIXES + (IMAGE_SUFFIXES if images else ())
    path = Path(path)
    if path.suffix.lower() not in accepted:
        raise UserError(f"{path}: unknown file type {path.suffix or '(none)'!r}; "
                         f"accepted: {', '.join(accepted)}")
    return path


def _ffmpeg() -> str:
    try:
        import imageio_ffmpeg
    except ImportError as exc:
        raise ImportError(f"recording video needs imageio-ffmpeg: {INSTALL_HINT}") from exc
    return imageio_ffmpeg.get_ffmpeg_exe()


class _StreamedGif:
    """A GIF written without holding frames in memory.

    Frames go, as they come, to a lossless temporary video beside the GIF (Ut Video,
    through an ffmpeg pipe); :meth:`close` then runs ffmpeg twice over that file: one
    palette for the whole episode (``palettegen``), then the GIF (``paletteuse``).
    Peak memory is one frame plus ffmpeg's, whatever the episode's length.
    """

    def __init__(self, path: Path, fps: float):
        self.path, self.fps, self._exe = path, fps, _ffmpeg()
        try:
            self._tmp = Path(tempfile.mkdtemp(prefix=".frames-", dir=path.parent))
        except OSError as exc:  # name the GIF asked for, not our temporary folder
            raise type(exc)(exc.errno, exc.strerror, str(path)) from None
        self._proc: subprocess.Popen | None = None

    def append_data(self, frame: np.ndarray) -> None:
        if self._proc is None:
            h, w = frame.shape[:2]
            self._proc = subprocess.Popen(
                [self._exe, "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24",
                 "-s", f"{w}x{h}", "-r", f"{self.fps}", "-i", "-", "-c:v", "utvideo",
                 str(self._tmp / "frames.avi")], stdin=subprocess.PIPE)
        self._proc.stdin.write(np.ascontiguousarray(frame).tobytes())

    def close(self) -> None:
        try:
            if self._proc is None:
                return
            self._proc.stdin.close()
            if self._proc.wait() != 0:
                raise RuntimeError(f"ffmpeg could not store the frames for {self.path}")
            frames, palette = self._tmp / "frames.avi", self._tmp / "palette.png"
            quiet = [self._exe, "-y", "-loglevel", "error"]
            subprocess.run([*quiet, "-i", str(frames), "-vf", "palettegen=stats_mode=full",
                       str(palette)], check=True)
            # No dithering: our frames are flat colours, and dithering every frame took
            # 8x longer; diff_mode re-maps only the changed rectangle of each frame.
            subprocess.run([*quiet, "-i", str(frames), "-i", str(palette), "-lavfi",
                       "paletteuse=dither=none:diff_mode=rectangle", "-loop", "0",
                            str(self.path)],
                      check=True)
        finally:
            self._proc = None
            shutil.rmtree(self._tmp, ignore_errors=True)


def _imageio():
    try:
        import imageio.v2 as iio
    except ImportError as exc:
        raise MissingExtraError(f"recording video needs imageio: {INSTALL_HINT}") from exc
    return iio


class VideoRecorder:
    """Collects ``(H, W, 3)`` uint8 frames into an MP4 (H.264) or a GIF, by file suffix.

    Feed it frames with :meth:`add_frame` (a team runner may do so once per tick
    or round), then :meth:`close`, or use it as a context manager. MP4 frames are
    padded to even sizes for the encoder. Neither format keeps frames in memory: MP4
    is encoded as frames come, a GIF is streamed to disk and encoded with one palette
    at :meth:`close` (see :class:`_StreamedGif`).
    """

    def __init__(self, path: str | Path, fps: float = 10):
        self.path = check_video_path(path)
        suffix = self.path.suffix.lower()
        if fps <= 0:
            raise UserError(f"fps must be positive, got {fps}")
        self.fps = fps
        self.frames = 0
        self._size: tuple[int, int] | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        iio = _imageio()
        if suffix == ".mp4":
            # open it ourselves first: an unwritable path is then an OSError naming it,
            # not ffmpeg's broken pipe at the first frame
            with open(self.path, "ab"):
                pass
            self._writer = iio.get_writer(self.path, format="FFMPEG", mode="I", fps=fps,
                                          codec="libx264", macro_block_size=2,
                                          ffmpeg_log_level="error")
        else:  # streamed to disk: memory stays flat however long the episode
            self._writer = _StreamedGif(self.path, fps)

    def add_frame(self, frame: np.ndarray) -> None:
        """Append one RGB frame; every frame must have the first frame's size."""
        frame = np.asarray(frame)
        if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
            raise ValueError(f"frames must be (H, W, 3) uint8 arrays, got shape "
                             f"{frame.shape} and dtype {frame.dtype}")
        if self._size is None:
            self._size = frame.shape[:2]
        elif frame.shape[:2] != self._size:
            raise ValueError(f"frame size {frame.shape[:2]} differs from the first frame's "
                             f"{self._size}; a video has one size")
        if self.path.suffix.lower() == ".mp4" and (frame.shape[0] % 2 or frame.shape[1] % 2):
            frame = np.pad(frame, ((0, frame.shape[0] % 2), (0, frame.shape[1] % 2), (0, 0)))
        self._writer.append_data(frame)
        self.frames += 1

    def close(self) -> int:
        """Finish the file; returns the number of frames added."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        return self.frames

    def __enter__(self) -> VideoRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EpisodeVideo:
    """Records an episode as it is played: one frame per :meth:`tick`, from ``env``'s state.

    A frame that shows new speech bubbles is held for :data:`HOLD_SPEECH_SECONDS`
    (a communicate phase is over in one tick, too fast to read) and the last frame,
    written by :meth:`end`, for :data:`HOLD_END_SECONDS`. A ``.png`` path keeps only
    the last frame, written at :meth:`close`.

    Args:
        path: ``.mp4``, ``.gif`` or ``.png``.
        env: the household env (or a wrapper of it) whose ``world`` and ``overlay`` to draw.
        fps: frames per second of the video.
        scale: frame size factor.
        renderer_options: further :class:`PygameRenderer` keywords.
    """

    def __init__(self, path: str | Path, env: Any, fps: float = 10, scale: float = 1.0,
                 **renderer_options: Any):
        self.path = check_video_path(path, images=True)
        self.raw = getattr(env, "base", env).unwrapped
        self.png = self.path.suffix.lower() in IMAGE_SUFFIXES
        self.recorder = None if self.png else VideoRecorder(self.path, fps=fps)
        self.renderer = PygameRenderer("rgb_array", scale=scale, **renderer_options)
        self.hold_speech = max(1, round(fps * HOLD_SPEECH_SECONDS))
        self.hold_end = max(1, round(fps * HOLD_END_SECONDS))
        self._said = 0
        self._last: np.ndarray | None = None

    def _frame(self) -> np.ndarray:
        raw = self.raw
        self._last = self.renderer.render(raw.world, raw.overlay, raw.display_names)
        return self._last

    def _add(self, frame: np.ndarray, times: int) -> None:
        if self.recorder is not None:
            for _ in range(times):
                self.recorder.add_frame(frame)

    def tick(self) -> None:
        """Add the current state (held when someone said something new)."""
        frame = self._frame()
        said = self.raw.overlay.said
        self._add(frame, self.hold_speech if said != self._said else 1)
        self._said = said

    def end(self) -> None:
        """Add the final state, held."""
        self._add(self._frame(), self.hold_end)

    @property
    def frames(self) -> int:
        """Frames written so far."""
        return self.recorder.frames if self.recorder is not None else int(self._last is not None)

    def close(self) -> int:
        """Finish the file; returns the number of frames written."""
        if self.recorder is not None:
            self.recorder.close()
        elif self._last is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _imageio().imwrite(self.path, self._last)
        self.renderer.close()
        return self.frames


def _make_env(env_or_kwargs: Any):
    if isinstance(env_or_kwargs, Mapping):
        from orgteams.envs import household_v0

        kwargs = dict(env_or_kwargs)
        kwargs.setdefault("render_mode", None)
        return household_v0.parallel_env(**kwargs), True
    return env_or_kwargs, False


def random_policy(seed: int | None = None) -> Policy:
    """A ``(agent_id, env) -> action`` policy drawing uniform actions from its own generator."""
    rng = np.random.default_rng(seed)

    def act(agent: str, env: Any) -> int:
        return int(rng.integers(env.action_space(agent).n))

    return act


def resolve_policy(policy: str | Policy, seed: int | None = None) -> Policy:
    """``"random"`` or a callable ``(agent_id, env) -> action``, as a callable."""
    if policy == "random":
        return random_policy(seed)
    if not callable(policy):
        raise TypeError(f"policy must be 'random' or a callable (agent_id, env) -> action, "
                        f"got {policy!r}")
    return policy


def record_episode(env_or_kwargs: Any, policy: str | Policy, path: str | Path, *,
                   seed: int | None = 0, max_ticks: int | None = None,
                   fps: float | None = None, **renderer_options: Any) -> int:
    """Run one episode and record it; returns the number of frames written.

    Args:
        env_or_kwargs: a household env (Parallel API) or the keyword arguments of
            ``household_v0.parallel_env``; an env built here is closed here.
        policy: ``"random"`` or a callable ``(agent_id, env) -> action`` called for
            each live agent each tick (``env`` is the unwrapped env).
        path: ``*.mp4`` or ``*.gif``.
        seed: passed to ``env.reset``.
        max_ticks: stop after this many ticks even if the episode goes on.
        fps: frames per second of the video (default: the env's ``render_fps``).
        renderer_options: :class:`PygameRenderer` keywords, e.g. ``show_fov=True``.

    One frame is written after reset and one after every tick.
    """
    env, owned = _make_env(env_or_kwargs)
    try:
        raw = env.unwrapped
        act = resolve_policy(policy, seed)
        renderer = PygameRenderer("rgb_array", **renderer_options)
        env.reset(seed=seed)
        fps = fps or getattr(raw, "render_fps", 10)

        def frame():
            return renderer.render(raw.world, raw.overlay, raw.display_names)

        with VideoRecorder(path, fps=fps) as video:
            video.add_frame(frame())
            ticks = 0
            while env.agents and (max_ticks is None or ticks < max_ticks):
                env.step({a: act(a, raw) for a in env.agents})
                ticks += 1
                video.add_frame(frame())
        renderer.close()
        return video.frames
    finally:
        if owned:
            env.close()


def save_frame(env: Any, path: str | Path, **renderer_options: Any) -> Path:
    """Save the env's current picture as a PNG (any render mode); returns the path."""
    raw = env.unwrapped
    if raw.world is None:
        raise RuntimeError("call reset() before save_frame()")
    frame = PygameRenderer("rgb_array", **renderer_options).render(
        raw.world, raw.overlay, raw.display_names)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _imageio().imwrite(path, frame)
    return path
