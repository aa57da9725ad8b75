"""Replay an episode from its JSONL log: in a window, to a video, or just checked.

A log written by the team runner (``orgteams run --log``, sweeps, ``run_episode``)
holds the whole initial world, every tick's joint primitive action, the whole world
again wherever a shock changed it outside the dynamics (``world`` lines) and a digest
of the final state (see :mod:`orgteams.organizations.team_log`). Replaying applies the
pure ``transition`` tick by tick, so it needs no LLM, no API key and no asset
files, and it is exact: the final state must match the logged digest, or the
replay says where it went wrong. Messages spoken in each round are shown as speech
bubbles, as they were live.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgteams.envs.dynamics import transition
from orgteams.envs.errors import UserError
from orgteams.envs.messages import TeamMessage
from orgteams.envs.overlay import Overlay
from orgteams.envs.state import HouseholdState
from orgteams.organizations.team_log import read_log, state_digest


@dataclass
class ReplayResult:
    """What a replay did and whether it matched the log."""

    ticks: int  # ticks replayed
    success: bool  # the goal holds in the last replayed state
    matches: bool | None  # final state == the logged digest; None: the log has no end line
    stopped: bool = False  # the window was closed before the end
    frames: int = 0  # video frames written
    problem: str = ""  # why it does not match (or why the log ends early)


@dataclass
class _Episode:
    header: dict
    ticks: list[dict]  # tick and world lines, in log order
    speech: dict[int, list[dict]]  # round -> its communicate records with a message
    abstained: dict[int, list[str]]  # round -> agents that abstained
    end: dict | None
    roles: dict[int, dict[str, str]]  # round -> agent -> role (badges)
    diverged: bool = False  # the replay differed from the log before a world line


def _load(path: Path) -> _Episode:
    if path.is_dir():  # a run folder under runs/ (a killed run left only the .partial)
        path = next((path / n for n in ("episode.jsonl", "episode.jsonl.partial")
                     if (path / n).is_file()), path / "episode.jsonl")
    if not path.is_file():
        raise FileNotFoundError(f"no episode log at {path}")
    header, end, ticks = None, None, []
    speech: dict[int, list[dict]] = defaultdict(list)
    abstained: dict[int, list[str]] = defaultdict(list)
    roles: dict[int, dict[str, str]] = defaultdict(dict)
    for r in read_log(path):
        kind = r.get("record")
        if kind == "episode":
            header = r
        elif kind in ("tick", "world"):
            ticks.append(r)
        elif kind == "end":
            end = r
        elif kind is None and r.get("phase") == "communicate":
            if r.get("role"):
                roles[int(r["round"])][r["agent"]] = r["role"]
            if r.get("message"):
                speech[int(r["round"])].append(r)
            if r.get("abstained"):
                abstained[int(r["round"])].append(r["agent"])
    if header is None:
        raise UserError(f"{path}: no episode line, so it cannot be replayed (logs written "
                        "before replay support, or not by the team runner); run the episode "
                        "again with --log to get a replayable log")
    return _Episode(header, ticks, speech, abstained, end, roles)


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
    names = episode.header["names"]
    owned = renderer is None
    recorder = None
    if owned and (render is not None or video is not None):
        from orgteams.envs.rendering import PygameRenderer

        title = f"orgteams replay: {episode.header.get('organization', '')} - {Path(log_path).name}"
        renderer = PygameRenderer(render or "rgb_array", fps=fps, title=title,
                                  **(render_options or {}))
    if video is not None:
        from orgteams.envs.video import VideoRecorder

        recorder = VideoRecorder(video, fps=fps)
    overlay = Overlay(organization=episode.header.get("organization") or "")
    frames = 0
    try:
        while True:
            state, stopped = _play(episode, log_path, renderer, recorder, overlay)
            if recorder is not None:  # the video holds the first pass only
                frames, recorder = recorder.close(), None
            if stopped or not hold or renderer is None or renderer.render_mode != "human":
                break
            done = "goal complete" if state.success else "goal not met"
            banner = [f"Replay over: {done}", f"tick {state.tick}", "Q to close, R to replay"]
            if renderer.hold(state, overlay, names, banner, can_replay=True) != "replay":
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
    state = HouseholdState.from_dict(episode.header["initial_state"])
    agents, names = episode.header["agents"], episode.header["names"]
    overlay.clear()
    shown_round = None

    def show() -> bool:
        """Draw the state; False when the window was closed."""
        if renderer is None:
            return True
        frame = renderer.render(state, overlay, names)  # None in a window
        if recorder is not None and not renderer.closed:
            if frame is None:
                from orgteams.envs.rendering import to_array

                frame = to_array(renderer.pg, renderer.draw(state, overlay, names))
            recorder.add_frame(frame)
        return not renderer.closed

    show()
    for t in episode.ticks:
        if t.get("record") == "world":  # a shock changed the world between ticks
            if t["tick"] != state.tick:
                raise UserError(f"{log_path}: world line at tick {t['tick']} follows tick "
                                f"{state.tick}; the log is out of sequence")
            if state_digest(state) != t.get("before"):
                episode.diverged = True
            state = HouseholdState.from_dict(t["state"])
            continue
        if t["tick"] != state.tick + 1:
            raise UserError(f"{log_path}: tick line {t['tick']} follows tick "
                            f"{state.tick}; the log is out of sequence")
        if t["round"] != shown_round:
            shown_round = t["round"]
            _show_round(overlay, shown_round, episode, agents)
        state, _ = transition(state, t["actions"])
        if not show():
            return state, True
    return state, False


def _show_round(overlay: Overlay, round_: int, episode: _Episode, agents: list[str]) -> None:
    overlay.caption = f"round {round_} (replay)"
    overlay.markers.clear()
    overlay.roles = dict(episode.roles.get(round_) or overlay.roles)
    for agent in episode.abstained.get(round_, []):
        overlay.markers[agent] = "abstained"
    for r in episode.speech.get(round_, []):
        receivers = tuple(r.get("delivered") or [a for a in agents if a != r["agent"]])
        overlay.say(TeamMessage(r["agent"], receivers, r["message"], round=round_,
                                delivered=receivers))


def _verdict(state: HouseholdState, episode: _Episode, stopped: bool, frames: int
             ) -> ReplayResult:
    result = ReplayResult(ticks=state.tick, success=state.success, matches=None,
                          stopped=stopped, frames=frames)
    end = episode.end
    if stopped:
        result.problem = f"stopped at tick {state.tick} (window closed)"
    elif end is None:
        result.problem = (f"the log ends at tick {state.tick} without an end line (the run "
                          "was cut short); replayed what there is")
    elif end["tick"] != state.tick:
        result.matches = False
        result.problem = (f"the log's episode ended at tick {end['tick']}, the replay at "
                          f"tick {state.tick}: tick lines are missing")
    else:
        result.matches = state_digest(state) == end["digest"] and not episode.diverged
        if not result.matches:
            result.problem = ("the final state differs from the logged one: the log was "
                              "edited, or the dynamics changed since it was written")
    return result
