"""The small structured messages planner agents speak (and LLM agents may read).

A :class:`Message` has a ``kind`` and a ``content`` dict; :meth:`Message.render`
gives one short English sentence, which is what token counts are measured on.

=========  ================================================  ==================================
kind       content                                           rendered
=========  ================================================  ==================================
claim      ``{"object": "cupcake_2", "target": "coffee_table"}``  "claim cupcake_2 -> coffee_table"
           or ``{"room": "kitchen"}`` (exploring it)         "claim explore kitchen"
release    ``{"object": "cupcake_2"}`` or ``{"room": ...}``   "release cupcake_2"
found      ``{"object": "apple_1", "location": "fridge"}``    "seen apple_1 in fridge"
assign     ``{"agent": "agent_1", "action": "grab:cupcake_2", "agent_1: grab cupcake_2 ->
           "target": "coffee_table"}`` (target optional)    coffee_table"
done       ``{"object": "cupcake_2", "target": "coffee_table"}``  "done cupcake_2 -> coffee_table"
text       ``{}``                                            the ``text`` field
=========  ================================================  ==================================
"""

from __future__ import annotations

from dataclasses import dataclass, field

MESSAGE_KINDS = ("claim", "release", "found", "assign", "done", "text")
EVERYONE = "everyone"


@dataclass(frozen=True)
class Message:
    """One message. ``receivers`` is a tuple of agent names or ``"everyone"``."""

    sender: str
    receivers: tuple[str, ...] | str
    kind: str
    content: dict = field(default_factory=dict, hash=False)
    text: str = ""

    def __post_init__(self) -> None:
        if self.kind not in MESSAGE_KINDS:
            raise ValueError(f"message kind {self.kind!r} must be one of "
                             f"{', '.join(MESSAGE_KINDS)}")
        if isinstance(self.receivers, str) and self.receivers != EVERYONE:
            raise ValueError(f"receivers must be a tuple of agent names or {EVERYONE!r}, "
                             f"got {self.receivers!r}")

    def render(self, names: dict[str, str] | None = None) -> str:
        """A short English sentence (what an LLM would have said).

        ``names``: agent id -> display name, to name an assignee as the team does
        (``Bob: grab cupcake_2``); ids are kept without it.
        """
        c = self.content
        if self.kind == "text":
            return self.text
        if self.kind == "found":
            return f"seen {c['object']} in {c['location']}"
        if self.kind == "assign":
            what = c["action"].replace(":", " ", 1)
            tail = f" -> {c['target']}" if c.get("target") else ""
            return f"{(names or {}).get(c['agent'], c['agent'])}: {what}{tail}"
        thing = c.get("object") or f"explore {c.get('room', '')}"
        tail = f" -> {c['target']}" if c.get("target") else ""
        return f"{self.kind} {thing}{tail}"

    def addressed_to(self, agent: str) -> bool:
        return self.receivers == EVERYONE or agent in self.receivers

    def to_dict(self) -> dict:
        return {"sender": self.sender, "receivers": self.receivers if isinstance(
            self.receivers, str) else list(self.receivers), "kind": self.kind,
            "content": dict(self.content), "text": self.render()}


__all__ = ["EVERYONE", "MESSAGE_KINDS", "Message"]
