"""How an episode ended: ``episode_status`` and ``stop_reason`` (with ``stop_detail``).

``episode_status`` is ``complete``, or ``error`` / ``interrupted`` for an episode
stopped early (the runner raises :class:`EpisodeStopped`). Only a ``complete`` episode
is data: sweeps mark the others ``status: error`` (retried on rerun), reports leave
them out of means, and Criticize-Reflect does not score them.

``stop_reason`` says why it ended, in a short fixed phrase: ``goal met``, ``max ticks``
(the task's step limit or ``max_ticks``) or ``max rounds`` for a complete episode;
``transport failures`` or ``invalid replies`` for an ``error`` stop; the reason the
caller's ``should_stop`` gave (e.g. ``window closed``, or ``max cost`` when the run's
budget was reached: :mod:`~orgteams.agents.backends.spend`) for an ``interrupted`` one.
``stop_detail`` is the sentence behind an early stop (None when there is none).

:class:`CallFailures` stops an episode whose model calls give no decision, counting two
runs of calls in a row, in the order the calls finish:

* ``transport failures``: calls that failed after their retries (the model server is
  gone); any call the model answered ends the run. Default limit 3.
* ``invalid replies``: calls the model answered, but never validly (every attempt was
  rejected: text that is not JSON, a reply that breaks the schema); only a valid reply
  ends the run (transport failures neither add to it nor end it). Default limit 10,
  higher than the transport limit because a weak model that is only sometimes invalid
  still plays (its ``fallback_rate`` is in the summary and the report), while one that
  never answers validly did not play.

An episode that plays to its end without a single valid reply from its model calls
(fewer of them than a limit, none valid) is an ``error`` too, with the same reason
(``invalid replies`` when any call was answered, else ``transport failures``): its
model did not play, whatever the planners around it did. A limit of None waives it.

Each call already fell back (a recorded ``wait``); playing on would only add more of
them. The count is exact: the stop fires at the call that reaches the limit; calls of
the same stage still running then are let finish and are recorded (marked "not
counted"), and no call starts after it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orgteams.errors import UserError

if TYPE_CHECKING:
    from orgteams.organizations.rounds.episode_summary import EpisodeSummary

__all__ = ["DEFAULT_MAX_INVALID_REPLIES", "DEFAULT_MAX_TRANSPORT_FAILURES", "EPISODE_STATUSES",
           "STOP_REASONS", "CallFailures", "EpisodeStopped", "end_reason", "why_stopped"]

EPISODE_STATUSES = ("complete", "error", "interrupted")
DEFAULT_MAX_TRANSPORT_FAILURES = 3
DEFAULT_MAX_INVALID_REPLIES = 10
STOP_REASONS = ("goal met", "max ticks", "max rounds", "transport failures", "invalid replies")
"""Every ``stop_reason`` but an interruption's (that one is the caller's own words)."""


class EpisodeStopped(Exception):
    """Ends an episode early; the summary gets ``episode_status``, ``stop_reason`` and
    ``stop_detail``.

    Args:
        status: ``"error"`` or ``"interrupted"``.
        reason: The short ``stop_reason``.
        detail: The sentence behind it (None: the reason says it all).
    """

    def __init__(self, status: str, reason: str, detail: str | None = None) -> None:
        if status not in EPISODE_STATUSES[1:]:
            raise ValueError(f"an early stop is 'error' or 'interrupted', not {status!r}")
        super().__init__(detail or reason)
        self.status, self.reason, self.detail = status, reason, detail


def end_reason(success: bool, env_over: bool) -> str:
    """``stop_reason`` of an episode that played to its end: ``goal met``, else
    ``max ticks`` when the env ended it (its tick limit), else ``max rounds``."""
    if success:
        return "goal met"
    return "max ticks" if env_over else "max rounds"


def why_stopped(summary: EpisodeSummary) -> str | None:
    """An episode summary's early stop in words: ``stop_detail``, else ``stop_reason``
    (summaries written before ``stop_detail`` kept the sentence there)."""
    return summary.stop_detail or summary.stop_reason


def _limit(value: int | None, name: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 1):
        raise UserError(f"{name} must be a positive number of calls or None, got {value!r}")
    return value


def _short(text: str, most: int = 200) -> str:
    """A validation error in one bounded line (it may quote what the model wrote)."""
    line = " ".join(text.split())
    return line if len(line) <= most else line[:most - 3] + "..."


class CallFailures:
    """Counts model calls that gave no decision, in a row, and stops at a limit.

    Args:
        max_transport_failures: Calls in a row that failed after retries; None never stops.
        max_invalid_replies: Calls in a row whose every reply was invalid; None never stops.

    Raises:
        UserError: A limit is not a positive integer or None.
    """

    def __init__(self, max_transport_failures: int | None = DEFAULT_MAX_TRANSPORT_FAILURES,
                 max_invalid_replies: int | None = DEFAULT_MAX_INVALID_REPLIES) -> None:
        self.transport_limit = _limit(max_transport_failures, "max_transport_failures")
        self.invalid_limit = _limit(max_invalid_replies, "max_invalid_replies")
        self.transport_in_a_row = 0
        self.invalid_in_a_row = 0
        self.last_error: str | None = None
        self.last_invalid: str | None = None
        self.transport_total = self.invalid_total = self.valid_total = 0

    def count(self, record: Any) -> None:
        """Count one decision record (a :class:`~orgteams.agents.records.StepRecord`).

        A backend ``error`` is a transport failure; replies with none accepted
        (``parsed`` None) an invalid call, which also ends a run of transport failures;
        an accepted reply ends both runs. Decisions without a model call (planners,
        a person's) change nothing.

        Raises:
            EpisodeStopped: ``"error"``, when this call reaches a limit.
        """
        if record.error is not None:
            self.transport_in_a_row += 1
            self.transport_total += 1
            self.last_error = record.error
        elif record.replies and record.parsed is None:
            self.transport_in_a_row = 0
            self.invalid_in_a_row += 1
            self.invalid_total += 1
            last = record.errors[-1] if record.errors else record.fallback
            self.last_invalid = _short(str(last))
        elif record.replies:
            self.transport_in_a_row = self.invalid_in_a_row = 0
            self.valid_total += 1
        if self.transport_limit is not None and self.transport_in_a_row >= self.transport_limit:
            raise EpisodeStopped("error", "transport failures",
                                 f"{self.transport_in_a_row} model calls in a row failed "
                                 f"after retries (last: {self.last_error})")
        if self.invalid_limit is not None and self.invalid_in_a_row >= self.invalid_limit:
            raise EpisodeStopped("error", "invalid replies",
                                 f"{self.invalid_in_a_row} model calls in a row gave no valid "
                                 f"reply (last: {self.last_invalid})")

    def check_end(self) -> None:
        """At an episode's natural end: it did not play if its model calls never gave a
        valid reply (fewer calls than a limit, so :meth:`count` never stopped it).

        Raises:
            EpisodeStopped: ``"error"``, ``invalid replies`` when any call was answered
                (invalidly), else ``transport failures``; not when that limit is None.
        """
        calls = self.transport_total + self.invalid_total
        if self.valid_total or not calls:
            return
        if self.invalid_total and self.invalid_limit is not None:
            raise EpisodeStopped("error", "invalid replies",
                                 f"none of the {calls} model calls gave a valid reply "
                                 f"(last: {self.last_invalid})")
        if not self.invalid_total and self.transport_limit is not None:
            raise EpisodeStopped("error", "transport failures",
                                 f"all {calls} model calls failed after retries "
                                 f"(last: {self.last_error})")
