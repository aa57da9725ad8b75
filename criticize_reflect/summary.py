"""A bounded episode summary for the Critic: counts, a few examples, key events, metrics.

Not the raw log. The organized-teams paper's code pasted whole episode logs into the
Critic's prompt and overflowed the context window; here the Critic reads a dict whose
JSON text never exceeds ``budget_chars`` characters, whatever the episode length:

* ``metrics``: the headline numbers (success, ticks, rounds, comm_tokens_per_step, ...).
* ``agents``: per agent counts: messages, message tokens, actions, failed actions,
  fallbacks, LLM tokens, abstentions, roles taken.
* ``examples``: a few representative messages per agent, each cut to
  ``message_chars`` characters (first, longest and last message of each agent).
* ``events``: key events: env/runner events, shocks, organization switches, elections,
  fallbacks and failed actions (first ``max_events``).
* ``truncated``: what was dropped to fit the budget (empty when nothing was).

When the JSON is over budget, examples go first (latest first), then events, then the
per-agent role lists, then agents beyond the first ones; the result always fits.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orgteams.organizations.rounds.episode_log import LogLine
    from orgteams.organizations.rounds.episode_summary import EpisodeSummary

__all__ = ["MIN_BUDGET_CHARS", "METRIC_KEYS", "summarize_episode", "summary_chars"]

MIN_BUDGET_CHARS = 300
"""The smallest budget :func:`summarize_episode` accepts."""

METRIC_KEYS = (
    "success", "ticks", "rounds", "units_done", "units_total", "messages_sent",
    "message_tokens_sent", "message_tokens_delivered", "comm_tokens_per_step",
    "delivered_tokens_per_step", "tokenizer", "fallback_count", "abstention_rate",
    "duplicate_rate", "unique_roles", "election_count", "hierarchy_depth",
    "algebraic_connectivity", "spectral_gap", "messages_by_kind", "task", "layout",
    "organization", "protocol", "num_agents", "step_limit",
)  # fmt: skip
"""Episode-summary keys copied into ``metrics`` (those present)."""


def summary_chars(summary: Mapping[str, Any]) -> int:
    """Length of the compact JSON text the budget applies to."""
    return len(json.dumps(summary, ensure_ascii=False, separators=(",", ":"), default=str))


def _cut(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: max(0, n - 3)] + "..."


def _round_floats(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: _round_floats(v) for k, v in value.items()}
    return value


def summarize_episode(
    records: Iterable[LogLine],
    episode_summary: EpisodeSummary | None = None,
    *,
    budget_chars: int = 6000,
    examples_per_agent: int = 3,
    message_chars: int = 120,
    max_events: int = 12,
) -> dict[str, Any]:
    """Summarize an episode for the Critic within ``budget_chars`` characters of JSON.

    Args:
        records: The episode's lines (``EpisodeResult.records``: decision and event
            lines; see :mod:`orgteams.organizations.rounds.episode_log`).
        episode_summary: ``EpisodeResult.summary`` (metrics and events), if any.
        budget_chars: Upper bound on :func:`summary_chars` of the result.
        examples_per_agent: Representative messages kept per agent (before budgeting).
        message_chars: Each example message is cut to this many characters.
        max_events: Key events kept (before budgeting).

    Raises:
        ValueError: ``budget_chars`` below :data:`MIN_BUDGET_CHARS`.
    """
    if budget_chars < MIN_BUDGET_CHARS:
        raise ValueError(f"budget_chars must be >= {MIN_BUDGET_CHARS}, got {budget_chars}")
    from orgteams.agents.records import ActionLine, DecisionLine, MessageLine
    from orgteams.organizations.rounds.episode_log import EventLine
    from orgteams.organizations.rounds.episode_summary import EpisodeSummary

    summary = episode_summary if episode_summary is not None else EpisodeSummary.from_dict({})
    agents: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "messages": 0, "message_tokens": 0, "actions": 0, "failed_actions": 0,
        "fallbacks": 0, "llm_tokens": 0, "abstentions": 0, "roles": Counter()})
    messages: dict[str, list[tuple[int, str]]] = defaultdict(list)
    events: list[dict[str, Any]] = []
    vote_rounds: set[int] = set()
    for r in records:
        if isinstance(r, EventLine) and r.get("agent") is not None:
            _ = agents[str(r.get("agent"))]  # an event naming an agent (a shock) lists it
            continue
        if not isinstance(r, DecisionLine) or r.agent is None:
            if isinstance(r, EventLine) and not summary.has("events"):
                events.append(_event(r))
            continue
        agent = r.agent
        a = agents[str(agent)]
        usage = r.call.usage
        a["llm_tokens"] += int(usage.prompt_tokens) + int(usage.completion_tokens)
        role = getattr(r, "role", None)
        if role:
            a["roles"][str(role)] += 1
        if getattr(r, "abstained", None):
            a["abstentions"] += 1
        if r.call.fallback:
            a["fallbacks"] += 1
            events.append({"round": r.round, "agent": agent, "type": "fallback",
                           "why": _cut(str(r.call.fallback), 80)})
        if r.phase == "vote" or r.kind == "vote":
            vote_rounds.add(int(r.round if r.round is not None else -1))
        message = r.message.text if isinstance(r, MessageLine) and r.message else None
        if isinstance(message, str) and message.strip():
            a["messages"] += 1
            a["message_tokens"] += int(r.message_tokens or 0)
            messages[str(agent)].append((int(r.round if r.round is not None else -1), message))
        if isinstance(r, ActionLine):
            a["actions"] += 1
            if r.status == "failed":
                a["failed_actions"] += 1
                events.append({"round": r.round, "agent": agent, "type": "failed_action",
                               "action": r.action,
                               "why": _cut(str(r.failure_reason or r.status), 80)})
    for e in summary.events or []:
        events.append(_event(e) if isinstance(e, EventLine) else {"type": str(e)})
    for s in summary.shocks or []:
        events.append({"type": "shock", **(s if isinstance(s, dict) else {"shock": str(s)})})
    for s in summary.org_switches or []:
        events.append({"type": "org_switch", **(s.to_dict() if isinstance(s, EventLine)
                                                else {"to": str(s)})})
    if vote_rounds:
        events.append({"type": "elections", "rounds": sorted(vote_rounds)[:20]})
    events.sort(key=lambda e: e.get("round") if isinstance(e.get("round"), int) else -1)

    examples: list[dict[str, Any]] = []
    for agent, sent in messages.items():
        picks: list[tuple[int, str]] = []
        for candidate in (sent[0], max(sent, key=lambda m: len(m[1])), sent[-1], *sent[1:-1]):
            if candidate not in picks and len(picks) < examples_per_agent:
                picks.append(candidate)
        examples += [{"agent": agent, "round": rnd, "text": _cut(text, message_chars)}
                     for rnd, text in sorted(picks)]

    out: dict[str, Any] = {
        "metrics": _round_floats({k: summary.value(k) for k in METRIC_KEYS
                                  if summary.has(k)}),
        "agents": {name: {**{k: v for k, v in a.items() if k != "roles"},
                          "roles": [role for role, _ in a["roles"].most_common(3)]}
                   for name, a in sorted(agents.items())},
        "examples": examples,
        "events": [_round_floats({k: (_cut(v, 80) if isinstance(v, str) else v)
                                  for k, v in e.items()}) for e in events[:max_events]],
        "truncated": [],
    }
    if len(events) > max_events:
        out["truncated"].append(f"{len(events) - max_events} later events")
    return _fit(out, budget_chars)


def _event(e: Any) -> dict[str, Any]:
    """An event line as the Critic reads it: its JSON object without ``record``."""
    return {k: v for k, v in e.to_dict().items() if k != "record"}


def _fit(out: dict[str, Any], budget: int) -> dict[str, Any]:
    """Drop the least useful parts until the JSON text fits ``budget`` characters."""
    dropped: Counter[str] = Counter()

    def over() -> bool:
        out["truncated"] = [*[t for t in out["truncated"] if not t.startswith("dropped ")],
                            *[f"dropped {n} {what}" for what, n in dropped.items()]]
        return summary_chars(out) > budget

    while over() and out["examples"]:
        out["examples"].pop()
        dropped["examples"] += 1
    while over() and out["events"]:
        out["events"].pop()
        dropped["events"] += 1
    if over():
        for a in out["agents"].values():
            a.pop("roles", None)
        dropped["role lists"] += 1
    while over() and out["agents"]:
        out["agents"].pop(next(reversed(out["agents"])))
        dropped["agents"] += 1
    if over():
        out["metrics"] = {k: out["metrics"][k] for k in ("success", "ticks",
                                                         "comm_tokens_per_step")
                          if k in out["metrics"]}
        dropped["metrics"] += 1
    if over():  # pragma: no cover - the minimum budget holds the three metrics
        out = {"metrics": {}, "agents": {}, "examples": [], "events": [],
               "truncated": ["everything: budget too small"]}
    return out
