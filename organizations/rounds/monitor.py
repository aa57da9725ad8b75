"""The capability-threshold monitor (the self-organizing paper's "endogeneity paradox").

Self-organization helps only above a capability threshold: weak models under a
self-organizing protocol either never abstain and duplicate each other's work, or
abstain so much that nobody covers the task. The monitor watches a sliding window
of rounds and, when a self-organizing protocol shows either failure, tells the
runner to switch to a configured structured fallback (``coordinator`` by default).
The runner records the switch as an event.

It watches only *mid-task* abstention (an agent abstained while a goal unit was left
that no teammate still working held or went for) and duplicated work: abstaining at
the end of the task, with nothing left to do, is what a competent team does, not a
collapse (planner teams under ``sequential`` abstain most rounds near the end).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from orgteams.organizations.protocols.facts import SELF_ORGANIZING


@dataclass(frozen=True)
class MonitorConfig:
    """Thresholds over the last ``window`` rounds (all rates in [0, 1])."""

    window: int = 5
    min_abstention: float = 0.02  # below this, with duplicates above max_duplicates...
    max_duplicates: float = 0.34  # ...the team is duplicating work
    max_abstention: float = 0.6  # above this, coverage has collapsed
    fallback: str = "coordinator"

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"monitor window must be >= 1 round, got {self.window}")
        for name in ("min_abstention", "max_duplicates", "max_abstention"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"monitor {name} must be in [0, 1], got {getattr(self, name)}")


class CapabilityMonitor:
    """Tracks abstention and duplicate-work rates; says when to fall back."""

    def __init__(self, config: MonitorConfig | None = None):
        self.config = config or MonitorConfig()
        self.abstentions: deque[tuple[int, int]] = deque(maxlen=self.config.window)
        self.duplicates: deque[tuple[int, int]] = deque(maxlen=self.config.window)
        self.switched = False

    def update(self, abstained: int, eligible: int, duplicated: int, acting: int) -> None:
        """One round: ``abstained`` of ``eligible`` abstained mid-task (the runner passes
        mid-task abstentions only); ``duplicated`` of ``acting`` agents pursued a
        target another agent was already pursuing."""
        self.abstentions.append((abstained, eligible))
        self.duplicates.append((duplicated, acting))

    @staticmethod
    def _rate(window: deque[tuple[int, int]]) -> float:
        total = sum(d for _, d in window)
        return sum(n for n, _ in window) / total if total else 0.0

    @property
    def abstention_rate(self) -> float:
        return self._rate(self.abstentions)

    @property
    def duplicate_rate(self) -> float:
        return self._rate(self.duplicates)

    def should_switch(self, protocol: str) -> str | None:
        """The reason to switch to the fallback now, or None."""
        cfg = self.config
        if self.switched or protocol not in SELF_ORGANIZING:
            return None
        if len(self.abstentions) < cfg.window:
            return None
        abst, dup = self.abstention_rate, self.duplicate_rate
        if abst <= cfg.min_abstention and dup > cfg.max_duplicates:
            return (f"abstention {abst:.2f} <= {cfg.min_abstention} with duplicate work "
                    f"{dup:.2f} > {cfg.max_duplicates} over {cfg.window} rounds")
        if abst > cfg.max_abstention:
            return (f"abstention {abst:.2f} > {cfg.max_abstention} over {cfg.window} rounds: "
                    "coverage collapsed")
        return None
