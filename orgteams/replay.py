"""Replay an episode from its JSONL log: in a window, to a video, or just checked.

A log written by the team runner (``orgteams run --log``, sweeps, ``run_episode``)
holds the whole initial world, every tick's joint primitive action, the whole world
again wherever a shock changed it outside the dynamics (``world`` lines) and a digest
of the final state (see :mod:`orgteams.organizations.rounds.episode_log`). Replaying applies the
pure ``transition`` tick by tick, so it needs no LLM, no API key and no asset
files, and it is exact: the final state must match the logged digest, or the
replay says where it went wrong. Messages spoken in each round are shown as speech
bubbles, as they were live.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from orgteams.agents.messages import TeamMessage
from orgteams.agents.records import MessageLine
from orgteams.envs.core.actions import HAND_CAPACITY, NUM_ACTIONS
from orgteams.envs.core.dynamics import transition
from orgteams.envs.core.state import HouseholdState, is_walkable
from orgteams.envs.render.overlay import Overlay
from orgteams.errors import UserError
from orgteams.organizations.rounds.episode_log import (
    EndLine,
    EpisodeLine,
    PlaySummary,
    TickLine,
    WorldLine,
    read_log_lines,
    state_digest,
)
from orgteams.organizations.rounds.episode_summary import EpisodeSummary

SUMMARY_FACTS = ("ticks", "success", "units_done", "units_total")
"""The world facts of a log's summary line that a replay recomputes and checks."""


@dataclass
class ReplayResult:
    """What a replay did and whether it matched the log."""

    ticks: int  # ticks replayed
    success: bool  # the goal holds in the last replayed state
    matches: bool | None  # final state == the logged digest; None: the log has no end line
    stopped: bool = False  # the window was closed before the end
    frames: int = 0  # video frames written
    problem: str = ""  # why it does not match (or why the log ends early)
    outcome: str = ""  # how the episode ended, in words (see episode_outcome)


def episode_outcome(ticks: int, success: bool, summary: EpisodeSummary | PlaySummary | None,
                    cut_short: bool) -> str:
    """How a logged episode ended: ``goal complete``, ``goal not met``, or ``interrupted
    at tick T (why)`` for one stopped early (its summary's ``episode_status``) or cut
    short (no end line: the run was killed)."""
    if cut_short:
        return f"interrupted at tick {ticks} (the log ends there)"
    recorded = summary is not None and summary.has("episode_status")
    status = summary.episode_status if recorded else "complete"
    if status != "complete":
        why = summary.stop_reason if summary.has("stop_reason") else None
        return f"{status} at tick {ticks}" + (f" ({why})" if why else "")
    return "goal complete" if success else "goal not met"


@dataclass
class _Line:
    """A tick or world line of the log, checked: its line number and, for a world line,
    the state it loads."""

    number: int
    line: TickLine | WorldLine
    state: HouseholdState | None = None


@dataclass
class _Episode:
    header: EpisodeLine
    start: HouseholdState  # the initial world, checked
    ticks: list[_Line]  # tick and world lines, in log order
    speech: dict[int, list[TeamMessage]]  # round -> the messages said in it
    abstained: dict[int, list[str]]  # round -> agents that abstained
    end: EndLine | None
    roles: dict[int, dict[str, str]]  # round -> agent -> role (badges)
    summary: EpisodeSummary | PlaySummary | None = None  # the summary line, if it ended
    diverged: bool = False  # the replay differed from the log before a world line


def _load(path: Path) -> _Episode:
    if path.is_dir():  # a run folder under runs/ (a killed run left only the .partial)
        path = next((path / n for n in ("episode.jsonl", "episode.jsonl.partial")
                     if (path / n).is_file()), path / "episode.jsonl")
    if not path.is_file():
        partial = path.with_name(path.name + ".partial")
        if partial.is_file():
            raise FileNotFoundError(f"no episode log at {path}, but {partial} holds the rounds "
                                    f"of a run that did not finish: orgteams replay {partial}")
        raise FileNotFoundError(f"no episode log at {path}")
    header, start, end, summary, ticks = None, None, None, None, []
    speech: dict[int, list[TeamMessage]] = defaultdict(list)
    abstained: dict[int, list[str]] = defaultdict(list)
    roles: dict[int, dict[str, str]] = defaultdict(dict)
    for number, r in read_log_lines(path):
        where = f"{path}: line {number}"
        if isinstance(r, EpisodeLine):
            header, start = r, _checked_header(r, where)
        elif isinstance(r, TickLine):
            ticks.append(_Line(number, r))
        elif isinstance(r, WorldLine):
            _int_field(r.tick, "tick", where)
            ticks.append(_Line(number, r, _checked_state(r.state, f"{where}: field 'state'")))
        elif isinstance(r, EndLine):
            end = r
        elif isinstance(r, EpisodeSummary | PlaySummary):
            summary = r
        elif isinstance(r, MessageLine):
            round_ = _int_field(r.round, "round", where)
            if r.role:
                roles[round_][str(r.agent)] = str(r.role)
            if r.message is not None and r.message.text:
                speech[round_].append(r.message)
            if r.abstained:
                abstained[round_].append(str(r.agent))
    if header is None or start is None:
        raise UserError(f"{path}: no episode line, so it cannot be replayed (logs written "
                        "before replay support, or not by the team runner); run the episode "
                        "again with --log to get a replayable log")
    agents = len(header.agents)
    for line in ticks:
        if line.state is None:
            _check_tick(line, agents, f"{path}: line {line.number}")
        elif len(line.state.agent_pos) != agents:
            raise UserError(f"{path}: line {line.number}: field 'state' has "
                            f"{len(line.state.agent_pos)} agents, the episode {agents}")
    return _Episode(header, start, ticks, speech, abstained, end, roles, summary)


def _int_field(value: Any, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UserError(f"{where}: field {name!r} must be an integer >= 0, got {value!r}")
    return value


def _checked_header(header: EpisodeLine, where: str) -> HouseholdState:
    """The initial world of an episode line, once its fields hold together."""
    agents, names = header.agents, header.names
    if not isinstance(agents, list) or not agents or not all(
            isinstance(a, str) for a in agents):
        raise UserError(f"{where}: field 'agents' must be a list of agent ids, got {agents!r}")
    if not isinstance(names, list) or len(names) != len(agents) or not all(
            isinstance(n, str) for n in names):
        raise UserError(f"{where}: field 'names' must be a list of {len(agents)} names, "
                        f"got {names!r}")
    state = _checked_state(header.initial_state, f"{where}: field 'initial_state'")
    if len(state.agent_pos) != len(agents):
        raise UserError(f"{where}: field 'initial_state' has {len(state.agent_pos)} agents, "
                        f"field 'agents' {len(agents)}")
    return state


def _checked_state(data: Any, where: str) -> HouseholdState:
    """A logged world state, refused in one line when it is not one the dynamics can step
    (every object in one place, agents on distinct walkable cells, sizes that match the
    layout): a hand-edited log must not fail deep inside ``transition``."""
    if not isinstance(data, dict):
        raise UserError(f"{where}: must be a world state (a mapping), got "
                        f"{type(data).__name__}")
    for name in ("agent_pos", "hands", "contents", "container_open", "door_open"):
        if not isinstance(data.get(name), list):
            raise UserError(f"{where}: field {name!r} must be a list, got "
                            f"{data.get(name)!r}")
    if not all(isinstance(p, list) and len(p) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in p)
            for p in data["agent_pos"]):
        raise UserError(f"{where}: field 'agent_pos' must be [row, column] pairs of integers")
    try:
        state = HouseholdState.from_dict(data)
    except UserError as exc:  # the layout (its message names the field)
        raise UserError(f"{where}: {exc}") from None
    except KeyError as exc:
        raise UserError(f"{where}: field {exc.args[0]!r} is missing") from None
    except (TypeError, ValueError, IndexError, AttributeError) as exc:
        raise UserError(f"{where}: not a world state ({type(exc).__name__}: {exc})") from None
    problem = _state_problem(state, data)
    if problem:
        raise UserError(f"{where}: {problem}")
    return state


def _state_problem(state: HouseholdState, data: dict) -> str | None:
    """What makes ``state`` impossible, or None."""
    scene, layout = state.scene, state.scene.layout
    rows, cols = layout.height, layout.width
    if isinstance(state.tick, bool) or not isinstance(state.tick, int) or state.tick < 0:
        return f"field 'tick' must be an integer >= 0, got {state.tick!r}"
    n = len(state.agent_pos)
    if n != scene.num_agents or len(state.hands) != n:
        return (f"{n} agent cells and {len(state.hands)} hands for a scene of "
                f"{scene.num_agents} agents")
    for (r, c), cell in zip(data["agent_pos"], state.agent_pos):
        if r >= rows or c >= cols or not is_walkable(state, cell):
            return f"field 'agent_pos': agent at [{r}, {c}] is not on a walkable cell"
    if len(set(state.agent_pos)) != n:
        return "field 'agent_pos': two agents share a cell"
    furniture, doors = len(layout.furniture), len(layout.doors)
    if len(state.contents) != furniture or len(state.container_open) != furniture:
        return (f"fields 'contents' and 'container_open' need one entry per furniture "
                f"({furniture})")
    if len(state.door_open) != doors:
        return f"field 'door_open' needs one entry per door ({doors})"
    if not all(isinstance(b, bool) for b in (*state.container_open, *state.door_open)):
        return "fields 'container_open' and 'door_open' must hold true or false"
    placed = [o for c in state.contents for o in c] + [o for h in state.hands for o in h]
    if not all(isinstance(o, int) and not isinstance(o, bool) for o in placed) or sorted(
            placed) != list(range(len(scene.objects))):
        return (f"fields 'hands' and 'contents' must hold each of the {len(scene.objects)} "
                "objects exactly once")
    if any(len(h) > HAND_CAPACITY for h in state.hands):
        return f"field 'hands': an agent holds more than {HAND_CAPACITY} objects"
    if any(len(c) > cap for c, cap in zip(state.contents, scene.capacity)):
        return "field 'contents': a furniture holds more than its capacity"
    return None


def _check_tick(line: _Line, agents: int, where: str) -> None:
    """A tick line's fields: tick and round integers, one valid action id per agent."""
    _int_field(line.line.tick, "tick", where)
    _int_field(line.line.round, "round", where)
    actions = line.line.actions
    if not isinstance(actions, list) or len(actions) != agents:
        raise UserError(f"{where}: field 'actions' must be a list of {agents} action ids, "
                        f"got {actions!r}")
    for a in actions:
        if isinstance(a, bool) or not isinstance(a, int) or not 0 <= a < NUM_ACTIONS:
            raise UserError(f"{where}: field 'actions': {a!r} is not an action id (0 to "
                            f"{NUM_ACTIONS - 1})")


def replay(log_path: str | Path, *, render: str | None = "human",
           video: str | Path | None = None, fps: float = 10,
           render_options: dict[str, Any] | None = None, hold: bool = True,
           renderer: Any = None) -> ReplayResult:
    """Replay the episode in ``log_path`` (a JSONL log, or a run folder holding
    ``episode.jsonl``).

    Args:
        render: ``"human"`` for a window (close it to stop; Space pauses, N steps,
            +/- change the speed), None for no window.
        video: Also write every tick to this .mp4/.gif.
        fps: Ticks per second in the window and the video.
        render_options: Passed to the renderer (``cell_size``, ``show_fov``, ``scale``...).
        hold: In a window, keep the last frame up until Q (close) or R (replay again).
        renderer: A human-window renderer to reuse (``orgteams run`` replays in its
            own window); it is not closed here.

    Raises:
        FileNotFoundError: No file at ``log_path``.
        UserError: The log has no episode line or a tick out of sequence.
    """
    episode = _load(Path(log_path))
    names = episode.header.names
    owned = renderer is None
    recorder = None
    if owned and (render is not None or video is not None):
        from orgteams.envs.render.renderer import PygameRenderer

        title = f"orgteams replay: {episode.header.organization or ''} - {Path(log_path).name}"
        renderer = PygameRenderer(render or "rgb_array", fps=fps, title=title,
                                  **(render_options or {}))
    if video is not None:
        from orgteams.envs.render.video import VideoRecorder

        recorder = VideoRecorder(video, fps=fps)
    overlay = Overlay(organization=episode.header.organization or "")
    frames = 0
    try:
        while True:
            state, stopped = _play(episode, log_path, renderer, recorder, overlay)
            if recorder is not None:  # the video holds the first pass only
                frames, recorder = recorder.close(), None
            if stopped or not hold or renderer is None or renderer.render_mode != "human":
                break
            done = episode_outcome(state.tick, state.success, episode.summary,
                                   episode.end is None)
            banner = [f"Replay over: {done}", f"tick {state.tick}", "Q to close, R to replay"]
            try:
                again = renderer.hold(state, overlay, names, banner, can_replay=True)
            except KeyboardInterrupt:  # at the held last frame: closes it, as Q does
                again = "close"
            if again != "replay":
                break
    finally:
        if recorder is not None:
            recorder.close()
        if renderer is not None and owned:
            renderer.close()
    return _verdict(state, episode, stopped, frames)
def _play(episode: _Episode, log_path, renderer, recorder, overlay: Overlay
          ) -> tuple[HouseholdState, bool]:
    """Apply the logged ticks from the initial state, drawing each; (last state, stopped)."""
    state = episode.start
    agents, names = episode.header.agents, episode.header.names
    overlay.clear()
    shown_round = None

    def show() -> bool:
        """Draw the state; False when the window was closed."""
        if renderer is None:
            return True
        frame = renderer.render(state, overlay, names)  # None in a window
        if recorder is not None and not renderer.closed:
            if frame is None:
                from orgteams.envs.render.renderer import to_array

                frame = to_array(renderer.pg, renderer.draw(state, overlay, names))
            recorder.add_frame(frame)
        return not renderer.closed

    show()
    for line in episode.ticks:
        t = line.line
        if line.state is not None:  # a world line: a shock changed the world between ticks
            if t.tick != state.tick:
                raise UserError(f"{log_path}: world line at tick {t.tick} follows tick "
                                f"{state.tick}; the log is out of sequence")
            if state_digest(state) != t.before:
                episode.diverged = True
            state = line.state
            continue
        if t.tick != state.tick + 1:
            raise UserError(f"{log_path}: tick line {t.tick} follows tick "
                            f"{state.tick}; the log is out of sequence")
        if t.round != shown_round:
            shown_round = t.round
            _show_round(overlay, shown_round, episode, agents)
        state, _ = transition(state, t.actions)
        if not show():
            return state, True
    return state, False


def _show_round(overlay: Overlay, round_: int, episode: _Episode, agents: list[str]) -> None:
    overlay.caption = f"round {round_} (replay)"
    overlay.markers.clear()
    overlay.roles = dict(episode.roles.get(round_) or overlay.roles)
    for agent in episode.abstained.get(round_, []):
        overlay.markers[agent] = "abstained"
    for message in episode.speech.get(round_, []):
        if not message.delivered:  # as live: a message that reached nobody shows to all
            others = tuple(a for a in agents if a != message.sender)
            message = replace(message, receivers=others, delivered=others)
        overlay.say(message)


def _verdict(state: HouseholdState, episode: _Episode, stopped: bool, frames: int
             ) -> ReplayResult:
    end = episode.end
    result = ReplayResult(ticks=state.tick, success=state.success, matches=None,
                          stopped=stopped, frames=frames,
                          outcome=episode_outcome(state.tick, state.success, episode.summary,
                                                  end is None))
    if stopped:
        result.outcome = f"replay stopped at tick {state.tick} (window closed)"
        result.problem = f"stopped at tick {state.tick} (window closed)"
    elif end is None:
        result.problem = (f"the log ends at tick {state.tick} without an end line (the run "
                          "was cut short); replayed what there is")
    elif end.tick != state.tick:
        result.matches = False
        result.problem = (f"the log's episode ended at tick {end.tick}, the replay at "
                          f"tick {state.tick}: tick lines are missing")
    else:
        result.matches = state_digest(state) == end.digest and not episode.diverged
        if not result.matches:
            result.problem = ("the final state differs from the logged one: the log was "
                              "edited, or the dynamics changed since it was written")
        else:
            wrong = _summary_disagreements(state, episode.summary)
            if wrong:
                result.matches = False
                result.problem = (f"the log's summary disagrees with the replay: "
                                  f"{'; '.join(wrong)} (the summary was edited)")
    return result


def _summary_disagreements(state: HouseholdState,
                           summary: EpisodeSummary | PlaySummary | None) -> list[str]:
    """``"ticks: the summary says 1, the replay 40"`` for each fact of
    :data:`SUMMARY_FACTS` the summary line gets wrong or lacks (none when there is no
    summary line: a run cut short writes none)."""
    if summary is None:
        return []
    replayed = {"ticks": state.tick, "success": state.success,
                "units_done": sum(state.progress),
                "units_total": sum(p.count for p in state.scene.goal)}
    # ticks and success are in every summary line; goal units not in older play logs
    facts = [k for k in replayed if summary.has(k) or k in ("ticks", "success")]

    def said(key: str) -> Any:
        return getattr(summary, key) if summary.has(key) else None

    return [f"{k}: the summary says {said(k) if summary.has(k) else 'nothing'!r}, the "
            f"replay {replayed[k]!r}" for k in facts if said(k) != replayed[k] or
            isinstance(said(k), bool) != isinstance(replayed[k], bool)]
