"""Play the household with the keyboard while a policy drives the other agents.

Turn-based: each of your actions is one tick for everyone; the window redraws
at ``fps`` in between so it stays responsive. Keys (H shows them in the window):

==================  =============================================================
arrows              move
Shift + arrow       use what is there: open a closed door or container, else put
                    what you hold (hand slot 1), else pick up (selected slot)
O / C + arrow       open / close the door or container in that direction
G + arrow           pick up (grab) the selected slot from the furniture there
P + arrow           put the selected hand slot on/in the furniture there
1-8                 select the slot for the next pick or put (default 1)
Space or .          wait one tick
T                   write to your teammates (planner / LLM teammates): a box opens;
                    Enter sends to everyone, ``@Name text`` to one teammate, Esc cancels
F                   field of view on/off      H   help on/off
R                   new episode (once one is over)
Q / Escape          quit (Escape first cancels a pending O/C/G/P, then queued keys)
==================  =============================================================

Keys pressed while teammates think are queued, up to :data:`KEY_QUEUE_MAX`, and
played one tick each, in order, when they are done (the window shows how many wait;
Escape clears them); a key beyond that is refused with a note, never silently lost.

Teammates that think in high-level actions (planners, LLM agents) play through
:class:`~orgteams.envs.highlevel.highlevel_env.HighLevelEnv`: pass ``teammates``
(a :class:`Teammates`, e.g.
:class:`orgteams.play.teammates.PlannerTeammates`); each key becomes ``primitive:<id>``, one tick,
while their plans run over the same tick. Teammates that listen (they have ``hear``) get the
T box's lines as :class:`~orgteams.envs.play.chat.ChatLine` s from the player's agent; the
footer shows the player's role when the overlay has one (``orgteams play --org``).

What you see is what your agent knows (:mod:`orgteams.envs.render.sight`): the room it
is in as it is, rooms seen before as it remembers them (faded), rooms never seen dark,
other agents only in view; ``reveal=True`` (``orgteams play --reveal``) shows everything.
When an episode ends, the same banner as ``orgteams run`` says how (goal, ticks) and
that R starts the next. :meth:`PlaySession.run` returns every episode played
(``episodes``), the last one ``interrupted`` when you quit before it ended.

Tests drive it headless (``SDL_VIDEODRIVER=dummy``): post key events with ``pygame.event.post``
(or call :meth:`PlaySession.handle_event`), call :meth:`PlaySession.tick` or ``run()``.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

from orgteams.envs.core.actions import HAND_CAPACITY, Verb, decode, encode
from orgteams.envs.core.layout import DIRECTIONS
from orgteams.envs.core.state import is_walkable
from orgteams.envs.highlevel.highlevel_env import PRIMITIVE, HighLevelEnv
from orgteams.envs.observe.memory import AgentMemory
from orgteams.envs.play.chat import ChatLine, PlayerChat
from orgteams.envs.render.boxes import end_banner
from orgteams.envs.render.renderer import PygameRenderer
from orgteams.envs.render.sight import Sight
from orgteams.envs.render.video import Policy, resolve_policy
from orgteams.errors import UserError

HELP_LINES = [  # "key<TAB>what it does": the help box draws two columns
    "Keys",
    "arrows\tmove",
    "Shift + arrow\tuse: open / put / pick up",
    "O / C + arrow\topen / close a door or container",
    "G + arrow\tpick up the selected slot",
    "P + arrow\tput the selected hand slot",
    "1 - 8\tselect the slot (default 1)",
    "Space or .\twait one tick",
    "T\twrite to teammates (@Name text: to one)",
    "F\tfield of view on / off",
    "mouse\tpoint at an agent (click keeps it)",
    "wheel\tover the message log: older / newer messages",
    "H\tthis help",
    "R\tnew episode (when one is over)",
    "Esc\tcancel a pending key, queued keys",
    "Q / Esc\tquit",
]
VERB_KEYS = {"o": Verb.OPEN, "c": Verb.CLOSE, "g": Verb.PICK, "p": Verb.PUT}
KEY_QUEUE_MAX = 8  # keys played after slow teammates finish; more is refused, with a note


class Teammates(Protocol):
    """High-level teammates of the keyboard player (planners, LLM agents).

    Called once per tick (one decision round of a :class:`HighLevelEnv` whose human
    agent plays ``primitive:<id>``) with the env and the live teammates' ids; returns
    a high-level action id per teammate (``continue`` keeps a running plan; a
    teammate left out waits when it needs a decision). ``reset`` is called after each
    ``env.reset`` (``seed``): a new episode. Teammates that listen to the player also
    have ``hear(line: ChatLine)``, called with each line the player sends; they
    deliver it at their next communicate stage.
    """

    def __call__(self, env: HighLevelEnv, agents: list[str]) -> dict[str, str]: ...

    def reset(self, env: HighLevelEnv, seed: int) -> None: ...


class PlaySession:
    """One person plays ``human_agent``; ``others`` acts for everyone else.

    Args:
        env: a household env to play in; by default one is built from ``layout``,
            ``task`` and ``num_agents`` (and closed by :meth:`close`).
        human_agent: the agent the keyboard controls, e.g. ``"agent_0"``.
        others: ``"random"`` or a callable ``(agent_id, env) -> action`` deciding each
            tick for everyone else; ``env`` is the unwrapped env.
        teammates: high-level teammates instead of ``others`` (see :class:`Teammates`);
            the env is then a :class:`HighLevelEnv` (built here, or passed as ``env``).
        seed: episode seed (R starts the next seed).
        fps: window frame rate.
        scale: the window's first size as a factor of the frame (it can be resized).
        show_fov: start with your field of view highlighted.
        display_names: labels for the agents (e.g. ``["You", "Bob", "Carol"]``).
        pump_events: read window events in :meth:`tick`; ``False`` leaves it to
            the caller, who passes each event to :meth:`handle_event`.
        reveal: show the whole house; by default the window shows only what your agent
            knows (see the module docstring).
    """

    def __init__(self, env: Any = None, *, layout: str = "studio",
                 task: str = "prepare_afternoon_tea", num_agents: int = 3,
                 human_agent: str = "agent_0", others: str | Policy = "random",
                 teammates: Teammates | None = None,
                 seed: int = 0, fps: int = 30, show_fov: bool = True, scale: float = 1.0,
                 display_names: list[str] | None = None, pump_events: bool = True,
                 reveal: bool = False):
        self._owned = env is None
        if env is None and teammates is not None:
            env = HighLevelEnv(layout=layout, task=task, num_agents=num_agents)
        elif env is None:
            from orgteams.envs import household_v0

            env = household_v0.parallel_env(layout=layout, task=task, num_agents=num_agents)
        if teammates is not None and not isinstance(env, HighLevelEnv):
            raise TypeError(f"teammates play in a HighLevelEnv, got env {type(env).__name__}")
        self.teammates = teammates
        if teammates is not None and hasattr(teammates, "waiting"):
            teammates.waiting = self._waiting_frame  # slow (LLM) teammates keep us drawn
        self.env = env
        self.raw = env.base if isinstance(env, HighLevelEnv) else env.unwrapped
        if human_agent not in self.raw.possible_agents:
            raise UserError(f"human_agent {human_agent!r} is not one of "
                            f"{self.raw.possible_agents}")
        self.human = human_agent
        self.index = self.raw.agent_index[human_agent]
        self.raw.overlay.you = human_agent  # ringed and tagged YOU in the window
        self.raw.rich_infos = True  # the message line names this tick's failed action
        self.policy = resolve_policy(others, seed) if teammates is None else None
        self.seed, self.pump_events, self.reveal = seed, pump_events, reveal
        if display_names is not None:
            self.raw.display_names = list(display_names)
        you = self._names()[human_agent]
        you = f"{you} ({human_agent})" if you != human_agent else you
        self.renderer = PygameRenderer("human", fps=fps, show_fov=show_fov, scale=scale,
                                       fov_agents=[self.index], manage_events=False,
                                       title=f"orgteams play - you are {you}")
        self.running = True
        self.stop_reason = ""  # why the session ended: "quit" or "window closed"
        self.episodes: list[dict[str, Any]] = []  # every episode played, as it ended
        self._memory: AgentMemory | None = None  # without teammates: our own record
        self.frames = 0
        self.pending: Verb | None = None
        self.slot = 0
        self.message = ""
        self.queue: deque[int] = deque()  # actions to play, one per tick (KEY_QUEUE_MAX)
        listens = callable(getattr(teammates, "hear", None))
        self.chat = PlayerChat(human_agent, self._names) if listens else None
        self.renderer.pg.key.stop_text_input()  # on only while the message box is open
        self._reset(seed)

    # ---- input ----
    def handle_event(self, event: Any) -> None:
        """Turn one pygame event into a queued action or a setting change."""
        pg = self.renderer.pg
        if event.type == pg.QUIT:
            self.running, self.stop_reason = False, "window closed"
            return
        if self.chat is not None and self.chat.is_open:
            self._chat_event(event)
            return
        if event.type in (pg.MOUSEMOTION, pg.MOUSEBUTTONDOWN, pg.WINDOWLEAVE):
            self.renderer.handle_event(event)  # the agent under the mouse is singled out
            return
        if event.type != pg.KEYDOWN:
            return
        key = event.key
        arrows = {pg.K_UP: 0, pg.K_RIGHT: 1, pg.K_DOWN: 2, pg.K_LEFT: 3}
        name = pg.key.name(key)
        if key == pg.K_ESCAPE and self.pending is not None:
            self.pending, self.message = None, "cancelled"
        elif key == pg.K_ESCAPE and self.queue:
            self.message = f"{len(self.queue)} queued key(s) cleared"
            self.queue.clear()
        elif key in (pg.K_q, pg.K_ESCAPE):
            self.running, self.stop_reason = False, "quit"
        elif key == pg.K_h:
            self.renderer.help_lines = None if self.renderer.help_lines else HELP_LINES
        elif key == pg.K_f:
            self.renderer.toggle_fov()
        elif key == pg.K_r and not self.env.agents:
            self._reset(self.seed + 1)
            self.message = f"new episode (seed {self.seed})"
        elif name in VERB_KEYS:
            self.pending = VERB_KEYS[name]
            self.message = f"{self.pending.name.lower()}: now press an arrow"
        elif name.isdigit() and 1 <= int(name) <= 8:
            self.slot = int(name) - 1
            self.message = f"slot {self.slot + 1} selected"
        elif key == pg.K_t:
            self._open_chat()
        elif key in (pg.K_SPACE, pg.K_PERIOD):
            self._enqueue(0)
        elif key in arrows:
            self._arrow(arrows[key], bool(getattr(event, "mod", 0) & pg.KMOD_SHIFT))

    def _arrow(self, d: int, shift: bool) -> None:
        if self.pending is not None:
            verb, self.pending = self.pending, None
            index = self.slot if verb in (Verb.PICK, Verb.PUT) else 0
            if verb == Verb.PUT and index >= HAND_CAPACITY:
                self.message = f"you have {HAND_CAPACITY} hand slots: press 1 or 2"
                return
            self._enqueue(encode(verb, d, index))
        elif shift:
            self._enqueue(self.use_action(d))
        else:
            self._enqueue(encode(Verb.MOVE, d))

    def _enqueue(self, action: int | None) -> None:
        if action is None:
            return
        if len(self.queue) >= KEY_QUEUE_MAX:
            self.message = f"{KEY_QUEUE_MAX} keys are queued already: this one is not"
            return
        self.queue.append(action)

    # ---- talking ----
    def _names(self) -> dict[str, str]:
        names = self.raw.display_names or self.raw.possible_agents
        return dict(zip(self.raw.possible_agents, names, strict=True))

    def memory(self) -> AgentMemory:
        """What your agent knows: the high-level env's memory of it (what it saw and
        heard), or, beside random others, one kept here from what it saw."""
        if isinstance(self.env, HighLevelEnv):
            return self.env.memory(self.human)
        return self._memory

    def _open_chat(self) -> None:
        if self.chat is None:
            self.message = ("these teammates do not listen: talk with --others planner or "
                            "an LLM (local, openai:<model>, scripted)")
            return
        self.chat.open(self.renderer.pg)

    def _chat_event(self, event: Any) -> None:
        outcome = self.chat.handle_event(self.renderer.pg, event)
        if outcome is None:
            return
        what, line = outcome
        if what == "sent":
            self.teammates.hear(line)
            text = line.text if len(line.text) <= 40 else line.text[:37] + "..."
            self.message = f"to {self._audience(line)}: {text}"
        else:
            self.message = "nothing sent" if what == "empty" else "message cancelled"

    def _audience(self, line: ChatLine) -> str:
        if not line.receivers:
            return "everyone"
        names = self._names()
        return ", ".join(names[a] for a in line.receivers)

    def use_action(self, d: int) -> int | None:
        """The obvious action towards direction ``d`` (Shift + arrow), or None."""
        state = self.raw.world
        scene = state.scene
        dr, dc = DIRECTIONS[d]
        cell = state.agent_pos[self.index] + dr * scene.width + dc
        door = scene.door_at.get(cell)
        if door is not None:
            return encode(Verb.CLOSE if state.door_open[door] else Verb.OPEN, d)
        f = scene.furniture_at.get(cell)
        if f is None:
            self.message = "nothing to use there" if not is_walkable(state, cell) else ""
            return encode(Verb.MOVE, d) if is_walkable(state, cell) else None
        if scene.is_container[f] and not state.container_open[f]:
            return encode(Verb.OPEN, d)
        if state.hands[self.index]:
            return encode(Verb.PUT, d, 0)
        if state.contents[f]:
            return encode(Verb.PICK, d, min(self.slot, len(state.contents[f]) - 1))
        if scene.is_container[f]:
            return encode(Verb.CLOSE, d)
        self.message = "nothing there to pick up"
        return None

    # ---- loop ----
    def tick(self) -> bool:
        """One frame: read events, play a queued action, redraw. False once quit."""
        if self.pump_events and self.running:
            for event in self.renderer.pg.event.get():
                self.handle_event(event)
        if not self.running:
            return False
        if self.queue and self.env.agents:
            self.step(self.queue.popleft())
        elif not self.env.agents:
            self.queue.clear()  # keys of an episode that ended
        self._draw(self._status())
        self.frames += 1
        if self.renderer.closed and not self.stop_reason:
            self.stop_reason = "window closed"  # the close button, or destroyed from outside
        return self.running and not self.renderer.closed

    def _draw(self, footer: list[str]) -> None:
        renderer = self.renderer
        renderer.footer = footer
        renderer.entry = self.chat.entry if self.chat is not None else None
        renderer.sight = None if self.reveal else Sight(self.index, self.memory())
        renderer.banner = [] if self.env.agents else self._end_banner()
        renderer.render(self.raw.world, self.raw.overlay, self.raw.display_names)

    def _end_banner(self) -> list[str]:
        """The banner of an episode that is over: as ``orgteams run``'s."""
        world = self.raw.world
        return end_banner("goal complete" if world.success else "time is up", world.tick,
                          self._limit(), sum(world.progress),
                          sum(p.count for p in world.scene.goal), keys="R: new episode, Q: quit")

    def _limit(self) -> int:
        return self.raw.max_ticks or self.raw.world.scene.step_limit

    def _waiting_frame(self) -> None:
        """One frame while teammates think: the window stays drawn and takes keys (queued,
        played when they are done) and typing; closing it quits."""
        if self.pump_events:
            for event in self.renderer.pg.event.get():
                self.handle_event(event)
        full = ", full: more keys are not taken" if len(self.queue) >= KEY_QUEUE_MAX else ""
        queued = f" ({len(self.queue)} key(s) queued{full})" if self.queue else ""
        self._draw([*self._status()[:1], f"teammates are thinking...{queued}"])

    def _reset(self, seed: int) -> None:
        if self.raw.world is not None and self.frames:  # the episode before (R)
            self.episodes.append(self._episode())
        self.seed = seed
        self.env.reset(seed=seed)
        self.queue.clear()
        if not isinstance(self.env, HighLevelEnv):
            world = self.raw.world
            self._memory = AgentMemory(world.scene, self.index, self.raw.possible_agents)
            self._memory.update(world)
        if self.teammates is not None:
            self.teammates.reset(self.env, seed)

    def _episode(self) -> dict[str, Any]:
        """The current episode as it stands: seed, ticks, success and how it ended
        (``interrupted`` while it is still running: you quit)."""
        world = self.raw.world
        if self.env.agents:
            status, reason = "interrupted", self.stop_reason or "quit"
        else:
            status = "complete"
            reason = "goal met" if world.success else "max ticks"
        return {"seed": self.seed, "ticks": world.tick, "success": bool(world.success),
                "episode_status": status, "stop_reason": reason}

    def step(self, action: int) -> None:
        """Play ``action`` for the human and the others' choices, for one tick."""
        if self.teammates is not None:
            others = [a for a in self.env.agents if a != self.human]
            actions = {**self.teammates(self.env, others), self.human: f"{PRIMITIVE}{action}"}
        else:
            actions = {a: (action if a == self.human else int(self.policy(a, self.raw)))
                       for a in self.env.agents}
        _, _, _, _, infos = self.env.step(actions)
        if self._memory is not None and not isinstance(self.env, HighLevelEnv):
            self._memory.update(self.raw.world)
        self.slot = 0
        events = infos.get(self.human, {}).get("events", [])
        bad = [e for e in events if e.get("type") in ("invalid_action", "collision")]
        reason = bad[0].get("reason") or bad[0]["type"] if bad else ""
        self.message = describe_action(action) + (f" - not possible: {reason}" if bad else "")

    def run(self, max_frames: int | None = None) -> dict[str, Any]:
        """Loop until quit (or ``max_frames``); returns a summary and closes."""
        while (max_frames is None or self.frames < max_frames) and self.tick():
            pass
        if not self.stop_reason:
            self.stop_reason = "max frames" if self.running else "quit"
        summary = self.summary()
        self.close()
        return summary

    def summary(self) -> dict[str, Any]:
        """The last episode (``ticks``, ``success``, ``seed``, ``episode_status``,
        ``stop_reason``), ``episodes``: every episode played, in order, and who the
        player was (``player``, ``player_name``)."""
        last = self._episode()
        return {**last, "frames": self.frames, "quit": not self.running,
                "episodes": [*self.episodes, last], "reveal": self.reveal,
                "player": self.human, "player_name": self._names()[self.human]}

    def close(self) -> None:
        self.renderer.close()
        if self._owned:
            self.env.close()

    def _status(self) -> list[str]:
        names = self.raw.display_names or self.raw.possible_agents
        talk = ", T: talk" if self.chat is not None else ""
        role = self.raw.overlay.roles.get(self.human)  # under an organization (play --org)
        you = f"{self.human}, {role}" if role else self.human
        lines = [f"You: {names[self.index]} ({you}). H: help{talk}, Q: quit"]
        if self.chat is not None and self.chat.is_open:
            lines.append("writing: Enter sends, Esc cancels")
        elif not self.env.agents:
            world = self.raw.world
            done = "goal complete" if world.success else "time is up"
            lines.append(f"Episode over at tick {world.tick}: {done}. R: new episode")
        elif not self.reveal:
            lines.append("You see what your agent knows: faded rooms are remembered")
        elif self.pending is not None:
            lines.append(f"{self.pending.name.lower()} slot {self.slot + 1}: press an arrow")
        elif self.message:
            lines.append(self.message)
        if self.queue and len(lines) < 3:
            lines.append(f"{len(self.queue)} key(s) queued")
        return lines


def describe_action(action: int) -> str:
    """What a key did, as the player says it: slots and hands counted from 1, as the keys."""
    return decode(action).words("put hand {n} {d}", "pick up slot {n} {d}", "{verb} {d}", first=1)


def play(layout: str = "studio", task: str = "prepare_afternoon_tea", num_agents: int = 3,
         human_agent: str = "agent_0", others: str | Policy = "random", seed: int = 0,
         fps: int = 30, show_fov: bool = True, max_frames: int | None = None,
         scale: float = 1.0,
         display_names: list[str] | None = None,
         teammates: Teammates | None = None, reveal: bool = False) -> dict[str, Any]:
    """Open a window and play ``human_agent`` with the keyboard (see module docstring).

    ``others`` drives the other agents tick by tick; ``teammates`` (high-level, e.g.
    planners) replaces it, see :class:`PlaySession`. ``reveal`` shows the whole house
    instead of what your agent knows.

    Returns :meth:`PlaySession.summary` (the last episode, ``episodes``: all of them)
    when the player quits (Q, Escape, the close button) or after ``max_frames`` frames.
    """
    session = PlaySession(layout=layout, task=task, num_agents=num_agents,
                          human_agent=human_agent, others=others, teammates=teammates,
                          seed=seed, fps=fps, scale=scale, reveal=reveal,
                          show_fov=show_fov, display_names=display_names)
    return session.run(max_frames=max_frames)


__all__ = ["HELP_LINES", "KEY_QUEUE_MAX", "PlaySession", "Teammates", "describe_action", "play"]
