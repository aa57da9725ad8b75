"""Pygame rendering of the household: a live window (``"human"``) or frames (``"rgb_array"``).

:class:`PygameRenderer` is what :meth:`HouseholdEnv.render` uses. The picture:
walls, doors (open/closed), rooms tinted and named, furniture (containers drawn
open or closed), small objects as lettered icons, agents as numbered discs in their
own colours with names and held objects, optionally each agent's field of view,
and a side panel with the goal progress, tick counter, team and message log. The
team runner's :class:`~orgteams.envs.render.overlay.Overlay` adds speech bubbles, markers
("abstained", "idle") and a caption.

Big teams stay legible: name tags for everyone up to :data:`TAG_EVERYONE` agents,
beyond only for you, the agent under the mouse (or clicked, :attr:`selected`), the
speakers and the leaders; bubbles and tags never cover what matters
(:mod:`~orgteams.envs.render.bubbles`); the panel adapts
(:mod:`~orgteams.envs.render.panel`). :attr:`PygameRenderer.sight` draws only what one
agent knows (:mod:`~orgteams.envs.render.sight`, ``orgteams play``), and
:attr:`PygameRenderer.last` says where a frame put things.

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
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from orgteams.envs.core.state import HouseholdState
from orgteams.envs.render.boxes import MARGIN, TextEntry, draw_banner, draw_entry
from orgteams.envs.render.bubbles import (
    MAX_BUBBLES,
    BubbleLayout,
    draw_bubbles,
    draw_tails,
    layout_bubbles,
)
from orgteams.envs.render.overlay import Overlay
from orgteams.envs.render.panel import Focus, PanelLayout, draw_help, draw_panel, is_lead
from orgteams.envs.render.sight import Known, Sight, known_world
from orgteams.envs.render.style import BACKGROUND, MIN_HEIGHT, PANEL_WIDTH, Text, cell_size_for
from orgteams.envs.render.window import IDLE_FPS, Playback, Window, guard_x11, watch_help
from orgteams.envs.render.world import (
    agent_rect,
    draw_agents,
    draw_dynamic,
    draw_fov,
    draw_room_names,
    draw_static,
    draw_veils,
    object_cells,
    place_name_tags,
    room_label_spots,
)
from orgteams.errors import MissingExtraError

INSTALL_HINT = "pip install 'orgteams[render]'"
MODES = ("human", "rgb_array")
TAG_EVERYONE = 16
"""Up to this many agents each gets a name tag where it has room; beyond, only you, the
agent under the mouse (or clicked), speakers and leaders do."""


@dataclass
class FrameLayout:
    """Where a frame put things: the map's offset in the frame and its cell size, the name
    tags (agent -> box, map pixels), the bubbles, the panel's sections, the view drawn
    (None: everything)."""

    map_offset: tuple[int, int]
    cell: int
    tags: dict[int, Any]
    bubbles: BubbleLayout
    panel: PanelLayout
    known: Known | None = None
    room_names: list = field(default_factory=list)  # where each room's name went
    banner: Any = None  # the end banner's box (frame pixels), when one is up


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
        fov_agents: agent indices whose view to show; ``None`` means all agents, or only
            the agent under the mouse (or clicked, :attr:`selected`) when there is one.
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
            guard_x11()  # before SDL opens the display: a window destroyed outside is closed
            self.pg.display.init()
        self.text = Text(self.pg, font_path)
        self._window: Window | None = None
        self._holding = False
        self._choice = ""
        self._layout_key: tuple | None = None
        self._static = None
        self._fov_cache: dict = {}
        self._overdrawn = False
        self._shown_tick: tuple[int, int] | None = None  # (scene, tick) of the last frame
        self.sight: Sight | None = None  # draw only what one agent knows (orgteams play)
        self.selected: int | None = None  # the agent clicked (or set): tagged, listed
        self.show_bubbles = True  # speech bubbles on the map (the panel's log has them all)
        self._mouse: tuple[int, int] | None = None  # frame pixel under the mouse
        self.log_back = 0  # newest messages the panel's log is scrolled past (mouse wheel)
        self._said: int | None = None  # the overlay's message count at the last frame
        self._last_state: HouseholdState | None = None
        self.last: FrameLayout | None = None  # where the last frame put things

    # ---- public API ----
    def render(self, state: HouseholdState, overlay: Overlay | None = None,
               names: list[str] | None = None) -> np.ndarray | None:
        """Draw ``state``; the frame as an array in rgb_array mode, else ``None``.

        In a watched window (``manage_events``) a frame of a new tick keeps the pace
        (``fps`` x the playback speed); a frame of the same tick (a speaking stage) does
        not wait, and is skipped when one was shown less than ``1 / IDLE_FPS`` ago
        (events are still read; while paused, every stage is shown, N steps through them).
        """
        if self.closed:
            return None
        human = self.render_mode == "human"
        if human and self.manage_events:
            self.pump()
            if self.closed:
                return None
        pace = "tick"
        if human and self.manage_events:
            same_tick = self._shown_tick == (id(state.scene), state.tick)
            if same_tick and not self.playback.paused and self.entry is None:
                if time.monotonic() - self._open_window().shown_at < 1 / IDLE_FPS:
                    return None
                pace = "none"
            self._shown_tick = (id(state.scene), state.tick)
        canvas = self.draw(state, overlay, names)
        self.frames += 1
        if self.render_mode == "rgb_array":
            if self.scale != 1:
                w, h = canvas.get_size()
                size = (round(w * self.scale / 2) * 2, round(h * self.scale / 2) * 2)
                canvas = self.pg.transform.smoothscale(canvas, size)
            return to_array(self.pg, canvas)
        self._show(canvas, pace)
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
        if self.help_lines:  # the help opened during the episode: now R replays it
            self.help_lines = watch_help(can_replay)
        try:
            while not self.closed and not self._choice:
                self.pump()
                if self.closed or self._choice:
                    break
                self._show(self.draw(state, overlay, names), "idle")
        finally:
            self.banner, self._holding = [], False
            if self.help_lines:
                self.help_lines = watch_help()
        return self._choice or "close"

    def draw(self, state: HouseholdState, overlay: Overlay | None = None,
             names: list[str] | None = None):
        """The frame as a pygame Surface (no window involved).

        The surface is reused: it is valid until the next ``draw`` or ``render``.
        :attr:`last` says where the name tags, bubbles and panel sections went.
        """
        pg = self.pg
        n = len(state.agent_pos)
        names = list(names) if names else [f"agent_{i}" for i in range(n)]
        cell = self._prepare(state)
        self._last_state = state
        canvas = self._canvas
        if self._overdrawn:  # the help box covered the margins: repaint them
            canvas.fill(BACKGROUND)
            self._overdrawn = False
        known = known_world(state, self.sight) if self.sight is not None else None
        world = known.state if known is not None else state  # what the map shows
        drawn = sorted(known.visible_agents) if known is not None else list(range(n))
        map_surf = self._map
        map_surf.blit(self._static, (0, 0))
        draw_dynamic(pg, self.text, map_surf, world, cell, known)
        if known is not None:
            draw_veils(pg, map_surf, world, cell, known, self._fov_cache)
        focus = self._focus(world, overlay, drawn)
        focus.known = known
        if overlay is not None:  # a scrolled-back log stays on its messages as new ones come
            if self.log_back and self._said is not None and overlay.said > self._said:
                self.log_back += overlay.said - self._said
            self._said = overlay.said
            self.log_back = min(self.log_back, max(len(overlay.log) - 1, 0))
            focus.log_back = self.log_back
        index = {f"agent_{i}": i for i in range(n)}
        talking = [index[m.sender] for m in (overlay.latest.values() if overlay else ())
                   if m.sender in index][-MAX_BUBBLES:][::-1]
        you = index.get(overlay.you) if overlay is not None and overlay.you else None
        keep = {a for a in (you, focus.selected) if a is not None}
        tagged = self._tagged(world, overlay, drawn, keep, talking, focus.speakers)
        tags = place_name_tags(pg, self.text, world, cell, names, overlay, map_surf.get_rect(),
                               tagged, keep, object_cells(pg, world, cell, drawn), drawn)
        # Names after tags: a tag pushed beside or below its agent moves the name too.
        rooms = draw_room_names(pg, self.text, map_surf, world, cell, self._room_spots, drawn,
                                list(tags.values()))
        if self.show_fov:
            # Everyone's views at once tint a big team's rooms into a colour soup: the
            # picked agent's (under the mouse, or clicked) alone when there is one.
            picked = [focus.selected] if focus.selected is not None else None
            agents = [a for a in (self.fov_agents or picked or range(n)) if 0 <= a < n]
            draw_fov(pg, map_surf, state, cell, agents, self._fov_cache, fog=known is None)
        bubbles = BubbleLayout()
        if overlay is not None and overlay.latest and self.show_bubbles:
            speaking = [a for a in talking if a in set(drawn)]
            bubbles = layout_bubbles(pg, self.text, map_surf, world, cell, overlay, names, index,
                                     [*tags.values(), *rooms],
                                     object_cells(pg, world, cell, speaking), tags, set(drawn),
                                     self._furniture_cells)
            draw_tails(pg, map_surf, bubbles.bubbles)
        draw_agents(pg, self.text, map_surf, world, cell, names, overlay, tags, drawn)
        draw_bubbles(pg, self.text, map_surf, bubbles.bubbles)
        footer = list(self.footer)
        if self.render_mode == "human":
            if self.manage_events and not self.banner:
                footer.append(self.playback.status())
            footer.append(f"F: field of view ({'on' if self.show_fov else 'off'})")
        focus.pinned = bubbles.dropped
        panel = draw_panel(pg, self.text, self._panel, state, overlay, names, footer, focus)
        self.last = FrameLayout(self._map.get_offset(), cell, tags, bubbles, panel, known,
                                rooms)
        if self.banner:
            ox, oy = self._map.get_offset()
            below = [r.move(ox, oy) for r in (
                *(agent_rect(pg, world, a, cell) for a in drawn),
                *object_cells(pg, world, cell, []))]
            self.last.banner = draw_banner(pg, self.text, canvas, self.banner,
                                           canvas.get_width() - PANEL_WIDTH, below)
            self._overdrawn = True
        if self.help_lines:
            draw_help(pg, self.text, canvas, self.help_lines)
            self._overdrawn = True
        if self.entry is not None:
            draw_entry(pg, self.text, canvas, self.entry, canvas.get_width() - PANEL_WIDTH
                       - 2 * MARGIN, at_top=self._you_low(state, overlay))
            self._overdrawn = True
        return canvas

    def _focus(self, state: HouseholdState, overlay: Overlay | None, drawn: list[int]) -> Focus:
        """The agent singled out (under the mouse, else the one clicked) and the speakers of
        the latest round with messages, newest first."""
        n = len(state.agent_pos)
        selected = self._agent_at(state, self._mouse) if self._mouse is not None else None
        if selected is None and self.selected is not None and 0 <= self.selected < n:
            selected = self.selected
        if selected is not None and selected not in set(drawn):
            selected = None
        speakers = []
        if overlay is not None:
            index = {f"agent_{i}": i for i in range(n)}
            speakers = list(dict.fromkeys(index[m.sender] for m in reversed(overlay.this_round)
                                          if m.sender in index))
        return Focus(selected, None, speakers)

    def _tagged(self, state: HouseholdState, overlay: Overlay | None, drawn: list[int],
                keep: set[int], talking: list[int], speakers: list[int]) -> list[int]:
        """Who gets a name tag, most wanted first: you and the picked agent, the agents with
        a bubble, leaders, this round's speakers; everyone else too up to
        :data:`TAG_EVERYONE` agents."""
        roles = overlay.roles if overlay is not None else {}
        leads = [a for a in drawn if is_lead(roles.get(f"agent_{a}"))]
        wanted = [*sorted(keep), *talking, *leads, *speakers]
        if len(state.agent_pos) <= TAG_EVERYONE:
            wanted += drawn
        visible = set(drawn)
        return [a for a in dict.fromkeys(wanted) if a in visible]

    def _agent_at(self, state: HouseholdState, pos: tuple[int, int]) -> int | None:
        """The agent drawn under frame pixel ``pos``, or None."""
        if self._layout_key is None:
            return None
        ox, oy = self._map.get_offset()
        c, r = (pos[0] - ox) // self._cell, (pos[1] - oy) // self._cell
        w = state.scene.width
        if not (0 <= c < w and 0 <= r < state.scene.layout.height):
            return None
        cell = r * w + c
        return next((a for a, p in enumerate(state.agent_pos) if p == cell), None)

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
        if event.type == pg.MOUSEMOTION and self._window is not None:
            self._mouse = self._window.to_frame(event.pos)
            return True
        if event.type == pg.MOUSEWHEEL and self._over_panel():
            # Up (y > 0) shows older messages, down newer; the draw clamps to the log.
            self.log_back = max(0, self.log_back + 3 * event.y)
            return True
        if event.type == pg.WINDOWLEAVE:
            self._mouse = None
            return True
        if event.type == pg.MOUSEBUTTONDOWN and event.button == 1 and self._window is not None:
            at = self._window.to_frame(event.pos)
            self.selected = self._agent_at(self._last_state, at) if (
                at is not None and self._last_state is not None) else None
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
            self.help_lines = None if self.help_lines else watch_help(self._holding)
        elif event.key == pg.K_r and self._holding:
            self._choice = "replay"
        else:
            return self.playback.handle_key(pg, event.key)
        return True

    def _over_panel(self) -> bool:
        """Whether the mouse is over the side panel (or not known: no motion seen yet)."""
        canvas = getattr(self, "_canvas", None)  # made by the first frame
        if self._mouse is None or canvas is None:
            return self._mouse is None
        return self._mouse[0] >= canvas.get_width() - PANEL_WIDTH

    def pump(self) -> None:
        """Read pending window events so the window stays responsive."""
        for event in self.pg.event.get():
            self.handle_event(event)
        self._check_lost()

    def toggle_fov(self) -> None:
        """Shows or hides the agents' field of view (the F key)."""
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
            self._furniture_cells = [self.pg.Rect(f.cell[1] * cell, f.cell[0] * cell, cell, cell)
                                     for f in layout.furniture]
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

    def _show(self, canvas, pace: str = "tick") -> None:
        window = self._open_window()
        window.fps = self.fps
        window.show(canvas, pace)
        self._check_lost()

    def _check_lost(self) -> None:
        """A window destroyed from outside is a closed window (see window._X11Guard)."""
        if self._window is not None and self._window.lost:
            self.close()

    def _wait_while_paused(self, state, overlay, names) -> None:
        """While paused, keep the window drawn and responsive; N lets one frame through."""
        playback = self.playback
        while playback.paused and not playback.step and not self.closed:
            self.pump()
            if self.closed:
                return
            self._show(self.draw(state, overlay, names), "idle")
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
