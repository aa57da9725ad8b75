"""How an episode ended: ``complete``, or stopped early as ``error`` or ``interrupted``.

The runner raises :class:`EpisodeStopped` to end an episode early; the summary then
carries ``episode_status`` and ``stop_reason``. Only a ``complete`` episode is data:
sweeps mark the others ``status: error`` (retried on rerun), reports leave them out
of means, and Criticize-Reflect does not score them.

:class:`TransportFailures` stops an episode whose model server is gone: after
``limit`` model calls in a row that failed after their retries (each one already a
recorded fallback), playing on would only add rounds of fallback ``wait``s.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from orgteams.envs.errors import UserError

__all__ = ["DEFAULT_MAX_TRANSPORT_FAILURES", "EPISODE_STATUSES", "EpisodeStopped",
           "TransportFailures"]

EPISODE_STATUSES = ("complete", "error", "interrupted")
DEFAULT_MAX_TRANSPORT_FAILURES = 3


class EpisodeStopped(Exception):
    """Ends an episode early; the summary gets ``episode_status`` and ``stop_reason``."""

    def __init__(self, status: str, reason: str) -> None:
        if status not in EPISODE_STATUSES[1:]:
            raise ValueError(f"an early stop is 'error' or 'interrupted', not {status!r}")
        super().__init__(reason)
        self.status, self.reason = status, reason


class TransportFailures:
    """Counts model calls that failed after retries, in a row, and stops at ``limit``.

    Args:
        limit: Calls in a row; None never stops.

    Raises:
        UserError: ``limit`` is not a positive integer or None.
    """

    def __init__(self, limit: int | None = DEFAULT_MAX_TRANSPORT_FAILURES) -> None:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 1):
            raise UserError(f"max_transport_failures must be a positive number of calls or "
                            f"None, got {limit!r}")
        self.limit = limit
        self.in_a_row = 0
        self.last: str | None = None

    def count(self, records: Iterable[Any]) -> None:
        """Count a batch of decision records in order.

        A record with a backend ``error`` adds one; one whose model answered (even with
        an invalid reply) resets the count; members that call no model change nothing.

        Raises:
            EpisodeStopped: The limit is reached.
        """
        for rec in records:
            if rec.error is not None:
                self.in_a_row, self.last = self.in_a_row + 1, rec.error
            elif rec.replies:
                self.in_a_row = 0
        if self.limit is not None and self.in_a_row >= self.limit:
            raise EpisodeStopped("error", f"{self.in_a_row} model calls in a row failed "
                                 f"after retries (last: {self.last})")
