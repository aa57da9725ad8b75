"""Pygame rendering of the household: a live window (``"human"``) or frames (``"rgb_array"``).

:class:`PygameRenderer` is what :meth:`HouseholdEnv.render` uses. The picture:
walls, doors (open/closed), rooms tinted and named, furniture (containers drawn
open or closed), small objects as lettered icons, agents as numbered discs in their
own colours with names and held objects, optionally each agent's field of view,
and a side panel with the goal progress, tick counter, team and message log. The
team runner's :class:`~orgteams.envs.render.overlay.Overlay` adds speech bubbles, markers
("abstained", "idle") and a caption.

pygame is imported lazily: the core install does not have it, and an env with
``render_mode=None`` never loads it. Only ``pygame.display`` (human mode) and
``pygame.font`` are initialised; there is no sound card.

Example::

    env = household_v0.parallel_env(layout="studio", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()            # (H, W, 3) uint8
    attach_renderer(env, show_fov=True)   # options the env constructor does not take

A :class:`TextEntry` set as ``renderer.entry`` is drawn as a box over the map and
receives the window's typing (TEXTINPUT characters, Enter, Backspace, Escape):
:mod:`orgteams.agents.human.window_input` uses it to ask a person in the window.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from orgteams.envs.core.state import HouseholdState
from orgteams.envs.render.boxes import MARGIN, TextEntry, draw_banner, draw_entry
from orgteams.envs.render.bubbles import draw_bubbles, draw_tails, layout_bubbles
from orgteams.envs.render.overlay import Overlay
from orgteams.envs.render.panel import draw_help, draw_panel
from orgteams.envs.render.style import BACKGROUND, MIN_HEIGHT, PANEL_WIDTH, Text, cell_size_for
from orgteams.envs.render.window import WATCH_HELP, Playback, Window
from orgteams.envs.render.world import (
    draw_agents,
    draw_dynamic,
    draw_fov,
    draw_room_names,
    draw_static,
    place_name_tags,
    room_label_spots,
)
from orgteams.errors import MissingExtraError

INSTALL_HINT = "pip install 'orgteams[render]'"
MODES = ("human", "rgb_array")


def import_pygame():
    """The pygame module, or an ``ImportError`` that says how to install it."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    try:
        import pygame
    except ImportError as exc:
        raise MissingExtraError("rendering with pygame (render_mode 'human' or 'rgb_array') needs "
                          f"pygame, which is not installed: {INSTALL_HINT}") from exc
    return pygame


class PygameRenderer:
    """Draws :class:`HouseholdState` frames; one per env, created on the first render.

    Args:
        render_mode: ``"human"`` opens a window and redraws it at ``fps``;
            ``"rgb_array"`` draws off-screen and returns ``(H, W, 3)`` uint8 arrays.
        fps: frame-rate cap of the human window (``render`` sleeps to keep it).
        cell_size: pixels per grid cell; by default chosen from the layout size.
        show_fov: highlight what each agent sees (key F toggles it in the window).
        fov_agents: agent indices whose view to show; ``None`` means all agents.
        font_path: a TTF file; missing or unreadable falls back to pygame's font.
        manage_events: in human mode, read the window's events in ``render``
            (close button, F, and the playback keys of
            :mod:`~orgteams.envs.render.window`: Space pause, N next tick, +/- speed,
            H keys, Q close). A caller with its own event loop (the play loop)
            passes ``False`` and forwards events to :meth:`handle_event`.
        title: the window caption.
        scale: frame size factor: the window's first size in human mode (it can
            then be resized), the size of the returned frames in rgb_array mode.

    After the user closes the window, :attr:`closed` is True and ``render`` draws
    nothing and returns ``None``: the caller can notice and stop. At the end of an
    episode :meth:`hold` keeps the last frame up until the person closes it.
    """

    def __init__(self, render_mode: str = "rgb_array", fps: int = 10, *,
                 cell_size: int | None = None, show_fov: bool = False,
                 fov_agents: list[int] | None = None, font_path: str | None = None,
                 manage_events: bool = True, title: str = "orgteams household",
                 scale: float = 1.0):
        if render_mode not in MODES:
            raise ValueError(f"PygameRenderer render_mode must be one of {MODES}, "
                             f"got {render_mode!r}")
        if fps <= 0:
            raise ValueError(f"fps must be positive, got {fps}")
        if scale <= 0:
            raise ValueError(f"scale must be positive, got {scale}")
        self.pg = import_pygame()
        self.render_mode, self.fps, self.scale = render_mode, fps, scale
        self.cell_size, self.show_fov, self.fov_agents = cell_size, show_fov, fov_agents
        self.manage_events, self.title = manage_events, title
        self.help_lines: list[str] | None = None  # drawn as a centred box when set
        self.footer: list[str] = []  # extra lines at the bottom of the panel
        self.entry: TextEntry | None = None  # a question box over the map, gets the typing
        self.banner: list[str] = []  # lines in a box at the top of the map (episode over)
        self.closed = False
        self.frames = 0
        self.pg.font.init()
        if render_mode == "human":
            self.pg.display.init()
        self.text = Text(self.pg, font_path)
        self._window: Window | None = None
        self._holding = False
        self._choice = ""
        self._layout_key: tuple | None = None
        self._static = None
        self._fov_cache: dict = {}
        self._overdrawn = False

    # ---- public API ----
    def render(self, state: HouseholdState, overlay: Overlay | None = None,
               names: list[str] | None = None) -> np.ndarray | None:
        """Draw ``state``; the frame as an array in rgb_array mode, else ``None``."""
        if self.closed:
            return None
        if self.render_mode == "human" and self.manage_events:
            self.pump()
            if self.closed:
                return None
        canvas = self.draw(state, overlay, names)
        self.frames += 1
        if self.render_mode == "rgb_array":
            if self.scale != 1:
                w, h = canvas.get_size()
                size = (round(w * self.scale / 2) * 2, round(h * self.scale / 2) * 2)
                canvas = self.pg.transform.smoothscale(canvas, size)
            return to_array(self.pg, canvas)
        self._show(canvas)
        if self.manage_events and self.entry is None:
            self._wait_while_paused(state, overlay, names)
        return None

    @property
    def playback(self) -> Playback:
        """Pause, single step and speed of the human window (see render_window)."""
        return self._open_window().playback

    def hold(self, state: HouseholdState, overlay: Overlay | None = None,
             names: list[str] | None = None, banner: list[str] | None = None,
             can_replay: bool = False) -> str:
        """Keep the last frame up with ``banner`` until the person closes the window.

        Returns ``"replay"`` when R was pressed (only with ``can_replay``), else
        ``"close"`` (Q, Escape, the close button). Returns at once without a window."""
        if self.render_mode != "human" or self.closed:
            return "close"
        self.banner = list(banner or [])
        self._holding, self._choice = can_replay, ""
        try:
            while not self.closed and not self._choice:
                self.pump()
                if self.closed or self._choice:
                    break
                self._show(self.draw(state, overlay, names), pace=False)
        finally:
            self.banner, self._holding = [], False
        return self._choice or "close"

    def draw(self, state: HouseholdState, overlay: Overlay | None = None,
             names: list[str] | None = None):
        """The frame as a pygame Surface (no window involved).

        The surface is reused: it is valid until the next ``draw`` or ``render``.
        """
        pg = self.pg
        n = len(state.agent_pos)
        names = list(names) if names else [f"agent_{i}" for i in range(n)]
        cell = self._prepare(state)
        canvas = self._canvas
        if self._overdrawn:  # the help box covered the margins: repaint them
            canvas.fill(BACKGROUND)
            self._overdrawn = False
        map_surf = self._map
        map_surf.blit(self._static, (0, 0))
        draw_dynamic(pg, self.text, map_surf, state, cell)
        rooms = draw_room_names(pg, self.text, map_surf, state, cell, self._room_spots)
        tags = place_name_tags(pg, self.text, state, cell, names, overlay, map_surf.get_rect())
        if self.show_fov:
            agents = [a for a in (self.fov_agents or range(n)) if 0 <= a < n]
            draw_fov(pg, map_surf, state, cell, agents, self._fov_cache)
        bubbles = []
        if overlay is not None and overlay.latest:
            index = {f"agent_{i}": i for i in range(n)}
            bubbles = layout_bubbles(pg, self.text, map_surf, state, cell, overlay, names, index,
                                     tags + rooms)
            draw_tails(pg, map_surf, bubbles)
        draw_agents(pg, self.text, map_surf, state, cell, names, overlay, tags)
        draw_bubbles(pg, self.text, map_surf, bubbles)
        panel = self._panel
        footer = list(self.footer)
        if self.render_mode == "human":
            if self.manage_events and not self.banner:
                footer.append(self.playback.status())
            footer.append(f"F: field of view ({'on' if self.show_fov else 'off'})")
        draw_panel(pg, self.text, panel, state, overlay, names, footer)
        if self.banner:
            draw_banner(pg, self.text, canvas, self.banner, canvas.get_width() - PANEL_WIDTH)
            self._overdrawn = True
        if self.help_lines:
            draw_help(pg, self.text, canvas, self.help_lines)
            self._overdrawn = True
        if self.entry is not None:
            draw_entry(pg, self.text, canvas, self.entry, canvas.get_width() - PANEL_WIDTH
                       - 2 * MARGIN, at_top=self._you_low(state, overlay))
            self._overdrawn = True
        return canvas

    def _you_low(self, state: HouseholdState, overlay: Overlay | None) -> bool:
        """Whether the person's agent is in the lower half of the frame."""
        you = overlay.you if overlay is not None else None
        if not you or not you.startswith("agent_") or not you[6:].isdigit():
            return False
        a = int(you[6:])
        if a >= len(state.agent_pos):
            return False
        row = state.agent_pos[a] // state.scene.width
        y = self._map.get_offset()[1] + row * self._cell
        return y > self._canvas.get_height() / 2

    def handle_event(self, event: Any) -> bool:
        """React to a window event (close button, F, typing into :attr:`entry`, and
        with ``manage_events`` the playback keys, H and Q).

        True when it was used."""
        pg = self.pg
        if event.type == pg.QUIT:
            self.close()
            return True
        if self.entry is not None and self.entry.handle_event(pg, event):
            return True
        if event.type != pg.KEYDOWN:
            return False
        if event.key == pg.K_f:
            self.toggle_fov()
            return True
        if not self.manage_events:  # the play loop has its own keys
            return False
        if event.key in (pg.K_q, pg.K_ESCAPE):
            self.close()
        elif event.key == pg.K_h:
            self.help_lines = None if self.help_lines else WATCH_HELP
        elif event.key == pg.K_r and self._holding:
            self._choice = "replay"
        else:
            return self.playback.handle_key(pg, event.key)
        return True

    def pump(self) -> None:
        """Read pending window events so the window stays responsive."""
        for event in self.pg.event.get():
            self.handle_event(event)

    def toggle_fov(self) -> None:
        self.show_fov = not self.show_fov

    def close(self) -> None:
        """Close the window (if any). Safe to call twice; later renders do nothing."""
        if self._window is not None:
            self._window.close()
            self._window = None
        self.closed = True

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the frames, known after the first render."""
        return self._size

    # ---- internals ----
    def _prepare(self, state: HouseholdState) -> int:
        layout = state.scene.layout
        key = (id(layout), layout.name, layout.grid)
        if key != self._layout_key:
            cell = self.cell_size or cell_size_for(layout.width, layout.height)
            self._cell = cell
            self._static = draw_static(self.pg, self.text, layout, cell)
            self._room_spots = room_label_spots(self.text, layout, cell)
            self._fov_cache = {}
            width = layout.width * cell + 2 * MARGIN + PANEL_WIDTH
            height = max(layout.height * cell + 2 * MARGIN, MIN_HEIGHT)
            # Even sizes: video encoders (yuv420p) need them.
            self._size = (width + width % 2, height + height % 2)
            # One canvas reused every frame; the map and panel are views into it.
            self._canvas = self.pg.Surface(self._size)
            self._canvas.fill(BACKGROUND)
            map_w, map_h = self._static.get_size()
            top = max(MARGIN, (self._size[1] - map_h) // 2)  # centred beside the panel
            self._map = self._canvas.subsurface((MARGIN, top, map_w, map_h))
            self._panel = self._canvas.subsurface(
                (self._size[0] - PANEL_WIDTH, 0, PANEL_WIDTH, self._size[1]))
            self._layout_key = key
        return self._cell

    def _open_window(self) -> Window:
        if self._window is None:
            self._window = Window(self.pg, self.title, self.fps, self.scale)
        return self._window

    def _show(self, canvas, pace: bool = True) -> None:
        window = self._open_window()
        window.fps = self.fps
        window.show(canvas, pace)

    def _wait_while_paused(self, state, overlay, names) -> None:
        """While paused, keep the window drawn and responsive; N lets one frame through."""
        playback = self.playback
        while playback.paused and not playback.step and not self.closed:
            self.pump()
            if self.closed:
                return
            self._show(self.draw(state, overlay, names), pace=False)
        playback.step = False


def to_array(pg: Any, surface) -> np.ndarray:
    """A Surface as an ``(H, W, 3)`` uint8 array (a copy)."""
    w, h = surface.get_size()
    shifts = surface.get_shifts()[:3]
    if surface.get_bitsize() == 32 and sys.byteorder == "little" and surface.get_pitch() == 4 * w:
        # Four times faster than image.tobytes: one strided read per channel.
        rows = pg.surfarray.pixels2d(surface).T  # (H, W) uint32, C-contiguous
        channels = rows.view(np.uint8).reshape(h, w, 4)
        out = np.empty((h, w, 3), np.uint8)
        for k, shift in enumerate(shifts):
            out[..., k] = channels[..., shift // 8]
        del rows, channels  # release the surface lock
        return out
    tobytes = getattr(pg.image, "tobytes", None) or pg.image.tostring
    return np.frombuffer(tobytes(surface, "RGB"), dtype=np.uint8).reshape(h, w, 3).copy()


def attach_renderer(env: Any, **options: Any) -> PygameRenderer:
    """Give ``env`` a renderer with options its constructor does not take.

    ``options`` are :class:`PygameRenderer` keywords (``show_fov``, ``fov_agents``,
    ``cell_size``, ``font_path``...). The env's own render mode and fps are used.
    """
    raw = env.unwrapped
    if raw.render_mode not in MODES:
        raise ValueError(f"attach_renderer needs render_mode 'human' or 'rgb_array', "
                         f"got {raw.render_mode!r}")
    if raw._renderer is not None:
        raw._renderer.close()
    options.setdefault("fps", raw.render_fps)
    raw._renderer = PygameRenderer(raw.render_mode, **options)
    return raw._renderer


def window_renderer(env: Any) -> PygameRenderer | None:
    """The human-window renderer of ``env`` (a household or high-level env), opened now.

    None when the env does not render in human mode."""
    raw = getattr(env, "base", env).unwrapped
    if raw.render_mode != "human":
        return None
    if raw._renderer is None:
        raw.render()
    return raw._renderer


def window_closed(env: Any) -> bool:
    """True when the env's (a household or high-level env) human window was closed by the
    user (stop stepping)."""
    renderer = getattr(getattr(env, "base", env).unwrapped, "_renderer", None)
    return renderer is not None and renderer.closed


def render_frame(state: HouseholdState, overlay: Overlay | None = None,
                 names: list[str] | None = None, **options: Any) -> np.ndarray:
    """One off-screen frame of ``state`` (for replays and tools); options as the renderer."""
    return PygameRenderer("rgb_array", **options).render(state, overlay, names)
