"""The Criticize-Reflect cost: the one place its formula is written (lower is better).

``cost = charged_ticks * step_weight + comm_tokens_per_step * token_weight + penalty``

* ``charged_ticks`` is the episode's ticks when it succeeded; for a failed episode it
  is at least the step limit's ticks (``max(ticks, step_limit)``), so failing early can
  never cost less than finishing late;
* ``comm_tokens_per_step`` is the message tokens sent per tick (the paper's
  communication cost);
* ``penalty`` is ``failure_penalty`` for a failed episode, 0 for a successful one.

Several episodes (``--episodes-per-iteration``) cost their mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import fmean
from typing import TYPE_CHECKING, Any

from orgteams.errors import UserError

if TYPE_CHECKING:
    from orgteams.organizations.rounds.episode_summary import EpisodeSummary

__all__ = ["CostModel", "episode_cost"]

FORMULA = ("cost = charged_ticks * step_weight + comm_tokens_per_step * token_weight "
           "+ (failure_penalty if failed else 0); charged_ticks = ticks if success else "
           "max(ticks, step_limit)")


def episode_cost(ticks: float, comm_tokens_per_step: float, step_weight: float = 1.0,
                 token_weight: float = 1.0, *, success: bool = True,
                 step_limit: float | None = None, failure_penalty: float = 0.0) -> float:
    """The cost of one episode (see the module docstring for the formula).

    >>> episode_cost(52, 10.5)
    62.5
    >>> episode_cost(37, 2.0, success=False, step_limit=200, failure_penalty=50)
    252.0
    """
    charged = ticks if success else max(ticks, step_limit if step_limit is not None else ticks)
    penalty = 0.0 if success else failure_penalty
    return charged * step_weight + comm_tokens_per_step * token_weight + penalty


@dataclass(frozen=True)
class CostModel:
    """The weights of :func:`episode_cost`, applied to episode summaries.

    Attributes:
        step_weight: Cost of one tick.
        token_weight: Cost of one message token sent per tick.
        failure_penalty: Added to a failed episode (on top of the step limit's ticks).
    """

    step_weight: float = 1.0
    token_weight: float = 1.0
    failure_penalty: float = 0.0

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int | float) or value < 0:
                raise UserError(f"{name} must be a number >= 0, got {value!r}")

    def cost(self, summary: EpisodeSummary) -> float:
        """One episode's cost from its summary (``ticks``, ``comm_tokens_per_step``,
        ``success`` and ``step_limit``; a summary without ``success`` counts as success)."""
        return episode_cost(float(summary.ticks), float(summary.comm_tokens_per_step),
                            self.step_weight, self.token_weight,
                            success=bool(summary.success if summary.has("success") else True),
                            step_limit=summary.step_limit,
                            failure_penalty=self.failure_penalty)

    def mean_cost(self, summaries: Sequence[EpisodeSummary]) -> float:
        """The mean cost of several episodes (one iteration's evidence)."""
        if not summaries:
            raise ValueError("mean_cost needs at least one episode")
        return fmean(self.cost(s) for s in summaries)

    def to_dict(self) -> dict[str, Any]:
        """The weights and the formula, as recorded with every iteration."""
        return {**asdict(self), "formula": FORMULA}
