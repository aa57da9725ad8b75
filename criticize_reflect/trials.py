"""One iteration's evidence: the episodes an organization played and their mean metrics."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from statistics import fmean
from typing import Any

from orgteams.organizations.rounds.episode_log import LogLine, parse_line
from orgteams.organizations.rounds.episode_summary import EpisodeSummary

__all__ = ["mean_metrics", "play"]

Episode = tuple[EpisodeSummary, list[LogLine]]
"""``(summary, records)`` of one episode."""


def _parts(result: Any) -> Episode:
    """An episode result, or a mapping with its ``summary`` and ``records`` as JSON
    objects (the summary line's and the log lines', e.g. a hand-made episode)."""
    if isinstance(result, Mapping):
        summary = result["summary"]
        if not isinstance(summary, EpisodeSummary):
            summary = EpisodeSummary.from_dict(dict(summary))
        return summary, [parse_line(r) if isinstance(r, Mapping) else r
                         for r in result.get("records") or []]
    return result.summary, list(result.records)


def play(episode_fn: Callable[[Any, int], Any], organization: Any, iteration: int
         ) -> list[Episode]:
    """The episodes ``episode_fn`` played for ``organization`` at ``iteration``: it may
    return one episode result or a list of them (several seeds)."""
    result = episode_fn(organization, iteration)
    results = list(result) if isinstance(result, list | tuple) else [result]
    if not results:
        raise ValueError(f"episode_fn played no episode for iteration {iteration}")
    return [_parts(r) for r in results]


def mean_metrics(summaries: list[EpisodeSummary], keys: tuple[str, ...]) -> dict[str, Any]:
    """``keys`` of one summary as they are; of several, numbers (and success, as the
    success rate) averaged, other values as the list of each episode's value."""
    if len(summaries) == 1:
        return {k: summaries[0].value(k) for k in keys if summaries[0].has(k)}
    out: dict[str, Any] = {}
    for k in keys:
        values = [s.value(k) for s in summaries if s.has(k)]
        if not values:
            continue
        numeric = all(isinstance(v, int | float) for v in values)
        out[k] = fmean(float(v) for v in values) if numeric else values
    out["episodes"] = len(summaries)
    return out
