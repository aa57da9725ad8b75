"""Statistics of the reports: description with a t-based 95% CI, Welch's t-test,
Cohen's d and the Kruskal-Wallis H test (scipy, the ``report`` extra).

Every function returns JSON-safe values: NaN and inf become None, and a test that is
undefined (too few values, no variance) returns None fields instead of raising.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from orgteams.errors import MissingExtraError

REPORT_HINT = 'reports need scipy and matplotlib: pip install "orgteams[report]"'


def scipy_stats():
    """scipy.stats, or one line saying how to install the report extra."""
    try:
        from scipy import stats
    except ImportError:
        raise MissingExtraError(REPORT_HINT) from None
    return stats


def finite_or_none(x: Any) -> float | None:
    """JSON-safe float: NaN and inf become None."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def describe(values: Sequence[float]) -> dict[str, Any]:
    """``{"n", "mean", "sd", "ci95": [lo, hi]}``; sd and CI are None below 2 values."""
    stats = scipy_stats()
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "ci95": None}
    mean = sum(values) / n
    if n < 2:
        return {"n": n, "mean": mean, "sd": None, "ci95": None}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "sd": sd, "ci95": [mean - half, mean + half]}


def welch(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Welch's t-test of ``a`` against ``b``: ``{"t", "p", "n_a", "n_b"}`` (None when
    undefined: fewer than 2 values on a side, or no variance at all)."""
    stats = scipy_stats()
    out: dict[str, Any] = {"t": None, "p": None, "n_a": len(a), "n_b": len(b)}
    if len(a) >= 2 and len(b) >= 2:
        res = stats.ttest_ind(list(a), list(b), equal_var=False)
        out["t"], out["p"] = finite_or_none(res.statistic), finite_or_none(res.pvalue)
    return out


def cohens_d(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Cohen's d of ``a`` against ``b``: ``(mean_a - mean_b) / pooled sd`` (ddof=1);
    None with fewer than 2 values on a side or no variance at all."""
    if len(a) < 2 or len(b) < 2:
        return None
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    ss = sum((x - ma) ** 2 for x in a) + sum((x - mb) ** 2 for x in b)
    pooled = math.sqrt(ss / (len(a) + len(b) - 2))
    return finite_or_none((ma - mb) / pooled) if pooled > 0 else None


def kruskal(samples: Sequence[Sequence[float]]) -> dict[str, Any]:
    """Kruskal-Wallis H test across groups: ``{"H", "p", "k"}`` (None when undefined:
    fewer than 2 non-empty groups, every value equal, or one value per group: then H is
    k - 1 whatever the values, so its p-value would measure nothing)."""
    stats = scipy_stats()
    groups = [list(x) for x in samples if len(x)]
    out: dict[str, Any] = {"H": None, "p": None, "k": len(groups)}
    if (len(groups) >= 2 and len({v for g in groups for v in g}) > 1
            and any(len(g) > 1 for g in groups)):
        res = stats.kruskal(*groups)
        out["H"], out["p"] = finite_or_none(res.statistic), finite_or_none(res.pvalue)
    return out


def paired_mde(n: int, power: float = 0.8, alpha: float = 0.05) -> float | None:
    """The smallest effect ``|d_z|`` (mean paired difference over its sd) a two-sided
    paired t-test on ``n`` pairs detects with ``power`` at level ``alpha`` (noncentral
    t); None below 2 pairs."""
    if n < 2:
        return None
    stats = scipy_stats()
    from scipy.optimize import brentq

    df = n - 1
    crit = float(stats.t.ppf(1 - alpha / 2, df))

    def short(d: float) -> float:  # the other tail is negligible at any useful power
        return float(stats.nct.sf(crit, df, d * math.sqrt(n))) - power

    return finite_or_none(brentq(short, 1e-6, 100.0))


__all__ = ["scipy_stats", "finite_or_none", "describe", "welch", "cohens_d", "kruskal",
           "paired_mde", "REPORT_HINT"]
