"""orgteams sweep: parallel planner sweeps, resumable results, error rows, clear errors."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

import orgteams.experiments.sweep as sweep_mod
from orgteams.cli.main import main
from orgteams.errors import UserError
from orgteams.experiments.sweep import SweepSpec, cell_key, read_results, run_sweep

SPEC = SweepSpec(tasks=("prepare_afternoon_tea",), layouts=("studio",),
                 organizations=("none", "leader"), agents=(3,), backends=("planner",),
                 seeds=(0, 1, 2))


def rows_of(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_parallel_planner_sweep_writes_results_and_logs(tmp_path):
    out = run_sweep(SPEC, tmp_path, workers=2, progress=False)
    assert out["cells"] == 6 and out["ran"] == 6 and out["ok"] == 6 and out["errors"] == 0
    rows = rows_of(tmp_path)
    assert len(rows) == 6
    assert {r["key"] for r in rows} == {cell_key(c) for c in SPEC.cells()}
    for r in rows:
        assert r["status"] == "ok" and r["error"] is None
        assert r["summary"]["organization"] == r["cell"]["organization"]
        assert r["summary"]["seed"] == r["cell"]["seed"] and r["summary"]["ticks"] > 0
        assert Path(r["summary"]["log_path"]).parent == tmp_path / "logs"
        assert Path(r["summary"]["log_path"]).exists()
    # Same seed, same episode, whichever process ran it.
    again = sweep_mod.run_cell(dict(rows[0]["cell"]), None, {})
    assert again.ticks == rows[0]["summary"]["ticks"]


def _counting(calls: list):
    def fn(cell, log_path, options):
        calls.append(cell_key(cell))
        return {"ticks": 10 + cell["seed"], "success": True}
    return fn


def test_rerun_skips_every_finished_cell(tmp_path):
    calls: list[str] = []
    first = run_sweep(SPEC, tmp_path, workers=1, episode_fn=_counting(calls), progress=False)
    assert first["ran"] == 6 and len(calls) == 6
    calls.clear()
    second = run_sweep(SPEC, tmp_path, workers=1, episode_fn=_counting(calls), progress=False)
    assert calls == [] and second["ran"] == 0 and second["skipped"] == 6
    assert len(rows_of(tmp_path)) == 6
    # A bigger sweep over the same folder runs only the new cells.
    bigger = SweepSpec(**{**SPEC.to_dict(), "seeds": [0, 1, 2, 3]})
    third = run_sweep(bigger, tmp_path, workers=1, episode_fn=_counting(calls), progress=False)
    assert third["ran"] == 2 and sorted(calls) == sorted(
        cell_key(c) for c in bigger.cells() if c["seed"] == 3)


def test_failed_cell_is_an_error_row_and_retried_next_run(tmp_path):
    calls: list[str] = []

    def flaky(cell, log_path, options):
        calls.append(cell_key(cell))
        if cell["organization"] == "leader" and cell["seed"] == 1:
            raise RuntimeError("boom in the episode")
        return {"ticks": 5, "success": True}

    out = run_sweep(SPEC, tmp_path, workers=1, episode_fn=flaky, progress=False)
    assert out["ok"] == 5 and out["errors"] == 1
    err = [r for r in rows_of(tmp_path) if r["status"] == "error"]
    assert len(err) == 1 and err[0]["cell"]["seed"] == 1
    assert err[0]["error"] == "RuntimeError: boom in the episode" and err[0]["summary"] is None
    calls.clear()
    out = run_sweep(SPEC, tmp_path, workers=1, episode_fn=_counting(calls), progress=False)
    assert calls == [err[0]["key"]] and out["ok"] == 1 and out["skipped"] == 5


def failing_everywhere(cell, log_path, options):  # module level: picklable under spawn
    if cell["seed"] == 2:
        raise ValueError("bad cell")
    return {"ticks": 1, "success": True}


def test_failure_in_a_worker_process_is_an_error_row(tmp_path):
    out = run_sweep(SPEC, tmp_path, workers=2, episode_fn=failing_everywhere, progress=False)
    assert out["ok"] == 4 and out["errors"] == 2
    assert {r["error"] for r in rows_of(tmp_path) if r["status"] == "error"} == {
        "ValueError: bad cell"}


def test_truncated_last_line_is_tolerated(tmp_path):
    calls: list[str] = []
    run_sweep(SPEC, tmp_path, workers=1, episode_fn=_counting(calls), progress=False)
    results = tmp_path / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    lost = json.loads(lines[-1])["key"]
    results.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # a crash
    rows, bad = read_results(results)
    assert len(rows) == 5 and bad == 1
    calls.clear()
    out = run_sweep(SPEC, tmp_path, workers=1, episode_fn=_counting(calls), progress=False)
    assert calls == [lost] and out["ran"] == 1
    assert len(rows_of(tmp_path)) == 6  # every line parses again


@pytest.mark.parametrize(("field", "kw", "needle"), [
    ("organizations", {"organizations": ("none", "leadr")}, "Did you mean 'leader'?"),
    ("tasks", {"tasks": ("make_tea",)}, "make_tea"),
    ("layouts", {"layouts": ("studo",)}, "studo"),
    ("backends", {"backends": ("plannr",)}, "plannr"),
    ("backends", {"backends": ("human",)}, "human"),
    ("agents", {"agents": (0,)}, "team size"),
])
def test_bad_spec_names_the_field_before_any_episode(tmp_path, field, kw, needle):
    calls: list[str] = []
    spec = SweepSpec(**{**SPEC.to_dict(), **kw})
    with pytest.raises(ValueError, match=f"sweep spec field '{field}'") as info:
        run_sweep(spec, tmp_path, workers=1, episode_fn=_counting(calls), progress=False)
    assert needle in str(info.value)
    assert calls == [] and not (tmp_path / "results.jsonl").exists()


def test_yaml_spec_and_unknown_key(tmp_path):
    spec = SweepSpec.from_yaml(Path(sweep_mod.__file__).parents[2] / "assets" / "sweeps"
                               / "example.yaml")
    spec.validate()
    assert len(list(spec.cells())) == 60
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks: [put_fridge]\norgs: [none]\n")
    with pytest.raises(ValueError, match="unknown sweep spec field 'orgs'"):
        SweepSpec.from_yaml(bad)
    assert SweepSpec.from_dict({"seeds": "3-5"}).seeds == (3, 4, 5)
    assert SweepSpec.from_dict({"seeds": 2}).seeds == (0, 1)


def test_a_spec_built_in_python_takes_a_seed_count_and_refuses_a_bare_name(tmp_path):
    # seeds=2, the count the docstring promises, was "object of type 'int' has no len()"
    spec = SweepSpec(organizations=["leader"], seeds=2, max_rounds=1)
    assert spec.seeds == (0, 1)
    assert SweepSpec(seeds="3-4").seeds == (3, 4)
    run_sweep(spec, tmp_path, workers=1, progress=False)
    rows, _ = read_results(tmp_path / "results.jsonl")
    assert sorted(r["summary"]["seed"] for r in rows) == [0, 1]
    with pytest.raises(UserError) as info:
        SweepSpec(seeds=0)
    assert str(info.value) == "SweepSpec: sweep spec field 'seeds': need at least one seed"
    with pytest.raises(UserError) as info:
        SweepSpec(organizations="leader").validate()
    assert str(info.value) == "sweep spec field 'organizations': must be a list, got 'leader'"


def test_ray_without_ray_is_a_clear_error(tmp_path, monkeypatch, capsys):
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    calls: list[str] = []
    with pytest.raises(ImportError, match=r'pip install "orgteams\[ray\]"'):
        run_sweep(SPEC, tmp_path, ray=True, episode_fn=_counting(calls), progress=False)
    assert calls == []
    assert main(["sweep", "--out", str(tmp_path / "r"), "--ray", "--json"]) == 2
    cap = capsys.readouterr()
    assert "orgteams sweep: error: Ray is not installed" in cap.err and cap.out == ""


def test_cli_sweep_json_and_resume(tmp_path, capsys):
    argv = ["sweep", "--tasks", "prepare_afternoon_tea", "--layouts", "studio", "--orgs",
            "none,leader", "--agents", "3", "--backend", "planner", "--seeds", "2", "--out",
            str(tmp_path), "--workers", "2", "--json"]
    assert main(argv) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and json.loads(out[0])["ok"] == 4
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["ran"] == 0 and again["skipped"] == 4


def test_cli_bad_org_is_one_clear_line(tmp_path, capsys):
    assert main(["sweep", "--orgs", "none,leadr", "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "orgteams sweep: error: command line: argument --orgs: Unknown organization" in err
    assert "Traceback" not in err and not (tmp_path / "results.jsonl").exists()


def test_ray_sweep_runs_every_cell_like_local_processes(tmp_path):
    ray = pytest.importorskip("ray", reason="needs the ray extra")  # CI does not install it
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True,
             log_to_driver=False)
    try:
        spec = SweepSpec(**{**SPEC.to_dict(), "seeds": [0, 1]})
        out = run_sweep(spec, tmp_path, ray=True, progress=False)
        assert out["cells"] == out["ok"] == 4 and out["workers"] == "ray"
        for r in rows_of(tmp_path):
            assert r["status"] == "ok" and Path(r["summary"]["log_path"]).exists()
            local = sweep_mod.run_cell(dict(r["cell"]), None, {})
            assert local["ticks"] == r["summary"]["ticks"]  # same seed, same episode
        assert run_sweep(spec, tmp_path, ray=True, progress=False)["skipped"] == 4
    finally:
        ray.shutdown()


def test_episode_stopped_early_is_an_error_row_retried_next_run(tmp_path):
    # A dead model server ends an episode with episode_status "error": that row is
    # not ok (never skipped on rerun, never averaged), and it keeps its summary.
    calls: list[str] = []

    def dead_server(cell, log_path, options):
        calls.append(cell_key(cell))
        assert options["max_transport_failures"] == 3  # the spec's default reaches episodes
        assert options["max_invalid_replies"] == 10
        if cell["seed"] == 0:
            return {"ticks": 0, "success": False, "episode_status": "error",
                    "stop_reason": "3 model calls in a row failed after retries (last: x)"}
        return {"ticks": 5, "success": True, "episode_status": "complete", "stop_reason": None}

    out = run_sweep(SPEC, tmp_path, workers=1, episode_fn=dead_server, progress=False)
    assert out["ok"] == 4 and out["errors"] == 2
    err = [r for r in rows_of(tmp_path) if r["status"] == "error"]
    assert {r["cell"]["seed"] for r in err} == {0}
    assert err[0]["error"] == ("episode error: 3 model calls in a row failed after retries "
                               "(last: x)")
    assert err[0]["summary"]["episode_status"] == "error"
    calls.clear()
    out = run_sweep(SPEC, tmp_path, workers=1, episode_fn=_counting(calls), progress=False)
    assert sorted(calls) == sorted(r["key"] for r in err) and out["skipped"] == 4


@pytest.mark.parametrize("name", ["max_transport_failures", "max_invalid_replies"])
def test_spec_failure_limit_fields(tmp_path, name):

    spec = SweepSpec.from_dict({name: 5})
    assert getattr(spec, name) == 5
    with pytest.raises(UserError, match=re.escape(
            f"<spec>: sweep spec field '{name}' must be from 0 to 1000, got -1")):
        SweepSpec.from_dict({name: -1})


def test_cli_sweep_with_a_dead_server_exits_1_and_keeps_the_rows(tmp_path, monkeypatch,
                                                                   capsys):
    monkeypatch.setenv("ORGTEAMS_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens
    monkeypatch.setenv("ORGTEAMS_MAX_RETRIES", "0")
    argv = ["sweep", "--layouts", "studio", "--orgs", "none", "--backend",
            "openai:dead-sweep-model", "--seeds", "2", "--max-rounds", "2", "--workers", "1",
            "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"orgteams sweep: 2 of 2 episodes failed (status error in "
                       f"{tmp_path / 'results.jsonl'}; rerun the same command to retry them)")
    rows = rows_of(tmp_path)
    assert [(r["status"], r["summary"]["stop_reason"]) for r in rows] == [
        ("error", "transport failures")] * 2
    assert main(argv) == 1  # retried, failed again: two more rows, nothing lost
    assert len(rows_of(tmp_path)) == 4


def test_sweep_rows_of_a_model_that_never_answers_json_are_errors_report_skips_them(
        tmp_path, monkeypatch, capsys):
    pytest.importorskip("scipy")
    pytest.importorskip("matplotlib")

    sys.path.insert(0, str(Path(__file__).parents[2] / "agents"))
    from fault_server import FaultServer

    with FaultServer("invalid_json") as server:
        monkeypatch.setenv("ORGTEAMS_BASE_URL", server.base_url)
        monkeypatch.setenv("ORGTEAMS_API_KEY", "k")
        assert main(["sweep", "--layouts", "studio", "--orgs", "none", "--backend", "planner",
                     "--backend", "openai:garbage-sweep-model", "--seeds", "2",
                     "--max-rounds", "3", "--max-invalid-replies", "4", "--workers", "1",
                     "--out", str(tmp_path), "--quiet"]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        "orgteams sweep: 2 of 4 episodes failed")
    rows = {(r["cell"]["backend"], r["cell"]["seed"]): r for r in rows_of(tmp_path)}
    for seed in (0, 1):
        ok, bad = rows[("planner", seed)], rows[("openai:garbage-sweep-model", seed)]
        assert ok["status"] == "ok" and ok["summary"]["fallback_rate"] == 0.0
        assert ok["summary"]["stop_reason"] in ("max rounds", "goal met")
        assert bad["status"] == "error" and bad["summary"]["stop_reason"] == "invalid replies"
        assert bad["error"] == ("episode error: 4 model calls in a row gave no valid reply "
                                "(last: it is not a JSON object)")
        assert bad["summary"]["fallback_rate"] == 1.0
    assert main(["report", str(tmp_path / "results.jsonl"), "--out", str(tmp_path / "rep"),
                 "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    by_backend = {g["backend"]: g for g in rep["groups"]}
    garbage, planner = by_backend["openai:garbage-sweep-model"], by_backend["planner"]
    assert (garbage["n"], garbage["errors"]) == (0, 2)
    assert garbage["metrics"]["fallback_rate"]["all_episodes"]["n"] == 0  # never averaged
    assert (planner["n"], planner["errors"]) == (2, 0)
    assert planner["metrics"]["fallback_rate"]["all_episodes"]["mean"] == 0.0
    assert sum(planner["stop_reasons"].values()) == 2
    assert sorted(f["stop_reason"] for f in rep["failed"]) == ["invalid replies"] * 2
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| invalid replies | episode error: 4 model calls in a row gave no valid reply" in md


def test_second_sweep_into_a_locked_folder_is_refused(tmp_path):
    from filelock import FileLock

    from orgteams.errors import UserError

    calls: list[str] = []
    with FileLock(tmp_path / ".sweep.lock"):  # another sweep is running there
        with pytest.raises(UserError, match=re.escape(
                f"{tmp_path} is in use by another sweep (lock file "
                f"{tmp_path / '.sweep.lock'}); wait for it to finish or use another --out")):
            run_sweep(SPEC, tmp_path, workers=1, episode_fn=_counting(calls), progress=False)
    assert calls == [] and not (tmp_path / "results.jsonl").exists()
    out = run_sweep(SPEC, tmp_path, workers=1, episode_fn=_counting(calls), progress=False)
    assert out["ran"] == 6  # released: the next sweep runs, and releases in turn
    assert run_sweep(SPEC, tmp_path, workers=1, episode_fn=_counting(calls),
                     progress=False)["skipped"] == 6


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")  # a zombie has exited


def _poll(done, seconds: float) -> None:
    """Check ``done()`` every 0.2 s until it holds or ``seconds`` have passed (a "must
    finish" guard with generous slack; the test asserts what it found)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not done():
        time.sleep(0.2)


@contextmanager
def _victim_sweep(tmp_path, **popen):
    """``sweep_victim.py`` sweeping into ``tmp_path`` with 2 workers: yields the sweep
    process and its workers' pids once both workers started. Leaves no sweep or worker
    behind, also when the test fails."""
    parent = subprocess.Popen([sys.executable, str(Path(__file__).with_name("sweep_victim.py")),
                               str(tmp_path)], **popen)
    pids_dir = tmp_path / "pids"
    workers: list[int] = []
    try:
        _poll(lambda: len(list(pids_dir.glob("*"))) >= 2, 60)
        workers += [int(p.name) for p in pids_dir.glob("*")]
        yield parent, workers
    finally:
        parent.kill()
        parent.communicate()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_workers_exit_when_the_sweep_process_is_killed(tmp_path):
    with _victim_sweep(tmp_path) as (parent, workers):
        assert len(workers) == 2 and all(_alive(w) for w in workers)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        _poll(lambda: not any(_alive(w) for w in workers), 20)
        assert not any(_alive(w) for w in workers)


def _sigint_as_at_a_terminal() -> None:
    # In the child before exec: a background job of a non-interactive shell starts with
    # SIGINT ignored (and Python then installs no KeyboardInterrupt handler).
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_ctrl_c_stops_a_sweep_and_its_workers_at_once(tmp_path):
    """Ctrl-C does not wait for the cells running (each sleeps 120 s here) or queued."""
    with _victim_sweep(tmp_path, stderr=subprocess.PIPE, text=True,
                       preexec_fn=_sigint_as_at_a_terminal) as (parent, workers):
        assert len(workers) == 2
        parent.send_signal(signal.SIGINT)
        # A "must stop" guard with generous slack: before the fix it took the cells' 120 s.
        _, err = parent.communicate(timeout=60)
        assert err.rstrip().endswith("KeyboardInterrupt"), err
        _poll(lambda: not any(_alive(w) for w in workers), 20)
        assert not any(_alive(w) for w in workers)
        assert not (tmp_path / "results.jsonl").read_text().strip()  # nothing half-played


SHOCKS = {"no_shock": [], "remove": ["remove:agent_1@2"],
          "rules": [{"kind": "regulate", "round": 2, "field": "protocol", "value": "shared"}],
          "priority": ["priority:put_fridge@2"]}


def test_sweep_spec_shock_conditions_are_a_dimension_and_reach_the_episode(tmp_path):
    spec = SweepSpec.from_dict({**SPEC.to_dict(), "organizations": ["sequential"],
                                "seeds": [0], "shocks": SHOCKS}, source="s.yaml")
    assert spec.shocks["rules"] == ("regulate:protocol=shared@2",)
    out = run_sweep(spec, tmp_path, workers=1, progress=False)
    assert out["cells"] == 4 and out["ok"] == 4
    rows = {r["cell"]["shocks"]: r for r in rows_of(tmp_path)}
    assert rows["remove"]["key"].endswith("|0|shocks=remove")
    assert rows["no_shock"]["summary"]["shocks"] == []
    assert rows["remove"]["summary"]["shocks"][0]["kind"] == "remove"
    assert rows["rules"]["summary"]["final_protocol"] == "shared"
    assert rows["priority"]["summary"]["final_task"] == "put_fridge"
    # a rerun skips them all: the condition is part of the key
    again = run_sweep(spec, tmp_path, workers=1, progress=False)
    assert again["ran"] == 0 and again["skipped"] == 4


@pytest.mark.parametrize(("shocks", "message"), [
    ({"a": ["kill:agent_1@2"]},
     "s.yaml: sweep spec field 'shocks.a[0]': malformed shock 'kill:agent_1@2': unknown "
     "kind 'kill'"),
    ({"a": [{"kind": "remove", "round": 1, "who": "agent_1"}]},
     "s.yaml: sweep spec field 'shocks.a[0]': unknown shock field 'who'"),
    ({"a": "remove:agent_1@2"}, "s.yaml: sweep spec field 'shocks.a' must be a list of shocks"),
    (["remove:agent_1@2"], "s.yaml: sweep spec field 'shocks' must map condition names"),
])
def test_bad_shock_in_a_spec_is_one_line_naming_file_and_field(shocks, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        SweepSpec.from_dict({"shocks": shocks}, source="s.yaml")


@pytest.mark.parametrize(("shocks", "message"), [
    ({"gone": ["remove:agent_7@2"]},
     "sweep spec field 'shocks.gone': shock agent 'agent_7' is not in the team"),
    ({"rules": ["regulate:protocol=bogus@2"]},
     "sweep spec field 'shocks.rules': regulate shock protocol='bogus': organization "
     "'none': field 'protocol': unknown protocol 'bogus'"),
    ({"goal": ["priority:put_frige@2"]},
     "sweep spec field 'shocks.goal': priority shock: Unknown task 'put_frige'"),
    ({"sub": ["substitute:agent_1=plannr@2"]}, "sweep spec field 'shocks.sub': "),
])
def test_bad_shock_values_fail_validation_before_any_episode(tmp_path, shocks, message):
    calls: list[str] = []
    spec = SweepSpec.from_dict({**SPEC.to_dict(), "shocks": shocks})
    with pytest.raises(ValueError, match=re.escape(message)):
        run_sweep(spec, tmp_path, workers=1, episode_fn=_counting(calls), progress=False)
    assert calls == []


def test_a_serial_sweep_closes_the_backend_pool_its_cells_shared(tmp_path, monkeypatch):
    from orgteams.agents.backends.pool import BackendPool

    closed = []
    monkeypatch.setattr(BackendPool, "close", lambda self: closed.append(len(self)))
    spec = SweepSpec(tasks=("prepare_afternoon_tea",), layouts=("studio",),
                     organizations=("leader",), agents=(2,), backends=("scripted",),
                     seeds=(0, 1), max_rounds=1)
    out = run_sweep(spec, tmp_path, workers=1, progress=False)
    assert out["ok"] == 2 and sweep_mod._WORKER_POOL == []
    assert closed == [1]  # one pool, one scripted backend shared by both cells, closed once


def test_rerun_with_other_round_or_tick_limits_is_refused_not_mixed(tmp_path, capsys):
    """A rerun into the same folder with --max-rounds 3 counted the uncapped episodes as
    done and played nothing, so spec.yaml said max_rounds 3 of rows that had none."""
    from dataclasses import replace

    small = replace(SPEC, organizations=("leader",), seeds=(0,))
    run_sweep(small, tmp_path, workers=1, progress=False)
    before = (tmp_path / "results.jsonl").read_text()
    assert [r["limits"] for r in rows_of(tmp_path)] == [{"max_rounds": None,
                                                         "max_ticks": None}]
    assert main(["sweep", "--tasks", "prepare_afternoon_tea", "--layouts", "studio",
                 "--orgs", "leader", "--agents", "3", "--backend", "planner", "--seeds", "1",
                 "--max-rounds", "3", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"orgteams sweep: error: {tmp_path / 'results.jsonl'}: its episodes played with "
        "max_rounds None, max_ticks None; this run asks max_rounds 3, max_ticks None, and "
        "would count them as done and mix both in one table: use another --out (or the "
        "same limits to resume)")
    assert (tmp_path / "results.jsonl").read_text() == before  # nothing played or written
    again = run_sweep(replace(small, seeds=(0, 1)), tmp_path, workers=1, progress=False)
    assert (again["skipped"], again["ok"]) == (1, 1)  # the same limits resume
    # an experiment refuses before its spec.yaml says what ran
    from orgteams.errors import UserError
    from orgteams.experiments.recipes import run_experiment

    run_experiment("paper1-behaviours", seeds=1, max_rounds=2, out=tmp_path / "e",
                   progress=False)
    spec = (tmp_path / "e" / "spec.yaml").read_text()
    with pytest.raises(UserError, match="this run asks max_rounds 3, max_ticks None"):
        run_experiment("paper1-behaviours", seeds=1, max_rounds=3, out=tmp_path / "e",
                       progress=False)
    assert (tmp_path / "e" / "spec.yaml").read_text() == spec


def test_an_in_process_sweep_shows_the_running_cells_ticks(tmp_path, capsys):
    """The bar moved only when a cell ended: a model's cell of many minutes (the default
    one worker with ``local``, every experiment recipe) showed 0% throughout."""
    from dataclasses import replace

    one = replace(SPEC, organizations=("leader",), seeds=(0,))
    key = cell_key(next(iter(one.cells())))
    run_sweep(one, tmp_path, workers=1, progress=True)
    lines = capsys.readouterr().err.splitlines()  # not a terminal: plain lines
    limit = rows_of(tmp_path)[0]["summary"]["step_limit"]
    assert lines[0] == f"sweep {key}: tick 1/{limit}: 0/1"  # while the cell plays
    assert lines[-1] == f"sweep {key}: ok: 1/1"
