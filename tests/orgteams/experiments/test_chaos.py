"""Chaos: a sweep of LLM teams against a server that injects every transport fault.

The fault server answers 30% of chat requests with a 500, a 429, a hang (past the
client's timeout), a body cut off mid-reply, an HTML page, a dropped connection, or
assistant text that is not JSON. Nothing may crash, every injected fault must be in
some decision record (a failed attempt of its kind, or a rejected reply; the server's
count and the logs' count agree per kind), a transient 500 must never downgrade the
structured mode, and no row may be ``ok`` unless its episode played. Then the server
dies for good, and then it answers a run of text that is not JSON: the episode that
gets nothing valid stops as an error row; the one after the run plays.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from doubles import read_dicts
from fault_server import INVALID_TEXT, FaultServer  # noqa: E402  (needs the path above)

from orgteams.experiments.sweep import SweepSpec, read_results, run_sweep

pytest.importorskip("openai")
pytest.importorskip("tenacity")

# How each injected fault must look in the decision records: (kind, status, error class).
EXPECTED = {
    "http500": ("http", 500, "InternalServerError"),
    "http429": ("http", 429, "RateLimitError"),
    "timeout": ("timeout", None, "DeadlineExceeded"),  # our per-request deadline
    "truncated": ("protocol", None, "JSONDecodeError"),
    "non_json": ("protocol", None, "UnexpectedBody"),
    "drop": ("connection", None, "APIConnectionError"),
}
MAX_ROUNDS = 2


def _decisions(out: Path) -> list[dict]:
    return [r for log in sorted((out / "logs").glob("*.jsonl")) for r in read_dicts(log)
            if r.get("phase")]


def _check_played(out: Path, row: dict) -> None:
    """An ``ok`` row's episode really played: its log ends in a complete summary, the
    row's summary is that one, and its model gave valid decisions."""
    from orgteams.experiments.sweep import cell_log_name

    records = list(read_dicts(out / "logs" / cell_log_name(row["cell"])))
    last = records[-1]
    assert last["record"] == "summary" and last["episode_status"] == "complete", row["key"]
    assert last["stop_reason"] in ("goal met", "max rounds", "max ticks"), row["key"]
    assert last["fallback_rate"] == row["summary"]["fallback_rate"] < 1.0, row["key"]
    assert any(r.get("parsed") is not None for r in records if r.get("replies")), row["key"]


@pytest.fixture
def chaos(monkeypatch):
    with FaultServer("chaos", reply_text=None, delay=5.0, fault_rate=0.3, seed=7) as server:
        monkeypatch.setenv("ORGTEAMS_BASE_URL", server.base_url)
        monkeypatch.setenv("ORGTEAMS_API_KEY", "sk-chaos")
        # the hang outlasts the timeout; a real reply on a busy machine does not
        monkeypatch.setenv("ORGTEAMS_TIMEOUT", "3")
        monkeypatch.setenv("ORGTEAMS_MAX_RETRIES", "1")
        yield server


# Two seeds bring up every fault kind several times (about 20 faults) in the default
# run; five (about 50, each hang a 3 s timeout) are the slow run's.
@pytest.mark.parametrize("seeds", [2, pytest.param(5, marks=pytest.mark.slow)])
def test_chaos_sweep_records_every_fault_and_marks_only_played_rows_ok(tmp_path, chaos, seeds):
    # Two worker processes, each with its own backend (configured by the environment).
    # A model name of its own: run_episode keeps one backend per spec per process.
    spec = SweepSpec(tasks=("prepare_afternoon_tea",), layouts=("studio",),
                     organizations=("none", "leader"), agents=(3,),
                     backends=("openai:chaos-model",), seeds=tuple(range(seeds)),
                     max_rounds=MAX_ROUNDS)
    cells = 2 * seeds
    out = run_sweep(spec, tmp_path, workers=2, progress=False)
    assert out["ran"] == cells and out["ok"] + out["errors"] == cells

    # Every injected fault is a failed attempt of its own kind in the logs, and every
    # request the server saw is an attempt.
    decisions = _decisions(tmp_path)
    attempts = [a for r in decisions for a in r.get("attempts") or []]
    injected = Counter(f["fault"] for f in chaos.injected)
    bad_text = injected.pop("invalid_json")
    assert set(injected) == set(EXPECTED) and bad_text > 0  # every kind came up
    recorded = Counter((a["kind"], a["status"], a["error"]) for a in attempts if a["kind"])
    assert recorded == Counter({EXPECTED[f]: n for f, n in injected.items()})
    assert len(attempts) == len(chaos.requests)
    assert sum(1 for a in attempts if a["kind"] is None) == len(chaos.requests) - sum(
        injected.values())
    # a reply that is not JSON is an answered request whose reply was rejected
    assert sum(r["replies"].count(INVALID_TEXT) for r in decisions
               if r.get("replies")) == bad_text

    rows, bad = read_results(tmp_path / "results.jsonl")
    assert bad == 0 and len(rows) == cells
    for row in rows:
        s = row["summary"]
        # ok only when the episode played to its end; nothing silently downgraded
        assert (row["status"] == "ok") == (s["episode_status"] == "complete"), row["key"]
        assert s["structured_downgrades"] == []
        if row["status"] == "ok":
            assert s["rounds"] == MAX_ROUNDS or s["success"]
            _check_played(tmp_path, row)
        else:
            assert row["error"].startswith("episode error: 3 model calls in a row failed")
            assert s["stop_reason"] == "transport failures"
    assert sum(r["summary"]["failed_requests"] for r in rows) == sum(injected.values())

    # Then the server dies for good: the new cells stop early as error rows (retried on
    # a rerun), and the finished ones are skipped.
    chaos.fault_rate, chaos.faults = 1.0, ("drop",)
    more = SweepSpec(**{**spec.to_dict(), "seeds": list(range(seeds + 1))})
    again = run_sweep(more, tmp_path, workers=1, progress=False)
    assert again["skipped"] == out["ok"] and again["ok"] == 0
    rows, _ = read_results(tmp_path / "results.jsonl")
    dead = [r for r in rows[cells:] if r["cell"]["seed"] == seeds]
    assert len(dead) == 2 and all(r["status"] == "error" for r in dead)
    for r in dead:
        s = r["summary"]
        assert s["episode_status"] == "error" and s["backend_fallbacks"] == 3
        assert s["failed_requests_by_kind"] == {"connection": 6}  # 3 calls x 2 requests
        assert r["error"] == ("episode error: 3 model calls in a row failed after retries "
                              "(last: connection: connection failed to "
                              f"{chaos.base_url})")

    # Then the server comes back, but its first 16 replies are text that is not JSON:
    # the first episode gets nothing valid (4 calls in a row, here) and is an error row,
    # never averaged; the second gets the end of the run (2 calls) and then plays.
    chaos.fault_rate = 0.0
    chaos.queue.extend(["invalid_json"] * 16)
    garbage = SweepSpec(**{**spec.to_dict(), "seeds": [0], "max_invalid_replies": 4})
    out = run_sweep(garbage, tmp_path / "garbage", workers=1, progress=False)
    assert (out["ok"], out["errors"]) == (1, 1) and chaos.queue == []
    rows = {r["cell"]["organization"]: r for r in read_results(
        tmp_path / "garbage" / "results.jsonl")[0]}
    bad, played = rows["none"], rows["leader"]
    assert bad["status"] == "error" and bad["summary"]["stop_reason"] == "invalid replies"
    assert bad["error"] == ("episode error: 4 model calls in a row gave no valid reply "
                            "(last: it is not a JSON object)")
    assert bad["summary"]["fallback_rate"] == 1.0
    assert played["status"] == "ok" and 0.0 < played["summary"]["fallback_rate"] < 1.0
    assert played["summary"]["invalid_reply_fallbacks"] == 2
    _check_played(tmp_path / "garbage", played)

def test_chaos_with_stalls_and_floods_keeps_every_record_capped(tmp_path, monkeypatch):
    # Issue 24: bodies trickled past the deadline, 1 MB replies and 1 MB error bodies,
    # among plain 500s. Each is recorded as what it was, nothing stored is bigger than
    # its cap, and no call outlives its deadline.
    from orgteams.agents.backends.redact import MAX_REPLY_CHARS
    from orgteams.agents.backends.retry import MAX_DETAIL_CHARS

    with FaultServer("chaos", reply_text=None, fault_rate=0.3, seed=3, trickle_interval=0.5,
                     faults=("trickle", "big_reply", "big_error", "http500")) as server:
        monkeypatch.setenv("ORGTEAMS_BASE_URL", server.base_url)
        monkeypatch.setenv("ORGTEAMS_API_KEY", "sk-chaos")
        monkeypatch.setenv("ORGTEAMS_TIMEOUT", "3")
        monkeypatch.setenv("ORGTEAMS_MAX_RETRIES", "1")
        spec = SweepSpec(tasks=("prepare_afternoon_tea",), layouts=("studio",),
                         organizations=("none",), agents=(3,),
                         backends=("openai:flood-model",), seeds=tuple(range(4)),
                         max_rounds=MAX_ROUNDS)
        out = run_sweep(spec, tmp_path, workers=2, progress=False)
    assert out["ran"] == 4 and out["ok"] + out["errors"] == 4
    injected = Counter(f["fault"] for f in server.injected)
    assert set(injected) == {"trickle", "big_reply", "big_error", "http500"}

    decisions = _decisions(tmp_path)
    attempts = [a for r in decisions for a in r.get("attempts") or []]
    assert len(attempts) == len(server.requests)
    failed = Counter((a["kind"], a["status"], a["error"]) for a in attempts if a["kind"])
    assert failed == Counter({("timeout", None, "DeadlineExceeded"): injected["trickle"],
                              ("http", 500, "InternalServerError"):
                                  injected["big_error"] + injected["http500"]})
    assert all(a["latency"] < 3 + 2 for a in attempts)  # the deadline, plus slack
    assert all(len(a["detail"]) <= MAX_DETAIL_CHARS for a in attempts)
    # every 1 MB reply is recorded once, cut, with its full length noted
    replies = [text for r in decisions for text in r.get("replies") or []]
    cut = [t for t in replies if " [reply cut at 100,000 characters; it had 1,0" in t]
    assert len(cut) == injected["big_reply"]
    assert all(len(t) <= MAX_REPLY_CHARS + 80 for t in replies)

    rows, bad = read_results(tmp_path / "results.jsonl")
    assert bad == 0 and len(rows) == 4
    for row in rows:  # ok only when the episode played to its end
        assert (row["status"] == "ok") == (row["summary"]["episode_status"] == "complete")
