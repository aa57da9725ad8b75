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
from typing import Any

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
    records: Iterable[Mapping[str, Any]],
    episode_summary: Mapping[str, Any] | None = None,
    *,
    budget_chars: int = 6000,
    examples_per_agent: int = 3,
    message_chars: int = 120,
    max_events: int = 12,
) -> dict[str, Any]:
    """Summarize an episode for the Critic within ``budget_chars`` characters of JSON.

    Args:
        records: The episode's step records (``EpisodeResult.records``; see
            :mod:`orgteams.organizations.metrics.episode_metrics` for the schema).
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
    episode_summary = dict(episode_summary or {})
    agents: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "messages": 0, "message_tokens": 0, "actions": 0, "failed_actions": 0,
        "fallbacks": 0, "llm_tokens": 0, "abstentions": 0, "roles": Counter()})
    messages: dict[str, list[tuple[int, str]]] = defaultdict(list)
    events: list[dict[str, Any]] = []
    vote_rounds: set[int] = set()
    for r in records:
        agent = r.get("agent")
        if agent is None:
            if r.get("record") == "event" and "events" not in episode_summary:
                events.append({k: v for k, v in r.items() if k != "record"})
            continue
        a = agents[str(agent)]
        usage = r.get("usage") or {}
        a["llm_tokens"] += int(usage.get("prompt_tokens", 0)) + int(
            usage.get("completion_tokens", 0))
        if r.get("role"):
            a["roles"][str(r["role"])] += 1
        if r.get("abstained"):
            a["abstentions"] += 1
        if r.get("fallback"):
            a["fallbacks"] += 1
            events.append({"round": r.get("round"), "agent": agent, "type": "fallback",
                           "why": _cut(str(r["fallback"]), 80)})
        if r.get("phase") == "vote" or r.get("kind") == "vote":
            vote_rounds.add(int(r.get("round", -1)))
        message = r.get("message")
        if isinstance(message, str) and message.strip():
            a["messages"] += 1
            a["message_tokens"] += int(r.get("message_tokens") or 0)
            messages[str(agent)].append((int(r.get("round", -1)), message))
        if r.get("phase") == "act":
            a["actions"] += 1
            if r.get("status") == "failed":
                a["failed_actions"] += 1
                events.append({"round": r.get("round"), "agent": agent, "type": "failed_action",
                               "action": r.get("action"),
                               "why": _cut(str(r.get("failure_reason") or r.get("status")), 80)})
    for e in episode_summary.get("events") or []:
        events.append({k: v for k, v in e.items() if k != "record"} if isinstance(e, dict)
                      else {"type": str(e)})
    for s in episode_summary.get("shocks") or []:
        events.append({"type": "shock", **(s if isinstance(s, dict) else {"shock": str(s)})})
    for s in episode_summary.get("org_switches") or []:
        events.append({"type": "org_switch", **(s if isinstance(s, dict) else {"to": str(s)})})
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
        "metrics": _round_floats({k: episode_summary[k] for k in METRIC_KEYS
                                  if k in episode_summary}),
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
