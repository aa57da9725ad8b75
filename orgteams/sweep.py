"""Experiment sweeps: many episodes in parallel, resumable, one JSONL row per episode.

A sweep is the product tasks x layouts x organizations x team sizes x backends x
seeds (:class:`SweepSpec`, from YAML or CLI lists). :func:`run_sweep` runs each cell
once, in worker processes (``concurrent.futures.ProcessPoolExecutor``, spawn context)
or, with ``ray=True``, as Ray tasks (``pip install "orgteams[ray]"``).

Files under ``out``:

* ``results.jsonl``: one row per finished episode, written by the parent process and
  flushed as each episode ends (a crash loses at most the episodes in flight)::

      {"key": "task|layout|organization|agents|backend|seed",
       "cell": {"task", "layout", "organization", "agents", "backend", "seed"},
       "status": "ok" | "error", "summary": {...} | null, "error": null | "Type: message",
       "finished_at": "ISO time"}

  A rerun skips every key with an ``ok`` row; ``error`` rows are retried. A truncated
  last line (a crash mid-write) is dropped before appending.
* ``logs/<cell>.jsonl``: the episode log of each cell (see ``read_log``).

LLM backends: each worker process builds its own backend. For ``local`` that means one
llama.cpp server per process (memory and cores multiply), so the default is one worker
whenever a ``local`` member is in the sweep; more workers are allowed but warned about.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

KEY_FIELDS = ("task", "layout", "organization", "agents", "backend", "seed")
RAY_HINT = 'Ray is not installed: pip install "orgteams[ray]" (or run without --ray)'


@dataclass(frozen=True)
class SweepSpec:
    """What to run: every combination of the lists, once per seed.

    ``seeds`` is a count (seeds ``0..n-1``) or an explicit list. ``backends`` are
    member specs as in ``orgteams run --backend`` (one for all agents, or a comma list
    per agent). ``max_rounds``, ``max_ticks`` and ``cache`` are passed to every episode.
    """

    tasks: tuple[str, ...] = ("prepare_afternoon_tea",)
    layouts: tuple[str, ...] = ("studio",)
    organizations: tuple[str, ...] = ("none", "leader")
    agents: tuple[int, ...] = (3,)
    backends: tuple[str, ...] = ("planner",)
    seeds: tuple[int, ...] = tuple(range(5))
    max_rounds: int | None = None
    max_ticks: int | None = None
    cache: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<spec>") -> SweepSpec:
        """Build from a mapping (YAML); unknown keys and bad values raise ``ValueError``."""
        if not isinstance(data, dict):
            raise ValueError(f"{source}: a sweep spec must be a mapping of fields")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{source}: unknown sweep spec field {unknown[0]!r} "
                             f"(fields: {', '.join(sorted(known))})")
        kw: dict[str, Any] = {}
        for name in ("tasks", "layouts", "organizations", "backends"):
            if name in data:
                kw[name] = _str_list(data[name], name, source)
        if "agents" in data:
            kw["agents"] = _int_list(data["agents"], "agents", source)
        if "seeds" in data:
            kw["seeds"] = parse_seeds(data["seeds"], source)
        for name in ("max_rounds", "max_ticks"):
            if data.get(name) is not None:
                kw[name] = _int_list(data[name], name, source)[0]
        if data.get("cache") is not None:
            kw["cache"] = str(data["cache"])
        return cls(**kw)

    @classmethod
    def from_yaml(cls, path: str | Path) -> SweepSpec:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"sweep spec not found: {path}")
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ValueError(f"{path}: not valid YAML: {exc}") from None
        return cls.from_dict(data, source=str(path))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    def cells(self) -> Iterator[dict[str, Any]]:
        """Every cell of the product, in a stable order (seed varies fastest)."""
        for t, lay, org, n, b, s in itertools.product(self.tasks, self.layouts,
                                                      self.organizations, self.agents,
                                                      self.backends, self.seeds):
            yield {"task": t, "layout": lay, "organization": org, "agents": n, "backend": b,
                   "seed": s}

    def validate(self) -> None:
        """Check every name before any episode runs; errors name the spec field."""
        from orgteams.envs.layout import load_layout
        from orgteams.envs.tasks import load_task
        from orgteams.organizations.library import load_organization
        from orgteams.team import MEMBER_KINDS

        for name in ("tasks", "layouts", "organizations", "agents", "backends", "seeds"):
            if not getattr(self, name):
                raise ValueError(f"sweep spec field '{name}': empty list")
        for t in self.tasks:
            _field("tasks", load_task, t)
        for lay in self.layouts:
            _field("layouts", load_layout, lay)
        for n in self.agents:
            if not isinstance(n, int) or n < 1:
                raise ValueError(f"sweep spec field 'agents': {n!r} is not a positive team size")
        for o in self.organizations:
            org = _field("organizations", load_organization, o)
            for n in self.agents:
                _field("organizations", lambda _o, n=n, org=org: org.resolve(
                    [f"agent_{i}" for i in range(n)]), f"{o} with {n} agents")
        for b in self.backends:
            parts = [p.strip() for p in b.split(",")]
            for p in parts:
                kind = p.split(":", 1)[0]
                if kind not in MEMBER_KINDS:
                    from orgteams.envs._util import unknown_name

                    raise ValueError(f"sweep spec field 'backends': "
                                     f"{unknown_name('member kind', kind, MEMBER_KINDS)}")
                if kind == "human":
                    raise ValueError("sweep spec field 'backends': a sweep cannot wait for a "
                                     "human member; use planner, random, local or openai:<m>")
            bad = [n for n in self.agents if len(parts) not in (1, n)]
            if bad:
                raise ValueError(f"sweep spec field 'backends': {b!r} lists {len(parts)} "
                                 f"members but a team has {bad[0]} agents")

    @property
    def uses_local(self) -> bool:
        return any(p.strip().split(":")[0] == "local" for b in self.backends
                   for p in b.split(","))


def _field(name: str, fn: Callable[[Any], Any], value: Any) -> Any:
    try:
        return fn(value)
    except (ValueError, FileNotFoundError, KeyError) as exc:
        raise ValueError(f"sweep spec field '{name}': {exc}") from None


def _str_list(v: Any, name: str, source: str) -> tuple[str, ...]:
    items = v.split(",") if isinstance(v, str) else v
    if not isinstance(items, list | tuple) or not all(isinstance(x, str | int) for x in items):
        raise ValueError(f"{source}: sweep spec field '{name}' must be a list of names")
    return tuple(str(x).strip() for x in items if str(x).strip())


def _int_list(v: Any, name: str, source: str) -> tuple[int, ...]:
    items = v.split(",") if isinstance(v, str) else (v if isinstance(v, list | tuple) else [v])
    try:
        return tuple(int(x) for x in items)
    except (TypeError, ValueError):
        raise ValueError(f"{source}: sweep spec field '{name}' must be integers, got {v!r}"
                         ) from None


def parse_seeds(v: Any, source: str = "<spec>") -> tuple[int, ...]:
    """``20`` -> seeds 0..19; a list or ``"0,5,7"`` -> those; ``"10-19"`` -> a range."""
    if isinstance(v, str) and re.fullmatch(r"\s*\d+\s*-\s*\d+\s*", v):
        lo, hi = (int(x) for x in v.split("-"))
        return tuple(range(lo, hi + 1))
    if isinstance(v, int) or (isinstance(v, str) and v.strip().isdigit()):
        n = int(v)
        if n < 1:
            raise ValueError(f"{source}: sweep spec field 'seeds': need at least one seed")
        return tuple(range(n))
    return _int_list(v, "seeds", source)


def cell_key(cell: dict[str, Any]) -> str:
    return "|".join(str(cell[k]) for k in KEY_FIELDS)


def cell_log_name(cell: dict[str, Any]) -> str:
    raw = "_".join(f"{cell[k]}" for k in ("task", "layout", "organization"))
    raw += f"_a{cell['agents']}_{cell['backend']}_s{cell['seed']}"
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", raw) + ".jsonl"


# ---------------------------------------------------------------- results file


def read_results(path: str | Path) -> tuple[list[dict], int]:
    """Rows of a results.jsonl and how many unreadable lines were skipped.

    A truncated last line (a crash mid-write) is skipped silently; other bad lines
    with a warning."""
    path = Path(path)
    if not path.exists():
        return [], 0
    rows, bad = [], 0
    lines = path.read_text(encoding="utf-8").split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict) or "cell" not in row:
                raise ValueError("not a result row")
            rows.append(row)
        except ValueError:
            bad += 1
            if i < len(lines) - 1 and any(x.strip() for x in lines[i + 1:]):
                warnings.warn(f"{path}:{i + 1}: skipped an unreadable result line",
                              stacklevel=2)
    return rows, bad


def _drop_partial_tail(path: Path) -> None:
    """Cut a last line that has no newline (written by a crash) so appends stay valid."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1
    with path.open("r+b") as fh:
        fh.truncate(cut)


# ---------------------------------------------------------------- running cells


def run_cell(cell: dict[str, Any], log_path: str | None, options: dict[str, Any]) -> dict:
    """Run one cell's episode and return its summary (the default ``episode_fn``)."""
    from orgteams.team import run_episode

    result = run_episode(task=cell["task"], layout=cell["layout"],
                         organization=cell["organization"], agents=cell["agents"],
                         backend=cell["backend"], seed=cell["seed"], log_path=log_path,
                         **options)
    return result.summary


def _execute(episode_fn: Callable, cell: dict[str, Any], log_path: str | None,
             options: dict[str, Any]) -> dict:
    """Worker side: never raises; returns the result row (without the write time)."""
    try:
        if log_path:
            Path(log_path).unlink(missing_ok=True)  # a retried cell starts a fresh log
        summary = episode_fn(cell, log_path, options)
        return {"status": "ok", "summary": summary, "error": None}
    except BaseException as exc:  # noqa: BLE001 - a failed episode must not stop the sweep
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {"status": "error", "summary": None, "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=8)}


class _Progress:
    """tqdm, else rich, else a line per episode on stderr; nothing when disabled."""

    def __init__(self, total: int, enabled: bool):
        self.bar = self.rich = None
        self.total, self.done, self.enabled = total, 0, enabled and total > 0
        if not self.enabled:
            return
        try:
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=sys.stderr, desc="sweep", unit="ep")
            return
        except ImportError:
            pass
        try:
            from rich.console import Console
            from rich.progress import Progress

            self.rich = Progress(console=Console(stderr=True))
            self.rich.start()
            self.task = self.rich.add_task("sweep", total=total)
        except ImportError:
            pass

    def update(self, row: dict) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(1)
        elif self.rich is not None:
            self.rich.update(self.task, advance=1)
        else:
            print(f"sweep {self.done}/{self.total} {row['key']}: {row['status']}",
                  file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.rich is not None:
            self.rich.stop()


def _ray_module():
    try:
        import ray
    except ImportError:
        raise ImportError(RAY_HINT) from None
    return ray


def default_workers(spec: SweepSpec) -> int:
    """One worker when a ``local`` member is in the sweep (one llama.cpp server each),
    else up to 4 (fewer on small machines)."""
    return 1 if spec.uses_local else max(1, min(4, (os.cpu_count() or 2) - 1))


def run_sweep(spec: SweepSpec, out: str | Path, workers: int | None = None, ray: bool = False,
              *, episode_fn: Callable[[dict, str | None, dict], dict] | None = None,
              progress: bool = True) -> dict[str, Any]:
    """Run every cell of ``spec`` not already done in ``out/results.jsonl``.

    Args:
        workers: Parallel processes (``None``: :func:`default_workers`). 1 runs in this
            process. Ignored with ``ray``.
        ray: Run cells as Ray tasks (``ray.init()`` joins ``RAY_ADDRESS`` when set).
        episode_fn: ``(cell, log_path, options) -> summary``; defaults to :func:`run_cell`.
            It must be a module-level function when ``workers > 1`` (spawn pickles it).
        progress: A progress bar on stderr.

    Returns:
        ``{"out", "results", "cells", "skipped", "ran", "ok", "errors", "wall_seconds"}``.
    """
    spec.validate()
    ray_mod = _ray_module() if ray else None
    episode_fn = episode_fn or run_cell
    if workers is None:
        workers = default_workers(spec)
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if spec.uses_local and workers > 1 and not ray:
        warnings.warn(f"{workers} workers with a 'local' backend start {workers} llama.cpp "
                      "servers (one per process)", stacklevel=2)
    out = Path(out)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    _drop_partial_tail(results)
    rows, _ = read_results(results)
    done = {r.get("key") or cell_key(r["cell"]) for r in rows if r.get("status") == "ok"}
    cells = list(spec.cells())
    todo = [c for c in cells if cell_key(c) not in done]
    options = {"max_rounds": spec.max_rounds, "max_ticks": spec.max_ticks, "cache": spec.cache}
    t0 = time.perf_counter()
    counts = {"ok": 0, "error": 0}
    bar = _Progress(len(todo), progress)
    with results.open("a", encoding="utf-8") as fh:
        def write(cell: dict, outcome: dict) -> None:
            row = {"key": cell_key(cell), "cell": cell, **outcome,
                   "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            fh.write(json.dumps(row, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
            counts[row["status"]] += 1
            bar.update(row)

        def log_of(cell: dict) -> str:
            return str(out / "logs" / cell_log_name(cell))

        try:
            if ray_mod is not None:
                _run_ray(ray_mod, todo, episode_fn, log_of, options, write)
            elif workers == 1:
                for cell in todo:
                    write(cell, _execute(episode_fn, cell, log_of(cell), options))
            else:
                _run_pool(workers, todo, episode_fn, log_of, options, write)
        finally:
            bar.close()
    return {"out": str(out), "results": str(results), "cells": len(cells),
            "skipped": len(cells) - len(todo), "ran": len(todo), "ok": counts["ok"],
            "errors": counts["error"], "wall_seconds": round(time.perf_counter() - t0, 3),
            "workers": "ray" if ray else workers}


def _run_pool(workers: int, todo: list[dict], episode_fn: Callable, log_of: Callable,
              options: dict, write: Callable) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        pending = {pool.submit(_execute, episode_fn, c, log_of(c), options): c for c in todo}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                cell = pending.pop(fut)
                try:
                    outcome = fut.result()
                except Exception as exc:  # a worker died (BrokenProcessPool), or pickling
                    outcome = {"status": "error", "summary": None,
                               "error": f"{type(exc).__name__}: {exc}"}
                write(cell, outcome)


def _run_ray(ray: Any, todo: list[dict], episode_fn: Callable, log_of: Callable, options: dict,
             write: Callable) -> None:
    if not ray.is_initialized():
        ray.init(ignore_reinit_error=True)
    remote = ray.remote(num_cpus=1)(_execute)
    refs = {remote.remote(episode_fn, c, log_of(c), options): c for c in todo}
    while refs:
        ready, _ = ray.wait(list(refs), num_returns=1)
        for ref in ready:
            cell = refs.pop(ref)
            try:
                outcome = ray.get(ref)
            except Exception as exc:  # the task's worker died
                outcome = {"status": "error", "summary": None,
                           "error": f"{type(exc).__name__}: {exc}"}
            write(cell, outcome)


def spec_from_lists(base: SweepSpec | None = None, **lists: Iterable | None) -> SweepSpec:
    """``base`` (or the defaults) with the given non-None fields replaced (CLI helper)."""
    data = (base or SweepSpec()).to_dict()
    data.update({k: v for k, v in lists.items() if v is not None})
    return SweepSpec.from_dict(data, source="command line")
