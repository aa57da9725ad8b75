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

:class:`MessageLine` and :class:`ActionLine` are the decision lines themselves: a
communicate-phase turn (one line per message it sends, holding the stamped
:class:`~orgteams.agents.messages.TeamMessage`, or one for silence) and an act-phase
decision (its :class:`~orgteams.envs.highlevel.space.ActionId` and what its plan did),
each holding its :class:`DecisionRecord`. The round loop makes them, the episode log
writes their ``to_dict()`` and reads them back with :func:`decision_line`; the other
kinds of line are in :mod:`orgteams.organizations.rounds.episode_log`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from orgteams.agents.backends.base import Attempt, ChatMessage, Completion, Usage
from orgteams.agents.messages import EVERYONE, TeamMessage
from orgteams.envs.highlevel.space import ActionId

__all__ = ["ActionLine", "DecisionLine", "DecisionRecord", "MessageLine", "StepRecord",
           "decision_line"]


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
    usage: Usage = Usage()  # frozen: one shared zero, replaced by += (not changed)
    cached_usage: Usage = Usage()
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

    @classmethod
    def fresh(cls, phase: str, agent: str, round: int, model: str,
              parsed: dict[str, Any] | None = None) -> DecisionRecord:
        """``DecisionRecord(phase, agent, round, model=model, parsed=parsed)``: every
        other field at its default. Made by stores, without the 20-parameter
        ``__init__``'s argument binding (half its cost): planners make one a turn, ~434
        a round at 256 agents. Equal, same fields in the same order
        (tests/agents/test_records.py checks it against ``__init__``)."""
        record = object.__new__(cls)
        record.model = model  # __init__'s order: StepRecord's fields, then this class's
        record.prompt = []
        record.replies = []
        record.errors = []
        record.parsed = parsed
        record.fallback = None
        record.error = None
        record.usage = StepRecord.usage  # the shared frozen zeros __init__ uses
        record.cached_usage = StepRecord.cached_usage
        record.cached_calls = 0
        record.latency = 0.0
        record.retries = 0
        record.attempts = []
        record.repaired = []
        record.phase = phase
        record.agent = agent
        record.round = round
        record.notes = []
        record.wall = 0.0
        record.options = []
        return record

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


# Fields of a decision's call that only the first line of a decision carries (a turn
# that sends several messages writes one line per message; the later ones omit them).
CALL_ONLY = ("usage", "cached_usage", "prompt", "replies", "attempts")


@dataclass(kw_only=True)
class DecisionLine:
    """A decision line of the episode log: a member's decision and its model call.

    Attributes:
        round, agent, phase: Who decided when, as the round loop asked (its call's
            record says the same for every member of ours).
        call: The decision record (the call's fields of the line).
        tick: Env ticks elapsed when the line was written.
        kind: The stage kind (``message``, ``vote``, ...) or ``action``.
        thoughts: The member's stated reasoning (never sent).
        unused: Written after the episode stopped: the decision was never used, and
            the line holds only who decided, the kind and the call.
        extra: Keys of a line this version does not know (a newer writer's), kept.
    """

    round: int
    agent: str
    phase: str
    call: DecisionRecord
    tick: int | None = None
    kind: str | None = None
    thoughts: str = ""
    unused: bool = False
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    def _call_fields(self) -> dict[str, Any]:
        return self.call.log_fields()


@dataclass(kw_only=True)
class MessageLine(DecisionLine):
    """A communicate-phase line: one per message a turn sends, or one for a silent turn.

    Attributes:
        stage: Index of the communicate stage.
        role: The speaker's role then (chosen, claimed or assigned), or None.
        abstained: Whether it abstained (None where abstaining was not allowed).
        vote: The agent id it voted for (vote stages), or None.
        message: The message this line records, stamped and routed (its text,
            kind, receivers and ``delivered``), or None for a silent turn.
        dropped: Receivers it named that no channel reaches.
        message_tokens: Tokens of the message text (the episode's tokenizer; 0 for
            silence; None in a line that lacks them, counted by the metrics then).
        first: The turn's first line: it carries the call's prompt, replies, usage and
            HTTP attempts (a later message's line has them empty and omits them).
    """

    stage: int | None = None
    role: str | None = None
    abstained: bool | None = None
    vote: str | None = None
    message: TeamMessage | None = None
    dropped: list[str] = field(default_factory=list)
    message_tokens: int | None = None
    first: bool = True

    @classmethod
    def sent(cls, call: DecisionRecord, message: TeamMessage, **fields: Any) -> MessageLine:
        """A line for one of a turn's messages; its call is ``call`` (the first) or,
        with ``first=False``, a copy without :data:`CALL_ONLY` fields."""
        if not fields.get("first", True):
            call = cls.later_call(call)
        return cls(call=call, message=message, phase="communicate", **fields)

    @staticmethod
    def later_call(call: DecisionRecord) -> DecisionRecord:
        """The call of a turn's later line (``first=False``): a copy of ``call`` without
        its :data:`CALL_ONLY` fields."""
        return replace(call, prompt=[], replies=[], usage=Usage(), cached_usage=Usage(),
                       attempts=[])

    def to_dict(self) -> dict[str, Any]:
        """The line's JSON object, keys in the order the log writes them."""
        head = {"round": self.round, "tick": self.tick, "agent": self.agent,
                "phase": self.phase, "stage": self.stage, "kind": self.kind}
        call = self._call_fields()
        if self.unused:
            return {**head, "message": None, "thoughts": self.thoughts, **call, **self.extra}
        if not self.first:
            call = {k: v for k, v in call.items() if k not in CALL_ONLY}
        line = {**head, "role": self.role, "abstained": self.abstained, "vote": self.vote,
                "thoughts": self.thoughts, **call}
        m = self.message
        if m is None:
            line.update(message=None, receivers=[], delivered=[],
                        message_tokens=self.message_tokens)
        else:
            line.update(message=m.text, message_kind=m.kind, receivers=m.receivers_json(),
                        delivered=list(m.delivered or ()), dropped=list(self.dropped),
                        message_tokens=self.message_tokens)
        return {**line, **self.extra}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MessageLine:
        """The line of a JSON object (old logs: missing keys take their defaults).

        Raises:
            ValueError, TypeError: Fields that do not make a communicate line.
        """
        call = DecisionRecord.from_log(data)
        unused = "receivers" not in data and "role" not in data
        text = data.get("message")
        message = None
        if isinstance(text, str):
            receivers = data.get("receivers")
            message = TeamMessage(
                call.agent, receivers if receivers == EVERYONE else tuple(receivers or ()),
                text, data.get("message_kind") or "text", round=call.round,
                stage=data.get("stage") or 0, delivered=tuple(data.get("delivered") or ()),
                role=data.get("role"), abstained=bool(data.get("abstained")))
        known = _LINE_KEYS | _CALL_KEYS | {"stage", "role", "abstained", "vote", "message",
                                            "message_kind", "receivers", "delivered",
                                            "dropped", "message_tokens"}
        return cls(round=call.round, agent=call.agent, phase=call.phase, call=call,
                   tick=data.get("tick"), kind=data.get("kind"),
                   thoughts=data.get("thoughts") or "", unused=unused,
                   stage=data.get("stage"), role=data.get("role"),
                   abstained=data.get("abstained"), vote=data.get("vote"), message=message,
                   dropped=list(data.get("dropped") or ()),
                   message_tokens=data.get("message_tokens"),
                   first=unused or "prompt" in data or "usage" in data,
                   extra={k: v for k, v in data.items() if k not in known})


@dataclass(kw_only=True)
class ActionLine(DecisionLine):
    """An act-phase line: the action a member chose and what its plan did this round.

    Attributes:
        action: The action played (after the fallback rule), or None (unused).
        status: The plan's status after the env step (``running``, ``done``, ...).
        failure_reason: Why the plan failed, if it did.
        events: The names of the env events of the agent this round.
        ticks_elapsed: Ticks the round lasted.
    """

    kind: str | None = "action"
    action: ActionId | None = None
    status: str | None = None
    failure_reason: str | None = None
    events: list[str] = field(default_factory=list)
    ticks_elapsed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The line's JSON object, keys in the order the log writes them."""
        head = {"round": self.round, "tick": self.tick, "agent": self.agent,
                "phase": self.phase, "kind": self.kind, "action": self.action,
                "thoughts": self.thoughts}
        if self.unused:
            return {**head, **self._call_fields(), **self.extra}
        return {**head, "status": self.status, "failure_reason": self.failure_reason,
                "events": list(self.events), "ticks_elapsed": self.ticks_elapsed,
                **self._call_fields(), **self.extra}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ActionLine:
        """The line of a JSON object (old logs: missing keys take their defaults).

        Raises:
            ValueError, TypeError: Fields that do not make an act line.
        """
        action = data.get("action")
        known = _LINE_KEYS | _CALL_KEYS | {"action", "status", "failure_reason", "events",
                                            "ticks_elapsed"}
        call = DecisionRecord.from_log(data)
        return cls(round=call.round, agent=call.agent, phase=call.phase, call=call,
                   tick=data.get("tick"), kind=data.get("kind"),
                   thoughts=data.get("thoughts") or "",
                   unused="status" not in data and action is None,
                   action=ActionId(action) if isinstance(action, str) else action,
                   status=data.get("status"), failure_reason=data.get("failure_reason"),
                   events=list(data.get("events") or ()),
                   ticks_elapsed=data.get("ticks_elapsed"),
                   extra={k: v for k, v in data.items() if k not in known})


_LINE_KEYS = frozenset({"round", "tick", "agent", "phase", "kind", "thoughts"})
_CALL_KEYS = frozenset(f.name for f in fields(DecisionRecord))


def decision_line(data: dict[str, Any]) -> MessageLine | ActionLine:
    """The typed line of a decision line's JSON object: an act line (``phase`` ``act``)
    or a communicate-phase line (any other phase).

    Raises:
        ValueError, TypeError: It is not a decision line, or its fields do not fit.
    """
    return (ActionLine if data.get("phase") == "act" else MessageLine).from_dict(data)
