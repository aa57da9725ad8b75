"""What one model call did, and what one decision did: the log schema as classes.

:class:`StepRecord` is one structured call (smolagents' ``ActionStep`` is the model):
the prompt, every raw reply, why each rejected reply was rejected, the accepted reply,
the fallback taken and why, token usage (the part served from a cache too), latency
and every HTTP request. :func:`~orgteams.agents.llm.structured.astructured_call` fills one
per call, for team members, the Critic, the Coordinator and the behaviour classifier
alike.

:class:`DecisionRecord` is a team member's decision: a step record plus who decided,
in which phase and round, and what the framework noted around the call. Its
:meth:`~DecisionRecord.log_fields` are the call fields of a decision line in the
episode log (:mod:`orgteams.organizations.rounds.episode_log`), and
:meth:`~DecisionRecord.from_log` reads such a line back, old logs included.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from orgteams.agents.backends.base import Attempt, ChatMessage, Completion, Usage

__all__ = ["DecisionRecord", "StepRecord"]


@dataclass(kw_only=True)
class StepRecord:
    """Everything about one structured model call (or a decision made without one).

    Attributes:
        model: The model that answered ("human", "planner", ...).
        prompt: The messages of the first request (corrections follow ``replies``).
        replies: Raw reply text of every attempt, in order (human input for humans).
        errors: Why each rejected reply was rejected (one per rejected reply), in the
            words the model read in its correction.
        parsed: The accepted reply's JSON object, or None when none was accepted.
        fallback: Why the caller's declared fallback was taken, or None.
        error: The backend error (``kind: reason``) that caused a fallback, if any.
        usage: Tokens of every attempt, summed.
        cached_usage: The part of ``usage`` served from a response cache (costs nothing).
        cached_calls: Attempts answered from a response cache.
        latency: Seconds spent in model calls (or waiting for the human).
        retries: Attempts after the first (each after a correction).
        attempts: Every HTTP request of the call, failed ones and structured-mode
            downgrades included (see :class:`~orgteams.agents.backends.base.Attempt`).
        repaired: How the accepted reply had to be read leniently (raw control
            characters in its JSON strings, a documented other shape), one note each;
            empty when it was read as sent.
    """

    model: str = ""
    prompt: list[ChatMessage] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    parsed: dict[str, Any] | None = None
    fallback: str | None = None
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    cached_usage: Usage = field(default_factory=Usage)
    cached_calls: int = 0
    latency: float = 0.0
    retries: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)

    def add(self, completion: Completion) -> None:
        """Count one reply: its text, tokens, latency, HTTP requests and cache hit."""
        self.replies.append(completion.text)
        self.usage += completion.usage
        self.latency += completion.latency
        self.attempts += completion.attempts
        self.model = completion.model or self.model
        if completion.cached:
            self.cached_calls += 1
            self.cached_usage += completion.usage

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict (usage as ``{"prompt_tokens", "completion_tokens"}``)."""
        return asdict(self)


_IDENTITY = ("phase", "agent", "round")


@dataclass
class DecisionRecord(StepRecord):
    """A team member's decision: its model call plus who decided, when and what was noted.

    Attributes:
        phase: ``"communicate"`` or ``"act"``.
        agent: The deciding agent id.
        round: The decision round.
        notes: Non-fatal adjustments, e.g. dropped unknown receivers.
        wall: Seconds of the whole decision, framework included.
        options: Action ids in the order the prompt listed them (letter A first), so
            position bias can be measured and a shuffled order replayed.

    The call's fields are :class:`StepRecord`'s.
    """

    phase: str
    agent: str
    round: int
    notes: list[str] = field(default_factory=list)
    wall: float = 0.0
    options: list[str] = field(default_factory=list)

    def log_fields(self) -> dict[str, Any]:
        """The fields a decision line of the episode log takes from this record: all but
        ``phase``, ``agent`` and ``round``, which the line states itself."""
        data = self.to_dict()
        for key in _IDENTITY:
            del data[key]
        return data

    @classmethod
    def from_log(cls, line: dict[str, Any]) -> DecisionRecord:
        """The record of a decision line (:meth:`log_fields` plus the line's identity).

        Fields a line lacks (logs written by older versions) keep their defaults;
        other keys of the line (``message``, ``action``...) are not the record's.
        """
        known = {f.name for f in fields(cls)}
        data = {k: v for k, v in line.items() if k in known}
        for key in ("usage", "cached_usage"):
            if isinstance(data.get(key), dict):
                data[key] = Usage(**data[key])
        data["attempts"] = [Attempt(**a) for a in data.get("attempts") or []]
        missing = [k for k in _IDENTITY if k not in data]
        if missing:
            raise ValueError(f"not a decision line: no {', '.join(missing)}")
        return cls(**data)
