"""The episode log of ``orgteams play --log``: the same JSONL as ``orgteams run --log``.

Each episode played in the window (R starts the next) is one file: the first at
the path given, the next ones beside it as ``<stem>.<n><suffix>`` (``play.2.jsonl``).
A file holds the episode line (initial world, names, seed), one tick line per tick
(every agent's primitive action, the player's keys included), the communicate
records of the teammates and of the player (``agent`` is the player's agent,
``message_tokens`` counted as for every member), and the end and summary lines
(``episode_status``: ``complete``, or ``interrupted`` when the player quit before the
episode ended; ``reveal``: whether they saw the whole house), so ``orgteams replay``
shows the episode again with everyone's speech bubbles.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from orgteams.organizations.rounds import episode_log as team_log
from orgteams.organizations.rounds.episode_log import EpisodeLog
from orgteams.organizations.rounds.status import end_reason

__all__ = ["PlayLog"]


class PlayLog:
    """Writes the episodes of one play session.

    Args:
        path: The first episode's file.
        organization: The name written in the episode line (the teammates' organization).
        reveal: The player saw the whole house (``orgteams play --reveal``), not only
            what their agent knows; written in the summary line.

    Attributes:
        player_role: The player's role under the organization (``orgteams play --org``;
            the teammates keep it current), written in the summary line; None for none.
    """

    def __init__(self, path: str | Path, organization: str = "play",
                 reveal: bool = False) -> None:
        self.path, self.organization, self.reveal = Path(path), organization, reveal
        self.paths: list[Path] = []
        self._log: EpisodeLog | None = None
        self._env: Any = None
        self._write_tick: Callable[..., None] | None = None  # the open file's tick lines
        self._world: Any = None  # the latest state of the episode being written
        self._over = False  # the episode being written has ended (goal or tick limit)
        self.player_role: str | None = None

    def start(self, env: Any, seed: int | None, current_round: Callable[[], int]) -> None:
        """A new episode of ``env`` (just reset): ends the last file, opens the next."""
        self.end()
        n = len(self.paths) + 1
        path = self.path if n == 1 else self.path.with_name(
            f"{self.path.stem}.{n}{self.path.suffix}")
        self._log, self._env = EpisodeLog(path), env
        self.paths.append(path)
        team = list(env.possible_agents)
        write_tick = team_log.start_replay_log(self._log, env, seed=seed,
                                               organization=self.organization, team=team,
                                               names=list(env.display_names or team),
                                               current_round=current_round)
        self._write_tick = write_tick
        self._world = env.world  # the end line's: kept, as R resets the env before end()
        self._over = False

    def tick(self, before: Any, joint: dict[str, int], after: Any, infos: Any) -> None:
        """One tick of the episode being written (the teammates call it after every tick);
        nothing when no file is open."""
        if self._log is not None:
            self._write_tick(before, joint, after, infos)
            self._world = after
            # The env marks the tick that ends the episode (goal met, tick limit).
            self._over = any("episode" in info for info in infos.values())

    def write(self, record: dict) -> None:
        """One decision record (subscribe it to ``RoundHooks.record``)."""
        if self._log is not None:
            self._log.write(record)

    def end(self, stop_reason: str = "stopped") -> None:
        """End the current file (end and summary lines); nothing when none is open.

        An episode that had not ended (the player quit in it) is ``interrupted`` with
        ``stop_reason``; one that ended is ``complete`` (``goal met`` or ``max ticks``),
        as ``orgteams run`` writes them."""
        log, env = self._log, self._env
        if log is None:
            return
        world = self._world
        if self._over:
            status, reason = "complete", end_reason(bool(world.success), True)
        else:
            status, reason = "interrupted", stop_reason
        spoken = [r for r in log.records
                  if r.get("phase") == "communicate" and r.get("message")]
        player = env.overlay.you
        mine = [r for r in spoken if r["agent"] == player]
        team_log.end_replay_log(log, world)
        log.write({"record": "summary", "episode_status": status, "stop_reason": reason,
                   "reveal": self.reveal,
                   "ticks": world.tick, "success": bool(world.success),
                   "units_done": sum(world.progress),
                   "units_total": sum(p.count for p in world.scene.goal),
                   "player": player, "player_role": self.player_role,
                   "messages_sent": len(spoken),
                   "player_messages": len(mine),
                   "player_message_tokens": sum(r["message_tokens"] for r in mine),
                   "message_tokens": sum(r["message_tokens"] for r in spoken)})
        log.close()
        self._log = self._env = None
