"""The episode log: one JSONL line per decision and team event, written as it happens.

Every line is a typed record, made by the round loop and the runner, written by the one
writer (:class:`EpisodeLog`) as its ``to_dict()`` and read back by the one reader
(:func:`read_log`) as the same type:

================================  ===============================================  ==============
line                              what it is                                       ``"record"``
================================  ===============================================  ==============
:class:`~orgteams.agents.records.MessageLine`  a communicate-phase decision: one line  (none)
                                  per message it sends, or one for silence
:class:`~orgteams.agents.records.ActionLine`   an act-phase decision and what its plan  (none)
                                  did this round
:class:`EventLine`                a team event (election, hand-over, shock,        ``event``
                                  organization switch, succession, stop...)
:class:`EpisodeLine`              first line: seed, names, organization and the    ``episode``
                                  whole initial world (a replay needs no assets)
:class:`TickLine`                 every env tick: its round and each agent's       ``tick``
                                  primitive action id
:class:`WorldLine`                the whole world after a change outside the       ``world``
                                  dynamics, and the digest of the state before
:class:`EndLine`                  the final tick and a digest of the final state   ``end``
:class:`~orgteams.organizations.rounds.episode_summary.EpisodeSummary`  the last line  ``summary``
:class:`PlaySummary`              the last line of ``orgteams play --log``         ``summary``
================================  ===============================================  ==============

Decision lines' call fields are their :class:`~orgteams.agents.records.DecisionRecord`'s
(:meth:`~orgteams.agents.records.DecisionRecord.log_fields`); the metrics read the
lines (:mod:`orgteams.organizations.metrics.episode_metrics`). A line of a kind this
version does not know, or whose fields do not fit its kind, reads as an
:class:`UnknownLine` holding its JSON object; a key a line kind does not know is kept in
its ``extra`` (and written again by ``to_dict``), so logs of newer versions read, and
logs of older ones read with defaults for what they lack. :func:`line_dict` is the JSON
object of any line (its ``to_dict()``; a summary line's adds ``"record": "summary"``).

The file is flushed at the end of every round, so a crash loses at most the round in
flight; :func:`read_log` skips a torn last line. A log file holds one episode. It is
written as ``<path>.partial`` (truncated first) and renamed over ``<path>`` when the
episode ends, however it ends: a second run with the same path replaces the first
episode instead of appending to it, and a killed process leaves its rounds so far
readable in the ``.partial`` file (``read_log`` and ``orgteams replay`` accept it).
The in-memory records (:attr:`EpisodeLog.records`) are the decision and event lines.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, TextIO

from orgteams.agents.records import ActionLine, DecisionLine, MessageLine, decision_line
from orgteams.envs.core.user_files import make_parents, utf8_problem
from orgteams.errors import UserError
from orgteams.organizations.rounds.episode_summary import EpisodeSummary

__all__ = ["EndLine", "EpisodeLine", "EpisodeLog", "EventLine", "LogLine", "PlaySummary",
           "TickLine", "UnknownLine", "WorldLine", "end_replay_log", "fault_counts",
           "line_dict", "log_world_edit", "parse_line", "read_log", "read_log_lines",
           "start_replay_log", "state_digest"]


def _default(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(obj)
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    return str(obj)


@dataclass(kw_only=True)
class EventLine:
    """A team event of a round (``"record": "event"``).

    Attributes:
        round, tick: When it happened.
        type: ``election``, ``leader_change``, ``shock``, ``org_switch``,
            ``succession``, ``claim_refused``, ``small_team``, ``stopped``...
        data: The event's own fields, by type (an election's ``votes``, ``counts``,
            ``winner``; a shock's ``kind``, ``agent`` and what it changed; ...), in
            the order they are written.
    """

    round: int | None = None
    tick: int | None = None
    type: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    RECORD: ClassVar[str] = "event"

    def get(self, key: str, default: Any = None) -> Any:
        """One of the event's own fields (``data``), or ``default``."""
        return self.data.get(key, default)

    def to_dict(self) -> dict[str, Any]:
        """The line's JSON object."""
        return {"record": self.RECORD, "round": self.round, "tick": self.tick,
                "type": self.type, **self.data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EventLine:
        """The event of its JSON object (the ``record`` key is optional)."""
        return cls(round=data.get("round"), tick=data.get("tick"), type=data.get("type"),
                   data={k: v for k, v in data.items()
                         if k not in ("record", "round", "tick", "type")})


@dataclass(kw_only=True)
class EpisodeLine:
    """The first line (``"record": "episode"``): what a replay starts from.

    Attributes:
        seed: The episode seed.
        organization: The organization's name.
        agents: Agent ids, in order.
        names: Their display names.
        initial_state: The whole initial world (``HouseholdState.to_dict()``).
    """

    seed: int | None = None
    organization: str | None = None
    agents: list[str] | None = None
    names: list[str] | None = None
    initial_state: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    RECORD: ClassVar[str] = "episode"

    def to_dict(self) -> dict[str, Any]:
        """The line's JSON object."""
        return {"record": self.RECORD, "seed": self.seed, "organization": self.organization,
                "agents": self.agents, "names": self.names,
                "initial_state": self.initial_state, **self.extra}


@dataclass(kw_only=True)
class TickLine:
    """One env tick (``"record": "tick"``): its round and each agent's primitive action id."""

    round: int | None = None
    tick: int | None = None
    actions: list[int] | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    RECORD: ClassVar[str] = "tick"

    def to_dict(self) -> dict[str, Any]:
        """The line's JSON object."""
        return {"record": self.RECORD, "round": self.round, "tick": self.tick,
                "actions": self.actions, **self.extra}


@dataclass(kw_only=True)
class WorldLine:
    """The whole world after a change outside the dynamics (``"record": "world"``): a
    removed member setting things down, a priority shift's new goal.

    Attributes:
        tick: The tick it happened at.
        before: The digest of the state before it (:func:`state_digest`).
        state: The state after it (``HouseholdState.to_dict()``).
    """

    tick: int | None = None
    before: str | None = None
    state: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    RECORD: ClassVar[str] = "world"

    def to_dict(self) -> dict[str, Any]:
        """The line's JSON object."""
        return {"record": self.RECORD, "tick": self.tick, "before": self.before,
                "state": self.state, **self.extra}


@dataclass(kw_only=True)
class EndLine:
    """The end of an episode (``"record": "end"``): final tick and final state's digest."""

    tick: int | None = None
    digest: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    RECORD: ClassVar[str] = "end"

    def to_dict(self) -> dict[str, Any]:
        """The line's JSON object."""
        return {"record": self.RECORD, "tick": self.tick, "digest": self.digest,
                **self.extra}


@dataclass(frozen=True, kw_only=True)
class PlaySummary:
    """The last line of an ``orgteams play --log`` episode (``"record": "summary"``
    with ``player``).

    Attributes:
        episode_status, stop_reason: ``complete`` (``goal met``, ``max ticks``), or
            ``interrupted`` when the player quit before the episode ended, and why.
        reveal: The player saw the whole house, not only what their agent knows.
        ticks, success, units_done, units_total: How the episode ended.
        player, player_role: The agent the person played, and its role (None: none).
        messages_sent: Messages said by everyone.
        player_messages, player_message_tokens: The player's messages and their tokens.
        message_tokens: Tokens of every message said.
        absent_keys: Keys the line it was read from lacked (older play logs have no goal
            units, status or ``reveal``); they stay out of :meth:`to_dict`.
    """

    episode_status: str | None = None
    stop_reason: str | None = None
    reveal: bool | None = None
    ticks: int | None = None
    success: bool | None = None
    units_done: int | None = None
    units_total: int | None = None
    player: str | None = None
    player_role: str | None = None
    messages_sent: int = 0
    player_messages: int = 0
    player_message_tokens: int = 0
    message_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    absent_keys: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    _KEYS: ClassVar[tuple[str, ...]] = (
        "episode_status", "stop_reason", "reveal", "ticks", "success", "units_done",
        "units_total", "player", "player_role", "messages_sent", "player_messages",
        "player_message_tokens", "message_tokens")

    def has(self, key: str) -> bool:
        """Whether the line holds ``key``."""
        return key in self.extra or key in self._KEYS and key not in self.absent_keys

    def to_dict(self) -> dict[str, Any]:
        """The line's JSON object."""
        return {"record": "summary", **{k: getattr(self, k) for k in self._KEYS
                                        if k not in self.absent_keys}, **self.extra}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlaySummary:
        """The summary of its JSON object (missing keys: defaults, kept out of to_dict)."""
        return cls(**{k: data[k] for k in cls._KEYS if k in data},
                   extra={k: v for k, v in data.items() if k not in cls._KEYS
                          and k != "record"},
                   absent_keys=frozenset(k for k in cls._KEYS if k not in data))


@dataclass(frozen=True)
class UnknownLine:
    """A line this version does not read as one of its kinds: another version's kind,
    or fields that do not fit the kind (``problem`` says which); ``raw`` is its JSON
    object, as it is."""

    raw: dict[str, Any]
    problem: str = ""

    def get(self, key: str, default: Any = None) -> Any:
        """A key of the raw object."""
        return self.raw.get(key, default)

    def to_dict(self) -> dict[str, Any]:
        """The line's JSON object, as read."""
        return self.raw


LogLine = (MessageLine | ActionLine | EventLine | EpisodeLine | TickLine | WorldLine | EndLine
           | EpisodeSummary | PlaySummary | UnknownLine)
"""Any line of an episode log."""

_KINDS: dict[str, type] = {c.RECORD: c for c in (EventLine, EpisodeLine, TickLine,
                                                 WorldLine, EndLine)}


def _plain(cls: type, data: dict[str, Any]) -> Any:
    """A replay line of its JSON object: known keys as fields, others in ``extra``."""
    names = [f.name for f in fields(cls) if f.name != "extra"]
    return cls(**{n: data.get(n) for n in names},
               extra={k: v for k, v in data.items() if k not in names and k != "record"})


def line_dict(line: LogLine) -> dict[str, Any]:
    """The JSON object of ``line`` as the log holds it: its ``to_dict()``, with
    ``"record": "summary"`` first for an :class:`EpisodeSummary` (whose ``to_dict()`` is
    the summary alone, as a sweep's result row holds it)."""
    if isinstance(line, EpisodeSummary):
        return {"record": "summary", **line.to_dict()}
    return line.to_dict()


def parse_line(data: dict[str, Any]) -> LogLine:
    """The typed line of one JSON object of an episode log (never raises for content:
    what it cannot read is an :class:`UnknownLine`)."""
    kind = data.get("record")
    try:
        if kind is None:
            if data.get("phase") is None:
                return UnknownLine(data, "no 'record' and no 'phase': not a line kind")
            return decision_line(data)
        if kind == "summary":
            return (PlaySummary if "player" in data else EpisodeSummary).from_dict(data)
        if kind == "event":
            return EventLine.from_dict(data)
        if kind in _KINDS:
            return _plain(_KINDS[kind], data)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        return UnknownLine(data, f"{type(exc).__name__}: {exc}")
    return UnknownLine(data, f"unknown record kind {kind!r}")


_KEPT = (DecisionLine, EventLine)  # the lines EpisodeLog.records keeps (a tuple: made once,
# not a union per line; a 256-agent round writes over 500)


class EpisodeLog:
    """The one writer of episode logs: ``<path>.partial`` while the episode runs, ``path``
    after :meth:`close` (the folder is created; an older file at ``path`` is replaced).

    Attributes:
        records: The decision and event lines written so far (what metrics and the
            Critic read); the replay lines and the summary are only in the file.
    """

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self.records: list[DecisionLine | EventLine] = []
        self._fh: TextIO | None = None
        if self.path is not None:
            # refused now, not when the finished episode is renamed over it
            if self.path.is_dir():
                raise UserError(f"{self.path}: is a directory; the episode log is a file "
                                f"(for example {self.path / 'episode.jsonl'})")
            self.partial = self.path.with_name(self.path.name + ".partial")
            make_parents(self.path, "the episode log")
            try:
                self._fh = self.partial.open("w", encoding="utf-8")
            except OSError as exc:
                raise UserError(f"{self.path}: cannot write the episode log: "
                                f"{exc.strerror or exc}") from None

    def write(self, line: LogLine) -> None:
        """Append ``line`` (its ``to_dict()``) to the file, flushed per round; keep it in
        :attr:`records` too when it is a decision or event line."""
        if isinstance(line, _KEPT):
            self.records.append(line)
        if self._fh is not None:
            self._fh.write(json.dumps(line_dict(line), default=_default) + "\n")

    def flush(self) -> None:
        """Writes what is buffered to disk (``fsync``): a crash loses at most the round in flight.
        """
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Flush, close and rename the ``.partial`` file over ``path`` (atomic)."""
        if self._fh is not None:
            self.flush()
            self._fh.close()
            self._fh = None
            os.replace(self.partial, self.path)

    def __enter__(self) -> EpisodeLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_log(path: str | Path) -> Iterator[LogLine]:
    """The typed lines of a JSONL episode log (:func:`parse_line`), read as a stream; a
    torn final line (crash mid-write) is skipped. :func:`line_dict` gives a line's JSON
    object back (an :class:`UnknownLine`'s as it was read)."""
    for _, line in read_log_lines(path):
        yield line


def read_log_lines(path: str | Path) -> Iterator[tuple[int, LogLine]]:
    """``(line number, typed line)`` of each line of a JSONL episode log (see
    :func:`read_log`).

    Raises:
        UserError: A line that is not UTF-8 text holding one JSON object (a torn
            final line aside), naming the file and line; a directory.
    """
    for number, data in _json_lines(path):
        yield number, parse_line(data)


def _json_lines(path: str | Path) -> Iterator[tuple[int, dict]]:
    """``(line number, JSON object)`` of each line of a JSONL episode log, read as a stream.

    A torn final line (a crash mid-write: cut JSON, or a cut UTF-8 character, and no
    newline) is skipped; any other line that is not UTF-8 text holding one JSON object is a
    :class:`~orgteams.errors.UserError` naming the file and line, as is a
    directory.
    """
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{path}: is a directory, expected an episode log (JSONL)")
    with path.open("rb") as fh:
        number, line = 0, fh.readline()
        while line:
            number, following = number + 1, fh.readline()
            # a crash mid-write cuts the last line before its newline (a first line
            # cut so is no log: a binary file often has no newline at all)
            torn = not following and not line.endswith(b"\n") and number > 1
            try:
                text = line.decode("utf-8")
                record = json.loads(text) if text.strip() else None
            except UnicodeDecodeError as exc:
                if torn:
                    return  # the character in flight when the process died
                raise UserError(f"{path}: {utf8_problem(line, exc, number)}, expected an "
                                "episode log (JSONL)") from None
            except (json.JSONDecodeError, RecursionError):
                if torn:
                    return  # the round in flight when the process died
                raise UserError(f"{path}: line {number} is not valid JSON") from None
            if record is not None and not isinstance(record, dict):
                raise UserError(f"{path}: line {number} is a JSON {type(record).__name__}, "
                                "not an object")
            if record is not None:
                yield number, record
            line = following


def state_digest(state: Any) -> str:
    """A short digest of a world state's ``to_dict()``: equal states, equal digests."""
    text = json.dumps(state.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def start_replay_log(log: EpisodeLog, env: Any, *, seed: int | None, organization: str,
                     team: list[str], names: list[str], current_round: Callable[[], int]
                     ) -> Callable[..., None]:
    """Write the episode line; returns the tick hook that logs every tick of ``env``
    (subscribe it to :attr:`~orgteams.organizations.rounds.episode.RoundHooks.tick`)."""
    log.write(EpisodeLine(seed=seed, organization=organization, agents=list(team),
                          names=list(names), initial_state=env.world.to_dict()))

    def on_tick(before: Any, joint: dict[str, int], after: Any, infos: Any) -> None:
        log.write(TickLine(round=current_round(), tick=after.tick,
                           actions=[int(joint.get(a, 0)) for a in team]))

    return on_tick


def log_world_edit(log: EpisodeLog, before: Any, after: Any) -> None:
    """Write a world line: the whole state after a change outside the dynamics (a removed
    member setting things down, a priority shift's new goal) and the digest of the state
    before it; a replay checks that digest, then loads the state."""
    log.write(WorldLine(tick=after.tick, before=state_digest(before), state=after.to_dict()))


def end_replay_log(log: EpisodeLog, world: Any) -> None:
    """Write the end line: the final tick and the final state's digest."""
    log.write(EndLine(tick=world.tick, digest=state_digest(world)))


def fault_counts(decisions: Sequence[DecisionLine]) -> dict[str, Any]:
    """Summary fields about the model server, from decision lines: HTTP requests made,
    failed ones by kind, decisions that fell back on a backend error, decisions whose
    model answered but never validly (``invalid_reply_fallbacks``), and every
    structured-output downgrade (who, when, from which mode to which, and why)."""
    attempts = [(r, a) for r in decisions for a in r.call.attempts]
    failed = Counter(a.kind for _, a in attempts if a.kind)
    return {
        "model_requests": len(attempts),
        "failed_requests": sum(failed.values()),
        "failed_requests_by_kind": dict(sorted(failed.items())),
        "backend_fallbacks": sum(1 for r in decisions if r.call.error),
        "invalid_reply_fallbacks": sum(1 for r in decisions if r.call.replies
                                       and r.call.parsed is None and not r.call.error),
        "structured_downgrades": [
            {"agent": r.agent, "round": r.round, "from": a.mode, "to": a.downgrade,
             "status": a.status, "detail": a.detail}
            for r, a in attempts if a.downgrade],
    }
