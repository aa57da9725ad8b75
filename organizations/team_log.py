"""The episode log: one JSONL record per decision, written as it happens.

Each line is a JSON object. Decision records follow the schema in
:mod:`orgteams.organizations.metrics` (``round``, ``tick``, ``agent``, ``phase``,
``kind``, ``message``, ``receivers``, ``delivered``, ``usage``, ``fallback``, ...)
plus ``prompt``, ``replies``, ``parsed``, ``error`` and ``latency``. Team-level
events (elections, organization switches, shocks) are lines with ``"record":
"event"``. The file is flushed at the end of every round, so a crash loses at
most the round in flight; :func:`read_log` skips a torn last line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO


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
    """Append-only JSONL writer for one episode (``path`` is created with its folder)."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self.records: list[dict] = []
        self._fh: TextIO | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("a", encoding="utf-8")

    def write(self, record: dict) -> None:
        """Keep ``record`` in memory and append it to the file (flushed per round)."""
        self.records.append(record)
        if self._fh is not None:
            self._fh.write(json.dumps(record, default=_default) + "\n")

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self.flush()
            self._fh.close()
            self._fh = None

    def __enter__(self) -> EpisodeLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_log(path: str | Path) -> Iterator[dict]:
    """Records of a JSONL episode log; a torn final line (crash mid-write) is skipped."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                return  # the round in flight when the process died
            raise ValueError(f"{path}: line {i + 1} is not valid JSON") from None
