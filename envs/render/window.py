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
mouse      point at an agent: it is named on the map and listed in the panel
           (click: it stays singled out; click elsewhere to let go)
Q / Esc    close the window (stops the run or replay)
=========  =====================================================================

When the episode is over, :meth:`PygameRenderer.hold` keeps the last frame up with a
banner until the person presses Q (close) or R (replay).

Pace: a frame of a new tick waits for its turn (``1 / (fps x speed)`` after the last
tick's frame, measured from when that one was due, so drawing and thinking in between
count against the wait instead of adding to it). Frames in between (a speaking stage:
same tick, a new bubble) do not wait; the renderer draws them at most
:data:`IDLE_FPS` times a second.

A window destroyed from outside (``xdotool windowclose``, a crashed window manager)
makes every later X request on it fail; Xlib's default handler would then print
"X Error ... BadDrawable" and exit the process. :class:`_X11Guard` replaces that
handler for errors on our window: the window is marked :attr:`Window.lost` and the
renderer treats it as closed (the run stops with its summary written).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

WATCH_HELP = [  # "key<TAB>what it does": drawn by render_panel.draw_help
    "Watching",
    "Space\tpause / resume",
    "N\tnext tick while paused",
    "+ / -\tfaster / slower",
    "F\tfield of view on / off (the pointed agent's alone)",
    "mouse\tpoint at an agent: named, listed (click keeps it)",
    "wheel\tover the message log: older / newer messages",
    "H\tthis help",
    "Q / Esc\tclose the window (stops the run)",
]
REPLAY_KEY = "R\treplay the episode (it is over)"


def watch_help(can_replay: bool = False) -> list[str]:
    """The watch keys (H); R too once the episode is over and can be replayed."""
    return WATCH_HELP[:-1] + [REPLAY_KEY, WATCH_HELP[-1]] if can_replay else list(WATCH_HELP)
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
            return f"PAUSED {speed}: Space resumes, N next tick, H keys"
        return f"playing {speed}: Space pauses, +/- speed, H keys"


class _XErrorEvent(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("display", ctypes.c_void_p),
                ("resourceid", ctypes.c_ulong), ("serial", ctypes.c_ulong),
                ("error_code", ctypes.c_ubyte), ("request_code", ctypes.c_ubyte),
                ("minor_code", ctypes.c_ubyte)]


_X_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_XErrorEvent))
BAD_WINDOW, BAD_DRAWABLE = 3, 9  # X protocol error codes: what a destroyed window yields


class _X11Guard:
    """An X error handler that survives our own window being destroyed from outside.

    Errors about :attr:`window` (an X window id: ``BadWindow``, ``BadDrawable``, an
    extension's such as ``GLXBadDrawable``) are counted in :attr:`errors` and otherwise
    ignored, and so is every error after the first (SDL tearing the window down); any
    other error goes to the handler that was there before (Xlib's default: exit).

    One per process (Xlib has one error handler), installed before SDL opens the
    display (:func:`guard_x11`): SDL then keeps it as the handler its own calls on to,
    and puts it back when it closes the display (the dead window's last errors come
    then). A new window is announced (:meth:`expect`) and told its id once made
    (:meth:`bind`): one destroyed while it is being made counts too.
    """

    _installed: _X11Guard | None = None

    def __init__(self, x11: Any) -> None:
        self.window: int | None = 0  # None: a window is being made, its id not known
        self.errors = 0
        self._early: set[int] = set()  # windows that failed before bind()
        self._callback = _X_HANDLER(self._handle)  # kept alive: Xlib holds the pointer
        x11.XSetErrorHandler.restype = ctypes.c_void_p
        x11.XSetErrorHandler.argtypes = [ctypes.c_void_p]
        previous = x11.XSetErrorHandler(ctypes.cast(self._callback, ctypes.c_void_p))
        self._previous = _X_HANDLER(previous) if previous else None

    @classmethod
    def install(cls) -> _X11Guard | None:
        """The process's guard (installed now if it is not yet); None where X11 cannot be
        in use (no DISPLAY, another SDL video driver) or libX11 does not load."""
        if cls._installed is None:
            if not sys.platform.startswith("linux") or not os.environ.get("DISPLAY"):
                return None
            if os.environ.get("SDL_VIDEODRIVER", "x11") != "x11":
                return None
            name = ctypes.util.find_library("X11")
            if name is None:
                return None
            try:
                cls._installed = cls(ctypes.CDLL(name))
            except (OSError, AttributeError):
                return None
        return cls._installed

    def expect(self) -> None:
        """A new window is about to be made."""
        self.window, self.errors, self._early = None, 0, set()

    def bind(self, pg: Any) -> None:
        """Watch pygame's current window (just made)."""
        try:
            self.window = int(pg.display.get_wm_info().get("window") or 0)
        except (AttributeError, TypeError, ValueError, pg.error):
            self.window = 0
        if self.window in self._early:
            self.errors += 1
        self._early = set()

    def _handle(self, display: Any, event: Any) -> int:
        e = event.contents
        if self.errors:  # our window is gone: what follows is about it (SDL tearing down)
            self.errors += 1
            return 0
        if self.window is None and e.error_code in (BAD_WINDOW, BAD_DRAWABLE):
            self._early.add(e.resourceid)  # while the window is made: maybe ours
            return 0
        if self.window and e.resourceid == self.window:
            # BadWindow, BadDrawable, or an extension's (GLXBadDrawable on a buffer swap).
            self.errors += 1
            return 0
        if self._previous is not None:
            return self._previous(display, event)
        return 0

    @property
    def lost(self) -> bool:
        return self.errors > 0


def guard_x11() -> None:
    """Install the X error guard (see :class:`_X11Guard`); call it before
    ``pygame.display.init()``, so that SDL keeps it. Does nothing off X11."""
    _X11Guard.install()


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
        self._fit = None  # where the frame lies in the window: (x, y, factor)
        self._due: float | None = None  # when the next tick's frame may be shown
        self._guard: _X11Guard | None = None
        self.shown_at = 0.0  # time.monotonic() of the last frame shown

    @property
    def lost(self) -> bool:
        """The window was destroyed from outside (X errors on it): treat it as closed."""
        return self._guard is not None and self._guard.lost

    def show(self, canvas, pace: str = "tick") -> None:
        """Put ``canvas`` in the window (scaled to fit, centred).

        ``pace``: ``"tick"`` waits for this tick's turn (see the module docstring),
        ``"idle"`` waits ``1 / IDLE_FPS`` (loops that redraw while paused or holding),
        ``"none"`` does not wait (a speaking stage between ticks).
        """
        pg = self.pg
        size = canvas.get_size()
        if self.surface is None or size != self._frame_size:
            self._frame_size = size
            first = (max(1, round(size[0] * self.scale)), max(1, round(size[1] * self.scale)))
            guard = _X11Guard.install()
            pg.display.init()
            self._guard = guard if guard is not None and pg.display.get_driver() == "x11" \
                else None
            if self._guard is not None:
                self._guard.expect()
            self.surface = pg.display.set_mode(first, pg.RESIZABLE)
            if self._guard is not None:
                self._guard.bind(pg)
            pg.display.set_caption(self.title)
        if self.lost:
            return
        win = pg.display.get_surface() or self.surface
        self.surface = win
        if win.get_size() == size:
            win.blit(canvas, (0, 0))
            self._fit = (0, 0, 1.0)
        else:
            w, h = win.get_size()
            k = min(w / size[0], h / size[1])
            fit = (max(1, int(size[0] * k)), max(1, int(size[1] * k)))
            win.fill((0, 0, 0))
            at = ((w - fit[0]) // 2, (h - fit[1]) // 2)
            win.blit(pg.transform.smoothscale(canvas, fit), at)
            self._fit = (*at, k)
        if pace == "tick":
            self._wait_for_tick()
        pg.display.flip()
        self.shown_at = time.monotonic()
        if pace == "idle":
            time.sleep(1 / IDLE_FPS)

    def _wait_for_tick(self) -> None:
        period = 1 / (self.fps * self.playback.speed)
        now = time.monotonic()
        if self._due is None or now > self._due + period:  # late (slow work): no catching up
            self._due = now
        elif now < self._due:
            time.sleep(self._due - now)
        self._due += period

    def to_frame(self, pos: tuple[int, int]) -> tuple[int, int] | None:
        """A window position (a mouse event's) in frame pixels; None outside the frame."""
        if self._fit is None or self._frame_size is None:
            return None
        x0, y0, k = self._fit
        x, y = (pos[0] - x0) / k, (pos[1] - y0) / k
        w, h = self._frame_size
        return (int(x), int(y)) if 0 <= x < w and 0 <= y < h else None

    def set_title(self, title: str) -> None:
        if title != self.title:
            self.title = title
            if self.surface is not None:
                self.pg.display.set_caption(title)

    def close(self) -> None:
        if self.surface is not None:
            self.pg.display.quit()
            self.surface = None
