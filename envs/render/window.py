"""The human window: showing frames scaled to a resizable window, and playback control.

:class:`Window` belongs to a :class:`~orgteams.envs.render.renderer.PygameRenderer` in
``"human"`` mode. It shows each drawn frame scaled to the window (drag the border or
maximize; ``scale`` sets the first size), paces frames at ``fps`` times the playback
speed and, while someone watches a run or a replay, reads the playback keys:

=========  =====================================================================
Space      pause / resume
N          one frame forward while paused (one tick, or one speaking stage)
+ / -      faster / slower (x2 steps, 1/8 to 16 times ``fps``)
H          the keys (this list) on / off
F          field of view on / off
Q / Esc    close the window (stops the run or replay)
=========  =====================================================================

When the episode is over, :meth:`PygameRenderer.hold` keeps the last frame up with a
banner until the person presses Q (close) or R (replay).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WATCH_HELP = [  # "key<TAB>what it does": drawn by render_panel.draw_help
    "Watching",
    "Space\tpause / resume",
    "N\tnext tick while paused",
    "+ / -\tfaster / slower",
    "F\tfield of view on / off",
    "H\tthis help",
    "Q / Esc\tclose the window (stops the run)",
]
SPEEDS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
IDLE_FPS = 30  # redraws per second while paused or holding the last frame


@dataclass
class Playback:
    """What the watcher asked for: paused, a single step, the speed factor."""

    paused: bool = False
    step: bool = False  # N: let one frame through while paused
    speed: float = 1.0

    def faster(self) -> None:
        self.speed = next((s for s in SPEEDS if s > self.speed), SPEEDS[-1])

    def slower(self) -> None:
        self.speed = next((s for s in reversed(SPEEDS) if s < self.speed), SPEEDS[0])

    def handle_key(self, pg: Any, key: int) -> bool:
        """Space, N, + and -; True when the key was one of them."""
        if key == pg.K_SPACE:
            self.paused, self.step = not self.paused, False
        elif key == pg.K_n:
            self.paused, self.step = True, True
        elif key in (pg.K_PLUS, pg.K_EQUALS, pg.K_KP_PLUS):
            self.faster()
        elif key in (pg.K_MINUS, pg.K_KP_MINUS, pg.K_UNDERSCORE):
            self.slower()
        else:
            return False
        return True

    def status(self) -> str:
        """One panel line: the state of playback."""
        speed = f"x{self.speed:g}"
        if self.paused:
            return f"PAUSED ({speed}): Space resumes, N next tick, H keys"
        return f"playing {speed}: Space pauses, +/- speed, H keys"


class Window:
    """The display window of a renderer: scaled, resizable, paced.

    Args:
        pg: the pygame module.
        title: the window caption.
        fps: frames per second at speed 1.
        scale: the window's first size as a factor of the frame size.
    """

    def __init__(self, pg: Any, title: str, fps: float, scale: float = 1.0):
        if scale <= 0:
            raise ValueError(f"scale must be positive, got {scale}")
        self.pg, self.title, self.fps, self.scale = pg, title, fps, scale
        self.playback = Playback()
        self.surface = None
        self._frame_size: tuple[int, int] | None = None
        self._clock = pg.time.Clock()

    def show(self, canvas, pace: bool = True) -> None:
        """Put ``canvas`` in the window (scaled to fit, centred); wait to keep the pace."""
        pg = self.pg
        size = canvas.get_size()
        if self.surface is None or size != self._frame_size:
            self._frame_size = size
            first = (max(1, round(size[0] * self.scale)), max(1, round(size[1] * self.scale)))
            self.surface = pg.display.set_mode(first, pg.RESIZABLE)
            pg.display.set_caption(self.title)
        win = pg.display.get_surface() or self.surface
        self.surface = win
        if win.get_size() == size:
            win.blit(canvas, (0, 0))
        else:
            w, h = win.get_size()
            k = min(w / size[0], h / size[1])
            fit = (max(1, int(size[0] * k)), max(1, int(size[1] * k)))
            win.fill((0, 0, 0))
            win.blit(pg.transform.smoothscale(canvas, fit),
                     ((w - fit[0]) // 2, (h - fit[1]) // 2))
        pg.display.flip()
        self._clock.tick(self.fps * self.playback.speed if pace else IDLE_FPS)

    def set_title(self, title: str) -> None:
        if title != self.title:
            self.title = title
            if self.surface is not None:
                self.pg.display.set_caption(title)

    def close(self) -> None:
        if self.surface is not None:
            self.pg.display.quit()
            self.surface = None
