"""The episode log: one JSONL record per decision, written as it happens.

Each line is a JSON object. Decision records follow the schema in
:mod:`orgteams.organizations.metrics.episode_metrics` (``round``, ``tick``, ``agent``, ``phase``,
``kind``, ``message``, ``receivers``, ``delivered``, ``usage``, ``fallback``, ...)
plus ``prompt``, ``replies``, ``parsed``, ``error`` and ``latency``. Team-level
events (elections, organization switches, shocks) are lines with ``"record":
"event"``. The file is flushed at the end of every round, so a crash loses at
most the round in flight; :func:`read_log` skips a torn last line.

A log file holds one episode. It is written as ``<path>.partial`` (truncated first)
and renamed over ``<path>`` when the episode ends, however it ends: a second run with
the same path replaces the first episode instead of appending to it, and a killed
process leaves its rounds so far readable in the ``.partial`` file (``read_log`` and
``orgteams replay`` accept it).

For replay (``orgteams replay``) the file also holds, but the in-memory records do
not: one ``"record": "episode"`` line first (seed, names, organization and the whole
initial world state, so a replay needs no asset files), one ``"record": "tick"``
line per env tick (its round and every agent's primitive action id), and an
``"record": "end"`` line with the final tick and a digest of the final state.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from orgteams.envs.core.user_files import make_parents, utf8_problem
from orgteams.errors import UserError


def _default(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(obj)
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    return str(obj)


class EpisodeLog:
    """JSONL writer for one episode: ``<path>.partial`` while it runs, ``path`` after
    :meth:`close` (the folder is created; an older file at ``path`` is replaced)."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self.records: list[dict] = []
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

    def write(self, record: dict, keep: bool = True) -> None:
        """Append ``record`` to the file (flushed per round); keep it in memory too
        unless ``keep`` is False (replay lines, which metrics never read)."""
        if keep:
            self.records.append(record)
        if self._fh is not None:
            self._fh.write(json.dumps(record, default=_default) + "\n")

    def flush(self) -> None:
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


def read_log(path: str | Path) -> Iterator[dict]:
    """Records of a JSONL episode log; a torn final line (crash mid-write) is skipped."""
    for _, record in read_log_lines(path):
        yield record


def read_log_lines(path: str | Path) -> Iterator[tuple[int, dict]]:
    """``(line number, record)`` of each record of a JSONL episode log, read as a stream.

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
    log.write({"record": "episode", "seed": seed, "organization": organization,
               "agents": list(team), "names": list(names),
               "initial_state": env.world.to_dict()}, keep=False)

    def on_tick(before: Any, joint: dict[str, int], after: Any, infos: Any) -> None:
        log.write({"record": "tick", "round": current_round(), "tick": after.tick,
                   "actions": [int(joint.get(a, 0)) for a in team]}, keep=False)

    return on_tick


def log_world_edit(log: EpisodeLog, before: Any, after: Any) -> None:
    """Write a world line: the whole state after a change outside the dynamics (a removed
    member setting things down, a priority shift's new goal) and the digest of the state
    before it; a replay checks that digest, then loads the state."""
    log.write({"record": "world", "tick": after.tick, "before": state_digest(before),
               "state": after.to_dict()}, keep=False)


def end_replay_log(log: EpisodeLog, world: Any) -> None:
    """Write the end line: the final tick and the final state's digest."""
    log.write({"record": "end", "tick": world.tick, "digest": state_digest(world)}, keep=False)


def decision_fields(record: Any) -> dict:
    """The call fields of a decision line: a member's
    :class:`~orgteams.agents.records.DecisionRecord`'s
    :meth:`~orgteams.agents.records.DecisionRecord.log_fields` (the class is the schema)."""
    return record.log_fields()


def fault_counts(decisions: list[dict]) -> dict[str, Any]:
    """Summary fields about the model server, from decision records: HTTP requests made,
    failed ones by kind, decisions that fell back on a backend error, decisions whose
    model answered but never validly (``invalid_reply_fallbacks``), and every
    structured-output downgrade (who, when, from which mode to which, and why)."""
    attempts = [(r, a) for r in decisions for a in r.get("attempts") or []]
    failed = Counter(a["kind"] for _, a in attempts if a.get("kind"))
    return {
        "model_requests": len(attempts),
        "failed_requests": sum(failed.values()),
        "failed_requests_by_kind": dict(sorted(failed.items())),
        "backend_fallbacks": sum(1 for r in decisions if r.get("error")),
        "invalid_reply_fallbacks": sum(1 for r in decisions if r.get("replies")
                                       and r.get("parsed") is None and not r.get("error")),
        "structured_downgrades": [
            {"agent": r.get("agent"), "round": r.get("round"), "from": a["mode"],
             "to": a["downgrade"], "status": a["status"], "detail": a["detail"]}
            for r, a in attempts if a.get("downgrade")],
    }
