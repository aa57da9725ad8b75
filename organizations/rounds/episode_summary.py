"""The episode summary: an episode's metrics plus what it was, as one typed record.

:class:`EpisodeSummary` is what :class:`~orgteams.organizations.rounds.runner.TeamRunner`
returns for an episode (``EpisodeResult.summary``) and writes as the episode log's
``summary`` line; sweeps store its :meth:`~EpisodeSummary.to_dict` in each
``results.jsonl`` row and ``orgteams run --json`` prints it. It is an
:class:`~orgteams.organizations.metrics.episode_metrics.EpisodeMetrics` (the measured
fields, first) with the episode's facts after them: seed, task, layout, organization
and protocol (at the start and at the end), goal units, members and their model
settings, duplicated decisions, team events, shocks and their recovery, successions,
model-server faults, the tokenizer, wall time, the log path and how the episode ended
(``episode_status``, ``stop_reason``, ``stop_detail``). Reports, the Criticize-Reflect
loop and replays read it back with :meth:`~EpisodeSummary.from_dict`: a summary written
by an older version (a key it lacks is left out again by ``to_dict``) or a newer one
(a key this version does not know is kept in ``extra``) reads without loss.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar

from orgteams.organizations.metrics.episode_metrics import EpisodeMetrics

if TYPE_CHECKING:
    from orgteams.organizations.rounds.episode_log import EventLine

__all__ = ["EpisodeSummary"]


@dataclass(frozen=True, kw_only=True)
class EpisodeSummary(EpisodeMetrics):
    """One episode: its metrics (the fields of :class:`EpisodeMetrics`, ``rounds`` being
    the env's decision rounds) and its facts.

    Attributes:
        seed: The episode seed.
        task, layout: What was played where (``task``: at the start).
        organization, protocol: In force at the start; ``final_organization`` and
            ``final_protocol`` at the end (the monitor or a regulate shock switch them).
        num_agents, step_limit: Team size and the task's tick limit.
        goal, final_goal, final_task: The goal at the start and at the end (a priority
            shock replaces it), as predicates like ``ON(wine, coffee_table): 2``.
        units_done, units_total: Goal units done at the end, of the goal then.
        members: Agent id -> what decides it (model name, ``planner``, ...).
        llm_settings: Agent id -> model settings of LLM members.
        cache_hits: Model calls answered from the response cache.
        duplicate_decisions, new_decisions, duplicate_rate: New decisions whose target
            another agent already pursued, of all new decisions.
        events: The team events (elections, hand-overs, shocks, switches, ...), the
            event lines of the log.
        shocks: Each shock with what it changed and its recovery.
        org_switches, successions: The ``org_switch`` and ``succession`` events.
        warnings: Warnings about the episode (a team too small for the organization).
        roles_by_round: Round -> agent -> role.
        model_requests, failed_requests, failed_requests_by_kind, backend_fallbacks,
            invalid_reply_fallbacks, structured_downgrades: What the model servers did
            (:func:`~orgteams.organizations.rounds.episode_log.fault_counts`).
        tokenizer, tokens_approximate: What counted message tokens, and a warning when
            the counts are approximate.
        wall_seconds: Seconds the episode took.
        log_path: The episode log, or None.
        episode_status, stop_reason, stop_detail: ``complete``, ``error`` or
            ``interrupted``; why it ended; the sentence behind an early stop.
        video: ``{"path", "frames"}`` of a recorded video (only written when there is one).
        extra: Keys of a summary this version does not know (a newer writer's), kept.
        absent_keys: Keys the summary it was read from lacked (an older writer's); they
            stay out of :meth:`to_dict`.
    """

    seed: int | None = None
    task: str | None = None
    layout: str | None = None
    organization: str | None = None
    final_organization: str | None = None
    protocol: str | None = None
    final_protocol: str | None = None
    num_agents: int | None = None
    step_limit: int | None = None
    goal: list[str] = field(default_factory=list)
    final_task: str | None = None
    final_goal: list[str] = field(default_factory=list)
    units_done: int | None = None
    units_total: int | None = None
    members: dict[str, str] = field(default_factory=dict)
    llm_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    cache_hits: int = 0
    duplicate_decisions: int = 0
    new_decisions: int = 0
    duplicate_rate: float = 0.0
    events: list[EventLine] = field(default_factory=list)
    shocks: list[dict[str, Any]] = field(default_factory=list)
    org_switches: list[EventLine] = field(default_factory=list)
    successions: list[EventLine] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    roles_by_round: dict[str, dict[str, str]] = field(default_factory=dict)
    model_requests: int = 0
    failed_requests: int = 0
    failed_requests_by_kind: dict[str, int] = field(default_factory=dict)
    backend_fallbacks: int = 0
    invalid_reply_fallbacks: int = 0
    structured_downgrades: list[dict[str, Any]] = field(default_factory=list)
    tokenizer: str | None = None
    tokens_approximate: str | None = None
    wall_seconds: float | None = None
    log_path: str | None = None
    episode_status: str | None = None
    stop_reason: str | None = None
    stop_detail: str | None = None
    video: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    absent_keys: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    _EVENTS: ClassVar[tuple[str, ...]] = ("events", "org_switches", "successions")
    _OPTIONAL: ClassVar[tuple[str, ...]] = ("video",)  # written only when set
    _OWN: ClassVar[tuple[str, ...]] = ("extra", "absent_keys")

    @classmethod
    def keys(cls) -> list[str]:
        """The summary's keys in the order :meth:`to_dict` writes them."""
        return [f.name for f in fields(cls) if f.name not in cls._OWN]

    @classmethod
    def of(cls, metrics: EpisodeMetrics, **facts: Any) -> EpisodeSummary:
        """The summary of an episode measured as ``metrics``, with its ``facts`` (a
        fact named as a metric, ``rounds``, replaces it)."""
        measured = {f.name: getattr(metrics, f.name) for f in fields(EpisodeMetrics)}
        return cls(**{**measured, **facts})

    def has(self, key: str) -> bool:
        """Whether the summary holds ``key`` (one read from an older writer's may not)."""
        if key in self.extra:
            return True
        if key in self._OPTIONAL:
            return getattr(self, key) is not None
        return key in self.keys() and key not in self.absent_keys

    def with_values(self, **values: Any) -> EpisodeSummary:
        """A copy with ``values`` (summary keys) set, held from now on."""
        return replace(self, **values, absent_keys=self.absent_keys - values.keys())

    def value(self, key: str) -> Any:
        """The value of ``key``, a field or a kept unknown key, named at run time (a
        report's metric list); None when the summary lacks it."""
        if key in self.extra:
            return self.extra[key]
        return getattr(self, key) if key in self.keys() and self.has(key) else None

    def __getitem__(self, key: str) -> Any:
        """``summary["ticks"]``: read by key, as scripts written against the summary's
        JSON object do (the same value as ``summary.ticks``).

        Raises:
            KeyError: The summary does not hold ``key``.
        """
        if not self.has(key):
            raise KeyError(key)
        return self.value(key)

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when the summary does not hold it (as
        ``dict.get`` on the summary's JSON object)."""
        return self.value(key) if self.has(key) else default

    @property
    def complete(self) -> bool:
        """The episode played to its end: ``episode_status`` ``complete``, or not
        recorded (summaries older than it)."""
        return not self.has("episode_status") or self.episode_status == "complete"

    def to_dict(self) -> dict[str, Any]:
        """The summary as its JSON object: the summary line, a sweep's result row,
        ``orgteams run --json`` (event lines as their JSON objects)."""
        out: dict[str, Any] = {}
        for name in self.keys():
            if not self.has(name):
                continue
            value = getattr(self, name)
            if name in self._EVENTS:
                value = [e.to_dict() if hasattr(e, "to_dict") else e for e in value]
            out[name] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeSummary:
        """The summary of its JSON object (a summary line, a result row's ``summary``).

        Keys it lacks take their defaults (None for the metrics) and stay out of
        :meth:`to_dict`; keys this version does not know go to ``extra``; values are
        taken as they are (readers check what they use). The ``record`` key of a
        summary line is not the summary's.
        """
        from orgteams.organizations.rounds.episode_log import EventLine

        names = cls.keys()
        known = {k: v for k, v in data.items() if k in names}
        for name in cls._EVENTS:
            if isinstance(known.get(name), list):
                known[name] = [EventLine.from_dict(e) if isinstance(e, dict) else e
                               for e in known[name]]
        required = [f.name for f in fields(EpisodeMetrics) if f.name not in known
                    and f.default is MISSING and f.default_factory is MISSING]
        return cls(**{**dict.fromkeys(required), **known},
                   extra={k: v for k, v in data.items() if k not in names and k != "record"},
                   absent_keys=frozenset(n for n in names if n not in data
                                         and n not in cls._OPTIONAL))
