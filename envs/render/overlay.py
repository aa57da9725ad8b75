"""What a team layer may ask the renderer to draw on top of the world.

The env knows nothing of LLMs; a team runner fills an :class:`Overlay` (latest
message per agent, markers such as "abstained" or "idle", a round counter) and the
renderers draw it: speech bubbles, a message log panel, agent markers, and for big
teams who messaged whom in the latest round that had messages (:attr:`Overlay.this_round`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from orgteams.envs.messages import TeamMessage

MAX_ROUND_MESSAGES = 4096  # kept of one round (256 agents each messaging 16)


@dataclass
class Overlay:
    """Speech and markers to draw. ``log`` keeps the latest ``log_size`` messages."""

    latest: dict[str, TeamMessage] = field(default_factory=dict)
    log: deque = field(default_factory=lambda: deque(maxlen=12))
    markers: dict[str, str] = field(default_factory=dict)  # agent id -> "abstained" | "idle"
    caption: str = ""  # e.g. "round 4 - communicate"
    organization: str = ""  # the team's organization, shown in the panel
    roles: dict[str, str] = field(default_factory=dict)  # agent id -> role (leader, ...)
    you: str | None = None  # the agent a person plays (ringed and tagged YOU)
    said: int = 0  # messages said since the last clear (a video holds frames with new ones)
    # Every message of the latest round that had any (who messaged whom; the speakers).
    this_round: list[TeamMessage] = field(default_factory=list)

    def say(self, message: TeamMessage) -> None:
        """Draw ``message`` as its sender's latest bubble and add it to the log."""
        self.latest.pop(message.sender, None)  # re-inserted: the dict runs oldest to newest
        self.latest[message.sender] = message
        self.log.append(message)
        self.said += 1
        if self.this_round and self.this_round[-1].round != message.round:
            self.this_round = []
        if len(self.this_round) < MAX_ROUND_MESSAGES:
            self.this_round.append(message)

    def clear(self) -> None:
        self.latest.clear()
        self.log.clear()
        self.markers.clear()
        self.caption = ""
        self.roles.clear()
        self.said = 0
        self.this_round = []
