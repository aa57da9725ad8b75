"""Recording episodes to MP4 or GIF, and saving single frames as PNG.

Frames come from an off-screen :class:`~orgteams.envs.rendering.PygameRenderer`,
so any env can be recorded whatever its ``render_mode`` (a human window, if any,
keeps working). Needs the ``render`` extra (pygame, imageio, imageio-ffmpeg).

Example::

    from orgteams.envs.video import record_episode
    n = record_episode({"layout": "studio", "num_agents": 3}, "random", "run.mp4", seed=0)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from orgteams.envs.errors import MissingExtraError, UserError
from orgteams.envs.rendering import INSTALL_HINT, PygameRenderer

Policy = Callable[[str, Any], int]
VIDEO_SUFFIXES = (".mp4", ".gif")


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
    padded to even sizes for the encoder. A GIF writer may merge identical
    consecutive frames, so only MP4 guarantees one stored frame per ``add_frame``.
    """

    def __init__(self, path: str | Path, fps: float = 10):
        self.path = Path(path)
        suffix = self.path.suffix.lower()
        if suffix not in VIDEO_SUFFIXES:
            raise UserError(f"video path must end in .mp4 or .gif, got {str(path)!r}")
        if fps <= 0:
            raise UserError(f"fps must be positive, got {fps}")
        self.fps = fps
        self.frames = 0
        self._size: tuple[int, int] | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        iio = _imageio()
        if suffix == ".mp4":
            self._writer = iio.get_writer(self.path, format="FFMPEG", mode="I", fps=fps,
                                          codec="libx264", macro_block_size=2,
                                          ffmpeg_log_level="error")
        else:
            self._writer = iio.get_writer(self.path, mode="I", duration=1000.0 / fps, loop=0)

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
