"""--max-cost against a priced fake server: ``orgteams sweep``, ``reflect`` (and
``reflect --evaluate``), ``experiment``
and ``run`` stop cleanly when the spend of their model calls reaches the budget (finished
work kept, the stop recorded, one line, exit 3), refuse to go on at the same budget
without calling the model, and go on to the end with a higher one without replaying
what finished.

The fault server reports 11 prompt and 5 completion tokens a reply; at
``--price-per-mtok 1000,2000`` a call costs exactly $0.021, so what a run spent is the
server's request count times that.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from doubles import log_dicts
from fault_server import FaultServer

from orgteams.agents.backends.spend import usd
from orgteams.cli.main import main
from orgteams.experiments.sweep import read_results
from orgteams.organizations.rounds.episode_log import read_log

pytest.importorskip("openai")
pytest.importorskip("tenacity")

CALL = 0.021  # USD of one reply: (11 * 1000 + 5 * 2000) / 1e6
PRICE = ["--price-per-mtok", "1000,2000"]
AGENTS = 2  # the calls of one stage: how far past its budget a run may go


@pytest.fixture
def server(monkeypatch):
    with FaultServer("ok", reply_text=None) as srv:
        monkeypatch.setenv("ORGTEAMS_BASE_URL", srv.base_url)
        monkeypatch.setenv("ORGTEAMS_API_KEY", "sk-priced")
        monkeypatch.delenv("ORGTEAMS_PRICES", raising=False)
        yield srv


def _line(capsys) -> tuple[str, list[str]]:
    """The last stderr line and all of them."""
    err = capsys.readouterr().err.strip().splitlines()
    return err[-1], err


def _stop(command: str, spent_calls: int, budget: str, out: Path, done: str) -> str:
    return (f"orgteams {command}: budget reached: spent {usd(spent_calls * CALL)} of "
            f"--max-cost {budget} (spend in {out / 'spend.json'}); {done} done; rerun with a "
            "higher --max-cost to go on")


def _spent(out: Path) -> float:
    return json.loads((out / "spend.json").read_text())["spent_usd"]


def test_a_sweep_stops_at_its_budget_and_resumes_to_the_end(server, tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = ["sweep", "--orgs", "none,leader", "--layouts", "studio", "--agents", "2",
            "--backend", "openai:fake-model", "--seeds", "2", "--max-rounds", "2",
            "--out", str(out), "--quiet", *PRICE]
    assert main([*argv, "--max-cost", "0.2"]) == 3
    line, err = _line(capsys)
    assert err[0].startswith("cost estimate: 4 episodes, ")
    rows, _ = read_results(out / "results.jsonl")
    ok = [r for r in rows if r["status"] == "ok"]
    stopped = [r for r in rows if r["status"] == "error"]
    calls = len(server.requests)
    assert line == _stop("sweep", calls, "$0.2000", out, f"{len(ok)} of 4 episodes")
    assert 0.2 <= calls * CALL < 0.2 + AGENTS * CALL  # at most one stage past it
    assert _spent(out) == pytest.approx(calls * CALL)
    # the episode running when the budget was reached: an error row, retried later
    assert [r["error"] for r in stopped] == ["episode interrupted: max cost"]
    assert stopped[0]["summary"]["stop_reason"] == "max cost"
    assert len(ok) + len(stopped) < 4  # the cells after it never started
    last = json.loads((out / "results.jsonl").read_text().splitlines()[-1])
    assert last["stop"] == "max cost" and last["detail"] == line.split(": ", 1)[1]
    first_rows = {r["key"]: r["finished_at"] for r in ok}

    # the same budget: refused at once, no model called
    assert main([*argv, "--max-cost", "0.2"]) == 3
    assert _line(capsys)[0] == line
    assert len(server.requests) == calls

    # a higher budget goes on where it stopped
    assert main([*argv, "--max-cost", "10"]) == 0
    err = capsys.readouterr().err
    assert f"cost estimate: {4 - len(ok)} episodes ({len(ok)} done before), " in err
    rows, _ = read_results(out / "results.jsonl")
    ok_keys = [r["key"] for r in rows if r["status"] == "ok"]
    assert sorted(ok_keys) == sorted(set(ok_keys)) and len(ok_keys) == 4
    assert {r["key"]: r["finished_at"] for r in rows
            if r["key"] in first_rows and r["status"] == "ok"} == first_rows
    assert _spent(out) == pytest.approx(len(server.requests) * CALL)


def test_a_sweep_with_workers_shares_one_budget(server, tmp_path, capsys):
    """Two worker processes charge one ledger: the sweep stops near the budget, not at
    twice it."""
    out = tmp_path / "sweep"
    argv = ["sweep", "--orgs", "none,leader", "--layouts", "studio", "--agents", "2",
            "--backend", "openai:fake-model", "--seeds", "3", "--max-rounds", "2",
            "--out", str(out), "--quiet", "--workers", "2", *PRICE, "--max-cost", "0.2"]
    assert main(argv) == 3
    line, _ = _line(capsys)
    calls = len(server.requests)
    rows, _ = read_results(out / "results.jsonl")
    done = sum(r["status"] == "ok" for r in rows)
    assert line == _stop("sweep", calls, "$0.2000", out, f"{done} of 6 episodes")
    assert 0.2 <= calls * CALL < 0.2 + 2 * AGENTS * CALL  # a stage past it in each worker


def test_reflect_stops_at_its_budget_and_resumes_to_the_end(server, tmp_path, capsys):
    out = tmp_path / "reflect"
    argv = ["reflect", "--backend", "openai:fake-model", "--critic", "heuristic",
            "--coordinator", "heuristic", "--layout", "studio", "--agents", "2",
            "--iterations", "3", "--episodes-per-iteration", "1", "--max-rounds", "2",
            "--out", str(out), "--json", *PRICE]
    assert main([*argv, "--max-cost", "0.4"]) == 3
    line, err = _line(capsys)
    assert err[0].startswith("cost estimate: ")
    finished = len((out / "history.jsonl").read_text().splitlines())
    calls = len(server.requests)
    assert 1 <= finished < 3
    assert line == _stop("reflect", calls, "$0.4000", out, f"{finished} of 3 iterations")
    assert 0.4 <= calls * CALL < 0.4 + AGENTS * CALL
    kept = (out / "iteration_0" / "summary.json").read_text()

    assert main([*argv, "--max-cost", "0.4"]) == 3
    assert _line(capsys)[0] == line
    assert len(server.requests) == calls  # not even the pending decision was asked

    assert main([*argv, "--max-cost", "100"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["iterations_done"] == 3 and result["resumed_from"] == finished
    assert [h["iteration"] for h in result["history"]] == [0, 1, 2]
    assert (out / "iteration_0" / "summary.json").read_text() == kept  # not played again
    assert _spent(out) == pytest.approx(len(server.requests) * CALL)


TINY_SWEEP = """description: a small sweep recipe
kind: sweep
baseline: none
sweep:
  tasks: [prepare_afternoon_tea]
  layouts: [studio]
  organizations: [none, leader]
  agents: [2]
  backends: [planner]
  seeds: 2
  max_rounds: 2
"""
TINY_REFLECT = """description: a small reflect recipe
kind: reflect
organization: leader
task: prepare_afternoon_tea
layout: studio
agents: 2
backend: planner
critic: heuristic
coordinator: heuristic
iterations: 2
episodes_per_iteration: 1
heldout_seeds: 2
variants:
  with_critic: {use_critic: true, max_rounds: 2}
  without_critic: {use_critic: false, max_rounds: 2}
"""
TINY_GENERALIZE = """description: a small generalization recipe
kind: generalize
organization: leader
task: prepare_afternoon_tea
layout: studio
agents: 2
backend: planner
critic: heuristic
coordinator: heuristic
iterations: 2
episodes_per_iteration: 1
heldout_seeds: 2
max_rounds: 2
groups:
  hard: [read_book]
  easy: [put_fridge]
"""


@pytest.fixture
def recipes(tmp_path, monkeypatch):
    folder = tmp_path / "recipes"
    folder.mkdir()
    (folder / "tiny-sweep.yaml").write_text(TINY_SWEEP)
    (folder / "tiny-reflect.yaml").write_text(TINY_REFLECT)
    (folder / "tiny-generalize.yaml").write_text(TINY_GENERALIZE)
    monkeypatch.setattr("orgteams.experiments.recipes._recipes",
                        lambda: {p.stem: p for p in sorted(folder.glob("*.yaml"))})


def test_a_sweep_recipe_stops_at_its_budget_and_resumes_to_the_end(server, recipes,
                                                                   tmp_path, capsys):
    out = tmp_path / "exp"
    argv = ["experiment", "tiny-sweep", "--backend", "openai:fake-model", "--out", str(out),
            "--no-progress", *PRICE]
    assert main([*argv, "--max-cost", "0.2"]) == 3
    line, _ = _line(capsys)
    rows, _ = read_results(out / "results.jsonl")
    done = sum(r["status"] == "ok" for r in rows)
    calls = len(server.requests)
    assert line == _stop("experiment", calls, "$0.2000", out, f"{done} of 4 episodes")
    assert not (out / "table.md").exists()  # no table of a part of the recipe

    assert main([*argv, "--max-cost", "0.2"]) == 3
    assert _line(capsys)[0] == line and len(server.requests) == calls

    assert main([*argv, "--max-cost", "10"]) == 0
    table = json.loads((out / "table.json").read_text())
    assert sorted((r["organization"], r["n"]) for r in table["rows"]) == [
        ("leader", 2), ("none", 2)]
    rows, _ = read_results(out / "results.jsonl")
    ok_keys = [r["key"] for r in rows if r["status"] == "ok"]
    assert len(ok_keys) == len(set(ok_keys)) == 4  # no finished row played again
    assert "max_cost: 10.0" in (out / "spec.yaml").read_text()


def test_a_reflect_recipe_stops_at_its_budget_and_resumes_to_the_end(server, recipes,
                                                                     tmp_path, capsys):
    out = tmp_path / "exp"
    argv = ["experiment", "tiny-reflect", "--backend", "openai:fake-model", "--out", str(out),
            "--no-progress", *PRICE]
    assert main([*argv, "--max-cost", "0.4"]) == 3
    line, _ = _line(capsys)
    calls = len(server.requests)
    finished = len((out / "with_critic" / "history.jsonl").read_text().splitlines())
    assert line == _stop("experiment", calls, "$0.4000", out, f"{finished} of 2 iterations")

    assert main([*argv, "--max-cost", "100"]) == 0
    capsys.readouterr()
    table = json.loads((out / "table.json").read_text())
    assert [r["variant"] for r in table["rows"]] == ["with_critic", "without_critic"]
    assert all(r["n"] == 2 for r in table["rows"])
    calls = len(server.requests)
    # done: a rerun plays nothing, not even the held-out evaluations
    assert main([*argv, "--max-cost", "100"]) == 0
    assert len(server.requests) == calls
    assert _spent(out) == pytest.approx(calls * CALL)


def test_run_stops_its_episode_at_the_budget(server, tmp_path, capsys):
    log = tmp_path / "ep.jsonl"
    assert main(["run", "--backend", "openai:fake-model", "--layout", "studio", "--agents",
                 "2", "--max-rounds", "5", "--log", str(log), "--quiet", *PRICE,
                 "--max-cost", "0.05"]) == 3
    line, _ = _line(capsys)
    summary = [r for r in log_dicts(read_log(log)) if r.get("record") == "summary"][0]
    assert (summary["episode_status"], summary["stop_reason"]) == ("interrupted", "max cost")
    calls = len(server.requests)
    assert line == (f"orgteams run: budget reached: spent {usd(calls * CALL)} of --max-cost "
                    f"$0.0500; the episode stopped at round {summary['rounds']}; log {log}")
    assert 0.05 <= calls * CALL < 0.05 + AGENTS * CALL


@pytest.mark.parametrize("command", [
    ["sweep", "--out", "{out}"],
    ["reflect", "--critic", "heuristic", "--coordinator", "heuristic", "--out", "{out}"],
    ["run"],
])
def test_a_budget_with_a_model_without_price_is_bad_input(server, tmp_path, capsys, command):
    argv = [a.replace("{out}", str(tmp_path / "out")) for a in command]
    assert main([*argv, "--backend", "openai:my-model", "--max-cost", "1"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"orgteams {argv[0]}: error: --max-cost: no price for model 'my-model' "
        "(openai:my-model); give --price-per-mtok IN,OUT or add it to a price table named by "
        "$ORGTEAMS_PRICES")
    assert server.requests == [] and not (tmp_path / "out" / "spend.json").exists()


def test_a_sweep_spec_carries_the_budget_and_the_price(server, tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text("organizations: [none]\nlayouts: [studio]\nagents: [2]\n"
                    "backends: ['openai:fake-model']\nseeds: 2\nmax_rounds: 2\n"
                    "max_cost: 0.1\nprice_per_mtok: [1000, 2000]\n")
    out = tmp_path / "sweep"
    assert main(["sweep", "--spec", str(spec), "--out", str(out), "--quiet"]) == 3
    line, _ = _line(capsys)
    done = sum(r["status"] == "ok" for r in read_results(out / "results.jsonl")[0])
    assert line == _stop("sweep", len(server.requests), "$0.1000", out,
                         f"{done} of 2 episodes")
    # a flag overrides the spec's budget
    assert main(["sweep", "--spec", str(spec), "--out", str(out), "--quiet",
                 "--max-cost", "10"]) == 0


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("max_cost", "-1", "must be a positive number of USD, got -1"),
    ("price_per_mtok", "[1]", "must be IN,OUT: USD per 1 million prompt and completion "
                              "tokens, got [1]"),
])
def test_a_bad_budget_in_a_spec_names_file_and_field(tmp_path, capsys, field, value, problem):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"{field}: {value}\n")
    assert main(["sweep", "--spec", str(spec), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"orgteams sweep: error: {spec}: sweep spec field '{field}' {problem}")


def test_run_episode_keeps_a_budget_only_it_can_meter(server):
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.errors import UserError
    from orgteams.run import run_episode

    with pytest.raises(UserError, match=re.escape(
            "max_cost: no price for model 'my-model' (openai:my-model); give --price-per-mtok "
            "IN,OUT or add it to a price table named by $ORGTEAMS_PRICES")):
        run_episode(backend="openai:my-model", layout="studio", max_cost=1.0, log_path=None)
    with BackendPool() as pool, pytest.raises(ValueError, match=re.escape(
            "max_cost and price_per_mtok meter the episode's own pool; give the pool a Spend "
            "instead (BackendPool(spend=Spend(max_cost)))")):
        run_episode(backend="openai:fake-model", max_cost=1.0, pool=pool, log_path=None)
    result = run_episode(backend="openai:fake-model", layout="studio", agents=2,
                         max_rounds=3, max_cost=0.05, price_per_mtok="1000,2000",
                         log_path=None)
    assert (result.summary["episode_status"], result.summary["stop_reason"]) == (
        "interrupted", "max cost")
    assert 0.05 <= len(server.requests) * CALL < 0.05 + AGENTS * CALL


def test_a_generalization_recipe_estimates_stops_at_its_budget_and_resumes(server, recipes,
                                                                          tmp_path, capsys):
    out = tmp_path / "exp"
    argv = ["experiment", "tiny-generalize", "--backend", "openai:fake-model", "--out",
            str(out), "--no-progress", *PRICE]
    assert main([*argv, "--max-cost", "0.3"]) == 3
    line, err = _line(capsys)
    assert line.startswith("orgteams experiment: budget reached: spent ")
    # the estimate counts the held-out episodes on both tasks (2 seeds x 2 organizations
    # x 2 tasks) beside the loop's (1, then 3 screened candidates)
    assert err[0].startswith("cost estimate: 12 episodes, "), err
    assert not (out / "table.md").exists()
    assert main([*argv, "--max-cost", "100"]) == 0
    capsys.readouterr()
    table = json.loads((out / "table.json").read_text())
    assert [(r["group"], r["task"], r["n"]) for r in table["rows"]] == [
        ("hard", "read_book", 2), ("hard", "all 1 hard tasks", 2),
        ("easy", "put_fridge", 2), ("easy", "all 1 easy tasks", 2)]
    calls = len(server.requests)
    assert main([*argv, "--max-cost", "100"]) == 0  # done: nothing plays again
    assert len(server.requests) == calls
    assert _spent(out) == pytest.approx(calls * CALL)


def test_a_recipes_mixed_team_is_estimated_stopped_and_resumed(server, recipes, tmp_path,
                                                               capsys):
    """A team composition (one priced member beside planners) is priced per member."""
    out = tmp_path / "exp"
    argv = ["experiment", "tiny-sweep", "--team", "mixed=1x openai:fake-model + 1x planner",
            "--out", str(out), "--no-progress", *PRICE]
    assert main([*argv, "--max-cost", "0.1"]) == 3
    line, err = _line(capsys)
    assert err[0].startswith("cost estimate: 4 episodes, ")
    assert line.startswith("orgteams experiment: budget reached: spent ")
    assert main([*argv, "--max-cost", "10"]) == 0
    table = json.loads((out / "table.json").read_text())
    assert sorted((r["team"], r["backend"], r["organization"], r["n"])
                  for r in table["rows"]) == [
        ("mixed", "openai:fake-model,planner", "leader", 2),
        ("mixed", "openai:fake-model,planner", "none", 2)]
    assert _spent(out) == pytest.approx(len(server.requests) * CALL)


def test_reflect_evaluate_stops_at_its_budget_and_resumes_to_the_end(server, tmp_path,
                                                                     capsys):
    """``reflect --evaluate`` plays the run's priced team: it prints its estimate, stops at
    the budget (the run folder's ledger, the loop's spend included) with the finished
    held-out episodes kept and the stop recorded, and a higher budget plays the rest."""
    out = tmp_path / "reflect"
    assert main(["reflect", "--backend", "openai:fake-model", "--critic", "heuristic",
                 "--coordinator", "heuristic", "--layout", "studio", "--agents", "2",
                 "--iterations", "1", "--episodes-per-iteration", "1", "--max-rounds", "2",
                 "--out", str(out), "--json", *PRICE]) == 0
    capsys.readouterr()
    loop = len(server.requests)  # the calls of one episode of this team
    budget = (loop + 1.5 * loop) * CALL  # the loop's, then a held-out episode and a half
    argv = ["reflect", "--out", str(out), "--evaluate", "2", "--json", *PRICE]
    assert main([*argv, "--max-cost", str(budget)]) == 3
    line, err = _line(capsys)
    assert err[0].startswith("cost estimate: 4 episodes, ")
    assert err[-2] == (f"  --max-cost {usd(budget)}: the run stops cleanly when the spend "
                       "reaches it (the estimate is above it)")
    calls = len(server.requests)
    episodes = out / "evaluation" / "episodes.jsonl"
    rows = [json.loads(x) for x in episodes.read_text().splitlines()]
    kept = [r for r in rows if "cost" in r]
    # task|layout|arm|organization digest|seed: the start's first held-out episode
    assert len(kept) == 1 and kept[0]["key"].split("|")[2] == "start"
    assert line == _stop("reflect", calls, usd(budget), out, "1 of 4 held-out episodes")
    assert rows[-1]["stop"] == "max cost" and rows[-1]["detail"] == line.split(": ", 1)[1]
    assert budget <= calls * CALL < budget + AGENTS * CALL
    assert not (out / "evaluation.json").exists()  # no comparison of a part of it
    first_log = next((out / "evaluation").glob(f"*_start_s{kept[0]['seed']}.jsonl"))
    first = first_log.read_text()

    # the same budget: refused at once, no model called
    assert main([*argv, "--max-cost", str(budget)]) == 3
    assert _line(capsys)[0] == line
    assert len(server.requests) == calls

    # a higher budget plays the 3 episodes left, not the finished one
    assert main([*argv, "--max-cost", "10"]) == 0
    captured = capsys.readouterr()
    assert "cost estimate: 3 episodes (1 done before), " in captured.err
    report = json.loads(captured.out)
    assert [(r["n"], len(r["start_costs"]), len(r["best_costs"])) for r in report["rows"]] == [
        (2, 2, 2)]
    assert report["rows"][0]["start_costs"][0] == kept[0]["cost"]
    assert first_log.read_text() == first  # not played again
    costs = [json.loads(x) for x in episodes.read_text().splitlines()]
    keys = [r["key"] for r in costs if "cost" in r]
    assert len(keys) == len(set(keys)) == 4
    assert len(server.requests) - calls == 3 * loop
    assert _spent(out) == pytest.approx(len(server.requests) * CALL)
    assert (out / "evaluation.json").is_file()
