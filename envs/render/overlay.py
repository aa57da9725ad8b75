"""What a team layer may ask the renderer to draw on top of the world.

The env knows nothing of LLMs or teams; a team runner fills an :class:`Overlay` (latest
message per agent, markers such as "abstained" or "idle", a round counter) and the
renderers draw it: speech bubbles, a message log panel, agent markers, and for big
teams who messaged whom in the latest round that had messages (:attr:`Overlay.this_round`).
A message is anything with the fields of :class:`Speech` (the team layer's
``TeamMessage`` is one); agents are named by the env's ``display_names``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Protocol


class Speech(Protocol):
    """What the overlay draws of a message: who said what, to whom, in which round."""

    @property
    def sender(self) -> str:
        """Agent id of the speaker."""

    @property
    def text(self) -> str:
        """What was said."""

    @property
    def round(self) -> int:
        """The decision round it was said in (older bubbles fade)."""

    @property
    def audience(self) -> tuple[str, ...]:
        """Agent ids it reached or addressed; ``()`` means everyone."""


MAX_ROUND_MESSAGES = 4096  # kept of one round (256 agents each messaging 16)
LOG_SIZE = 512  # messages the panel's log can scroll back through (two rounds of 256)


@dataclass
class Overlay:
    """Speech and markers to draw. ``log`` keeps the latest :data:`LOG_SIZE` messages
    (the panel shows the newest that fit; the mouse wheel scrolls back)."""

    latest: dict[str, Speech] = field(default_factory=dict)
    log: deque = field(default_factory=lambda: deque(maxlen=LOG_SIZE))
    markers: dict[str, str] = field(default_factory=dict)  # agent id -> "abstained" | "idle"
    caption: str = ""  # e.g. "round 4 - communicate"
    organization: str = ""  # the team's organization, shown in the panel
    roles: dict[str, str] = field(default_factory=dict)  # agent id -> role (leader, ...)
    you: str | None = None  # the agent a person plays (ringed and tagged YOU)
    said: int = 0  # messages said since the last clear (a video holds frames with new ones)
    # Every message of the latest round that had any (who messaged whom; the speakers).
    this_round: list[Speech] = field(default_factory=list)

    def say(self, message: Speech) -> None:
        """Draw ``message`` as its sender's latest bubble and add it to the log."""
        self.latest.pop(message.sender, None)  # re-inserted: the dict runs oldest to newest
        self.latest[message.sender] = message
        self.log.append(message)
        self.said += 1
        if self.this_round and self.this_round[-1].round != message.round:
            self.this_round = []
        if len(self.this_round) < MAX_ROUND_MESSAGES:
            self.this_round.append(message)

    def set_team(self, organization: str | None = None, you: str | None = None) -> None:
        """Name the team's organization in the panel and ring the agent a person plays
        (tagged YOU); None leaves that field as it is."""
        if organization is not None:
            self.organization = organization
        if you is not None:
            self.you = you

    def clear(self) -> None:
        """Forgets every message, marker, caption and role (a new episode)."""
        self.latest.clear()
        self.log.clear()
        self.markers.clear()
        self.caption = ""
        self.roles.clear()
        self.said = 0
        self.this_round = []
