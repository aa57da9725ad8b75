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

  A row is ``ok`` only when its episode really played (``episode_status`` is
  ``complete``); an episode stopped early (e.g. its model server was gone) is an
  ``error`` row that keeps its summary. A rerun skips every key with an ``ok`` row;
  ``error`` rows are retried. A truncated
  last line (a crash mid-write) is dropped before appending. A sweep its budget stopped
  (``max_cost``) ends with one stop line, ``{"stop": "max cost", "detail": "budget
  reached: ...", "spent_usd", "max_cost", "finished_at"}``, which readers skip.
* ``spend.json``: what the sweep's model calls cost so far, all runs together (see
  :mod:`~orgteams.agents.backends.spend`), when a model of the sweep has a price or
  ``max_cost`` is set.
* ``logs/<cell>.jsonl``: the episode log of each cell (see ``read_log``).
* ``.sweep.lock``: held (``filelock``) while a sweep runs, so a second sweep into the
  same folder is refused at once instead of running every cell twice.

Worker processes exit when the sweep's process dies, even by ``kill -9`` (Linux:
``PR_SET_PDEATHSIG``; elsewhere a thread that watches the parent's pid); they run
their exit hooks first, so a ``local`` worker stops its llama.cpp server.

Budget: with ``max_cost`` no cell starts once the spend reached it, and an episode
running then stops at its next check (``episode_status`` ``interrupted``, ``stop_reason``
``max cost``: an ``error`` row, retried). Finished rows are kept; the sweep returns
``budget_reached``; a rerun with a higher ``max_cost`` goes on where it stopped.

LLM backends: each worker process builds its own backend. For ``local`` that means one
llama.cpp server per process (memory and cores multiply), so the default is one worker
whenever a ``local`` member is in the sweep; more workers are allowed but warned about.
"""

from __future__ import annotations

import atexit
import json
import multiprocessing
import os
import re
import time
import traceback
import warnings
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from orgteams.errors import MissingExtraError, UserError
from orgteams.experiments.sweep_spec import (
    SweepSpec,
    cell_config,
    parse_seeds,
    spec_from_lists,
)
from orgteams.experiments.workers import worker_init
from orgteams.organizations.rounds.episode_summary import EpisodeSummary

KEY_FIELDS = ("task", "layout", "organization", "agents", "backend", "seed")
RAY_HINT = 'Ray is not installed: pip install "orgteams[ray]" (or run without --ray)'


def cell_key(cell: dict[str, Any]) -> str:
    """``task|layout|organization|agents|backend|seed``, plus ``|shocks=<condition>`` for
    a cell of a sweep with shock conditions (keys of sweeps without them are unchanged)."""
    key = "|".join(str(cell[k]) for k in KEY_FIELDS)
    return key + (f"|shocks={cell['shocks']}" if cell.get("shocks") is not None else "")


def cell_log_name(cell: dict[str, Any]) -> str:
    raw = "_".join(f"{cell[k]}" for k in ("task", "layout", "organization"))
    raw += f"_a{cell['agents']}_{cell['backend']}_s{cell['seed']}"
    if cell.get("shocks") is not None:
        raw += f"_shocks-{cell['shocks']}"
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", raw) + ".jsonl"


# ---------------------------------------------------------------- results file


def played(row: dict) -> bool:
    """True when a results row is an episode that really played to its end: ``ok``,
    with ``episode_status`` ``complete`` (rows from before that field count as played)."""
    summary = row.get("summary")
    return (row.get("status") == "ok" and isinstance(summary, dict)
            and EpisodeSummary.from_dict(summary).complete)


LIMITS = ("max_rounds", "max_ticks")
"""The spec's episode options that change what a finished episode played (its rows keep
them as ``limits``): a rerun with others may not count those rows as done."""


def check_limits(spec: Any, out: str | Path) -> None:
    """Refuse a sweep whose round or tick limits differ from those the finished episodes
    of ``out/results.jsonl`` played (rows written before rows kept them pass).

    Raises:
        UserError: One line naming the results file and the limits on both sides.
    """
    results = Path(out) / "results.jsonl"
    rows, _ = read_results(results)
    want = {k: getattr(spec, k) for k in LIMITS}
    for row in rows:
        had = row.get("limits")
        if played(row) and isinstance(had, dict) and {k: had.get(k) for k in LIMITS} != want:
            def says(d: dict) -> str:
                return ", ".join(f"{k} {d.get(k)}" for k in LIMITS)
            raise UserError(f"{results}: its episodes played with {says(had)}; this run "
                            f"asks {says(want)}, and would count them as done and mix both "
                            "in one table: use another --out (or the same limits to resume)")


def read_results(path: str | Path) -> tuple[list[dict], int]:
    """Rows of a results.jsonl and how many unreadable lines were skipped.

    A truncated last line (a crash mid-write) is skipped silently; other bad lines
    with a warning."""
    path = Path(path)
    if not path.exists():
        return [], 0
    if path.is_dir():
        raise UserError(f"{path}: is a directory, expected a results.jsonl file")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < raw.rfind(b"\n"):  # not a character cut by a crash mid-write
            from orgteams.envs.core.user_files import utf8_problem

            raise UserError(f"{path}: {utf8_problem(raw, exc)}, expected a results.jsonl "
                            "file") from None
        text = raw.decode("utf-8", errors="replace")  # the torn line fails below
    rows, bad = [], 0
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if isinstance(row, dict) and "stop" in row and "cell" not in row:
                continue  # where a budget stopped a run: not an episode
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


_WORKER_POOL: list = []  # this worker process's BackendPool, made by its first cell


def _worker_pool(spend: Any = None):
    """The backends of this worker's cells: one local server per worker, not per cell.
    The pool lives as long as the worker (closed at its exit, or by
    :func:`close_worker_pool` when the sweep ran in this process); its calls are charged
    to the sweep's ``spend`` (a pool metered otherwise is made again)."""
    if _WORKER_POOL and _WORKER_POOL[0].spend != spend:
        close_worker_pool()
    if not _WORKER_POOL:
        from orgteams.agents.backends.pool import BackendPool

        _WORKER_POOL.append(BackendPool(spend=spend))
        atexit.register(close_worker_pool)
    return _WORKER_POOL[0]


def close_worker_pool() -> None:
    """Close this process's worker pool (its local server stops), if it has one."""
    if _WORKER_POOL:
        _WORKER_POOL.pop().close()
        atexit.unregister(close_worker_pool)


def run_cell(cell: dict[str, Any], log_path: str | None, options: dict[str, Any]
             ) -> EpisodeSummary:
    """Run one cell's episode and return its summary (the default ``episode_fn``;
    ``options``: the spec's :meth:`~SweepSpec.episode_options`, ``spend``: the
    sweep's :class:`~orgteams.agents.backends.spend.Spend`, if it has one, and
    ``on_tick``: ``(tick, limit)`` after every tick, in-process sweeps' progress)."""
    from orgteams.run import run_episode

    result = run_episode(config=cell_config(cell, log_path, options),
                         pool=_worker_pool(options.get("spend")),
                         on_tick=options.get("on_tick"))
    return result.summary


def _execute(episode_fn: Callable, cell: dict[str, Any], log_path: str | None,
             options: dict[str, Any]) -> dict:
    """Worker side: never raises; returns the result row (without the write time), or
    ``{"status": "budget"}`` (no row) for a cell not started: the budget was reached."""
    spend = options.get("spend")
    if spend is not None and spend.reached():
        return {"status": "budget"}
    try:
        if log_path:
            Path(log_path).unlink(missing_ok=True)  # a retried cell starts a fresh log
        summary = episode_fn(cell, log_path, options)
        if not isinstance(summary, EpisodeSummary):  # a custom episode_fn's mapping
            summary = EpisodeSummary.from_dict(dict(summary))
        if not summary.complete:  # stopped early: not data, and retried on rerun
            from orgteams.organizations.rounds.status import why_stopped

            return {"status": "error", "summary": summary.to_dict(),
                    "error": f"episode {summary.episode_status}: {why_stopped(summary)}"}
        return {"status": "ok", "summary": summary.to_dict(), "error": None}
    except BaseException as exc:  # noqa: BLE001 - a failed episode must not stop the sweep
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return {"status": "error", "summary": None, "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=8)}


class _Progress:
    """A sweep's bar: :class:`orgteams.cli.progress.Progress` counted per finished cell."""

    def __init__(self, total: int, enabled: bool, label: str = "sweep"):
        from orgteams.cli.progress import Progress

        self.bar = Progress(total, label, enabled=enabled and total > 0)

    @property
    def done(self) -> int:
        return self.bar.done

    def update(self, row: dict) -> None:
        self.bar.update(self.bar.done + 1, f"{row['key']}: {row['status']}")

    def ticker(self, key: str) -> Callable[[int, int], None]:
        """``on_tick`` for the cell ``key`` played in this process: its tick of its limit
        beside the cells done (a model's episode can take many minutes)."""
        return lambda tick, limit: self.bar.update(self.bar.done, f"{key}: tick {tick}/{limit}")

    def close(self) -> None:
        self.bar.close()


def _ray_module():
    try:
        import ray
    except ImportError:
        raise MissingExtraError(RAY_HINT) from None
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
        episode_fn: ``(cell, log_path, options) -> summary``: an
            :class:`~orgteams.organizations.rounds.episode_summary.EpisodeSummary` (or
            its JSON object); defaults to :func:`run_cell`.
            It must be a module-level function when ``workers > 1`` (spawn pickles it).
        progress: A progress bar on stderr.

    Returns:
        ``{"out", "results", "cells", "skipped", "ran", "ok", "errors", "wall_seconds",
        "workers", "not_run", "budget_reached", "spend"}``: ``not_run`` cells were not
        started because the budget was reached (``budget_reached``); ``spend`` is the
        ledger's totals (None when nothing of the sweep has a price).

    Raises:
        UserError: A bad spec; ``max_cost`` with a model that has no price.
    """
    spec.validate()
    ray_mod = _ray_module() if ray else None
    episode_fn = episode_fn or run_cell
    if workers is None:
        workers = default_workers(spec)
    if workers < 1:
        raise UserError(f"workers must be at least 1, got {workers}")
    if spec.uses_local and workers > 1 and not ray:
        warnings.warn(f"{workers} workers with a 'local' backend start {workers} llama.cpp "
                      "servers (one per process)", stacklevel=2)
    out = Path(out)
    spend = sweep_spend(spec, out)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    lock = _lock(out)
    try:
        return _run_locked(spec, out, workers, ray_mod, episode_fn, progress, spend)
    finally:
        lock.release()


def sweep_spend(spec: SweepSpec, out: Path) -> Any:
    """The :class:`~orgteams.agents.backends.spend.Spend` of a sweep into ``out`` (its
    ledger ``out/spend.json``), or None when no model of it has a price and it has no
    ``max_cost``.

    Raises:
        UserError: ``max_cost`` with a model that has no known price.
    """
    from orgteams.agents.backends.spend import LEDGER, Spend, check_priced
    from orgteams.experiments.estimate import spec_models

    priced = check_priced(spec_models(spec), spec.price_per_mtok, spec.max_cost)
    if not (priced or spec.max_cost is not None):
        return None
    return Spend(spec.max_cost, out / LEDGER, spec.price_per_mtok)


def _lock(out: Path) -> Any:
    """The folder's lock, taken now or refused (another sweep is writing there)."""
    from filelock import FileLock, Timeout

    lock = FileLock(out / ".sweep.lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise UserError(f"{out} is in use by another sweep (lock file {lock.lock_file}); "
                        "wait for it to finish or use another --out") from None
    return lock


def _run_locked(spec: SweepSpec, out: Path, workers: int, ray_mod: Any, episode_fn: Callable,
                progress: bool, spend: Any) -> dict[str, Any]:
    ray = ray_mod is not None
    results = out / "results.jsonl"
    _drop_partial_tail(results)
    check_limits(spec, out)
    rows, _ = read_results(results)
    done = {r.get("key") or cell_key(r["cell"]) for r in rows if played(r)}
    cells = list(spec.cells())
    todo = [c for c in cells if cell_key(c) not in done]
    skipped = len(cells) - len(todo)
    options = spec.episode_options()
    counts = {"ok": 0, "error": 0, "budget": 0}
    if spend is not None:
        options["spend"] = spend
        if spend.reached():  # spent already (an earlier run): start nothing
            counts["budget"], todo = len(todo), []
    t0 = time.perf_counter()
    bar = _Progress(len(todo), progress)
    with results.open("a", encoding="utf-8") as fh:
        def write(cell: dict, outcome: dict) -> None:
            if outcome["status"] == "budget":  # not started: no row, the rerun plays it
                counts["budget"] += 1
                bar.update({"key": cell_key(cell), "status": "not run (budget reached)"})
                return
            row = {"key": cell_key(cell), "cell": cell, **outcome,
                   "limits": {k: getattr(spec, k) for k in LIMITS},
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
                try:
                    for cell in todo:
                        ticking = {**options, "on_tick": bar.ticker(cell_key(cell))}
                        write(cell, _execute(episode_fn, cell, log_of(cell), ticking))
                finally:
                    close_worker_pool()  # the sweep's backends end with it
            else:
                _run_pool(workers, todo, episode_fn, log_of, options, write)
        finally:
            bar.close()
        reached = _record_stop(fh, spend, skipped + counts["ok"], len(cells))
    return {"out": str(out), "results": str(results), "cells": len(cells),
            "skipped": skipped, "ran": len(cells) - skipped - counts["budget"],
            "ok": counts["ok"],
            "errors": counts["error"], "wall_seconds": round(time.perf_counter() - t0, 3),
            "workers": "ray" if ray else workers, "not_run": counts["budget"],
            "budget_reached": reached,
            "spend": None if spend is None else {**spend.totals, "max_cost": spend.max_cost,
                                                 "ledger": str(spend.ledger)}}


def _record_stop(fh: Any, spend: Any, done: int, cells: int) -> bool:
    """The stop line, when the budget was reached and cells are left; whether it was."""
    if spend is None:
        return False
    spend.refresh()  # what every worker spent
    if not spend.reached() or done >= cells:
        return False
    from orgteams.agents.backends.spend import MAX_COST, BudgetReached

    stop = BudgetReached(spend.spent, spend.max_cost, spend.ledger,
                         f"{done} of {cells} episodes")
    fh.write(json.dumps({"stop": MAX_COST, "detail": stop.line(), "spent_usd": spend.spent,
                         "max_cost": spend.max_cost,
                         "finished_at": datetime.now(timezone.utc).isoformat(
                             timespec="seconds")}) + "\n")
    fh.flush()
    return True


def _run_pool(workers: int, todo: list[dict], episode_fn: Callable, log_of: Callable,
              options: dict, write: Callable) -> None:
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=worker_init,
                               initargs=(os.getpid(),))
    try:
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
    except BaseException:
        # Ctrl-C (or a failed write): stop now. Shutting the pool down the usual way would
        # first play every queued cell; the cells not written are rerun by the next sweep.
        # SIGTERM runs a worker's exit hooks (sweep_workers: its servers stop with it).
        # The executor has no public way to stop its workers.
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


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


__all__ = ["SweepSpec", "cell_key", "check_limits", "parse_seeds", "played", "read_results",
           "run_cell", "run_sweep", "spec_from_lists"]
