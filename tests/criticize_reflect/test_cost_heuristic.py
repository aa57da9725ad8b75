"""The cost that cannot reward failure, episodes per iteration, held-out seeds, and the
offline heuristic Critic and Coordinator (issue 17, items 1 to 4)."""

from __future__ import annotations

import json
import re

import pytest

import orgteams.run
from orgteams.cli.main import main
from orgteams.criticize_reflect import reflect
from orgteams.criticize_reflect.coordinator import Trial
from orgteams.criticize_reflect.cost import CostModel, episode_cost
from orgteams.criticize_reflect.heuristic import (
    EDITS,
    HeuristicCoordinator,
    HeuristicCritic,
    problems_of,
)
from orgteams.errors import UserError
from orgteams.experiments.reflect import make_episode_fn, run_reflect
from orgteams.experiments.reflect_eval import evaluate_reflect, heldout_seeds, paired_comparison
from orgteams.organizations.rounds.episode_summary import EpisodeSummary
from orgteams.organizations.spec.library import load_organization


def test_a_failed_episode_costs_at_least_the_step_limit():
    assert episode_cost(81, 0.82) == pytest.approx(81.82)
    # the case: failing in 37 ticks used to cost less than succeeding in 81
    assert episode_cost(37, 0.82, success=False, step_limit=200) == pytest.approx(200.82)
    assert episode_cost(37, 2.0, success=False, step_limit=200, failure_penalty=50) == 252.0
    assert episode_cost(250, 1.0, 2.0, 3.0, success=False, step_limit=200) == 503.0
    model = CostModel(step_weight=1.0, token_weight=0.5, failure_penalty=10.0)
    ok = EpisodeSummary.from_dict({"ticks": 81, "comm_tokens_per_step": 4.0, "success": True,
                                   "step_limit": 200})
    failed = EpisodeSummary.from_dict({"ticks": 37, "comm_tokens_per_step": 4.0,
                                       "success": False, "step_limit": 200})
    assert model.cost(ok) == 83.0 and model.cost(failed) == 212.0
    unknown = EpisodeSummary.from_dict({"ticks": 37, "comm_tokens_per_step": 4.0})
    assert model.cost(unknown) == 39.0  # a summary without success counts as success
    assert model.mean_cost([ok, failed]) == 147.5
    assert model.to_dict()["failure_penalty"] == 10.0
    assert "max(ticks, step_limit)" in model.to_dict()["formula"]
    with pytest.raises(UserError, match=re.escape("failure_penalty must be a number >= 0, "
                                                  "got -1")):
        CostModel(failure_penalty=-1)


def fake(ticks_by_seed: dict[int, int], success: bool = True):
    def episode_fn(org, k):
        return [{"summary": {"ticks": t, "comm_tokens_per_step": 1.0, "num_agents": 3,
                             "success": success, "step_limit": 300, "seed": s},
                 "records": []} for s, t in ticks_by_seed.items()]
    return episode_fn


def test_an_iteration_costs_the_mean_of_its_episodes_and_records_the_formula(tmp_path):
    result = reflect(load_organization("leader"), fake({0: 50, 1: 70}, success=False),
                     HeuristicCritic(), HeuristicCoordinator(k=2), iterations=2,
                     out_dir=tmp_path, failure_penalty=5.0)
    row = result.history[0]
    assert row["cost"] == 306.0  # both failed: (300 + 1 + 5) each
    assert [e["seed"] for e in row["episodes"]] == [0, 1]
    assert [e["cost"] for e in row["episodes"]] == [306.0, 306.0]
    assert row["metrics"]["ticks"] == 60.0 and row["metrics"]["episodes"] == 2
    assert row["cost_model"]["failure_penalty"] == 5.0
    assert row["critique"]["codes"] == ["failure"]
    saved = json.loads((tmp_path / "iteration_0" / "summary.json").read_text())
    assert saved["cost_model"] == row["cost_model"]


def seeds_played(monkeypatch) -> list[int]:
    """From now on, the seed of every episode ``orgteams.run.run_episode`` plays (it still
    plays them), in order."""
    played: list[int] = []
    real = orgteams.run.run_episode

    def spy(config=None, **kw):
        played.append(orgteams.run.EpisodeConfig.merged(config, {
            k: v for k, v in kw.items() if k in orgteams.run.EpisodeConfig.model_fields},
            "run_episode").seed)
        return real(config, **kw)

    monkeypatch.setattr(orgteams.run, "run_episode", spy)
    return played


def test_episode_fn_plays_e_seeds_per_iteration(monkeypatch):
    played = seeds_played(monkeypatch)
    fn = make_episode_fn(layout="studio", backend="planner", seeds=[3, 4, 5, 6],
                         episodes_per_iteration=2)
    first = fn(load_organization("leader"), 0)
    fn(load_organization("leader"), 1)
    assert played == [3, 4, 5, 6]
    assert [r.summary.seed for r in first] == [3, 4]
    with pytest.raises(UserError, match=re.escape("episodes_per_iteration must be >= 1, got 0")):
        make_episode_fn(backend="planner", episodes_per_iteration=0)


def test_problems_come_from_metrics_and_agents():
    summary = {"metrics": {"success": False, "ticks": 300, "step_limit": 300,
                           "duplicate_rate": 0.3, "comm_tokens_per_step": 6.2,
                           "abstention_rate": 0.0, "fallback_count": 0},
               "agents": {"agent_1": {"actions": 10, "failed_actions": 4}}}
    assert [c for c, _ in problems_of(summary)] == ["failure", "duplicated_work",
                                                    "idle_agents", "chatter"]
    assert problems_of({"metrics": {"success": True, "comm_tokens_per_step": 1.0}}) == []


def test_heuristic_coordinator_edits_the_best_skips_played_and_obeys_governance():
    leader = load_organization("leader")
    critique = HeuristicCritic().criticize(
        leader, {"metrics": {"success": True, "comm_tokens_per_step": 7.0}}, 80.0)
    assert critique.codes == ["chatter"]
    history = [Trial(0, leader, 80.0, {}, critique)]
    team = ["agent_0", "agent_1", "agent_2"]
    decision = HeuristicCoordinator(k=2).propose(history, leader, team=team, iteration=1)
    assert [o.channels for o in decision.options] == ["topology", "none"]
    assert decision.organization.channels == "topology" and decision.fallback is None
    # already played: skipped, the next edit proposed
    played = [*history, Trial(1, decision.organization, 90.0, {}, critique)]
    again = HeuristicCoordinator(k=1).propose(played, leader, team=team, iteration=2)
    assert again.organization.channels == "none"
    assert any(r["reason"] == f"skipped: resolves to the same behaviour as "
               f"{decision.organization.name} (iteration 1); not played again"
               for r in again.candidates)
    # governance: a human-only field is never edited
    locked = leader.updated(governance={"human_only": ["channels", "protocol", "topology",
                                                       "rules", "allow_abstain",
                                                       "governance"]})
    history = [Trial(0, locked, 80.0, {}, critique)]
    decision = HeuristicCoordinator(k=3).propose(history, locked, team=team, iteration=1)
    assert decision.fallback == "no untried edit is valid"
    assert decision.organization is locked
    reasons = [r["reason"] for r in decision.candidates]
    assert reasons[0] == "governance: changes human-only field(s) channels"
    # an edit the locked organization already has (report_to: leader) changes nothing
    assert all(r.startswith("governance:") or r.startswith(
        "skipped: resolves to the same behaviour as leader (iteration 0)") for r in reasons)
    assert "governance: changes human-only field(s) rules" in reasons


def test_heldout_seeds_never_overlap_the_loop_and_the_evaluation_uses_them(tmp_path,
                                                                            monkeypatch):
    assert set(heldout_seeds([0, 1, 2], 20)).isdisjoint({0, 1, 2})
    out = tmp_path / "run"
    run_reflect("leader", layout="studio", backend="planner", seeds=[0, 1], critic="heuristic",
                coordinator="heuristic", iterations=2, out_dir=out, episodes_per_iteration=2)
    played = seeds_played(monkeypatch)
    report = evaluate_reflect(out, seeds=3)
    assert played and set(played).isdisjoint({0, 1}) and len(played) == 6
    assert report["train_seeds"] == [0, 1] and sorted(set(played)) == report["heldout_seeds"]
    row = report["rows"][0]
    assert row["n"] == 3 and len(row["best_costs"]) == 3
    assert (out / "evaluation.json").is_file() and (out / "costs.png").is_file()


def test_paired_comparison_numbers():
    r = paired_comparison([10.0, 12.0, 14.0, 16.0], [9.0, 10.0, 11.0, 12.0])
    assert r["mean_difference"] == -2.5 and r["n"] == 4
    assert r["cohens_dz"] == pytest.approx(-2.5 / 1.2909944, rel=1e-6)
    # t = -2.5 / (1.291 / 2) = -3.873 with 3 degrees of freedom: two-sided p = 0.0305
    assert r["t_test_p"] == pytest.approx(0.0305, abs=5e-4)


def test_cli_heuristic_loop_then_evaluate(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "r"
    base = ["reflect", "--layout", "studio", "--backend", "planner", "--critic", "heuristic",
            "--coordinator", "heuristic", "--out", str(out)]
    assert main([*base, "--iterations", "2", "--episodes-per-iteration", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["iterations_done"] == 2
    history = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    assert [e["seed"] for e in history[0]["episodes"]] == [0, 1]
    screened = history[0]["decision"]["screened"]
    assert screened and all(s["cost"] is not None for s in screened)
    assert history[1]["cost"] == min(s["cost"] for s in screened)
    assert main([*base, "--evaluate", "2"]) == 0
    text = capsys.readouterr().out
    assert "| prepare_afternoon_tea | studio | 2 |" in text
    # the held-out episodes' logs are kept under the run's folder, none in ./runs
    logs = sorted(p.name for p in (out / "evaluation").glob("*_s*.jsonl"))
    assert len(logs) == 4 and {n.split("_")[-2] for n in logs} == {"start", "best"}
    # beside them each finished episode's cost (what a rerun does not play again)
    kept = (out / "evaluation" / "episodes.jsonl").read_text().splitlines()
    assert sorted(json.loads(r)["key"].split("|")[2] for r in kept) == ["best", "best",
                                                                      "start", "start"]
    assert not (tmp_path / "runs").exists()


def test_without_a_critique_the_heuristic_coordinator_does_not_diagnose():
    """The ablation without the Critic must lack the Critic's work: the same metrics give
    targeted edits with a critique and untargeted ones (``explore``) without one."""
    leader = load_organization("leader")
    metrics = {"success": True, "comm_tokens_per_step": 7.0}
    critique = HeuristicCritic().criticize(leader, {"metrics": metrics}, 80.0)
    team = ["agent_0", "agent_1", "agent_2"]
    with_critic = HeuristicCoordinator(k=3).propose(
        [Trial(0, leader, 80.0, metrics, critique)], leader, team=team, iteration=1)
    without = HeuristicCoordinator(k=3).propose(
        [Trial(0, leader, 80.0, metrics, None)], leader, team=team, iteration=1)
    assert [r["changes"] for r in with_critic.candidates] == EDITS["chatter"][:3]
    assert {r["rationale"] for r in with_critic.candidates} == {"addresses chatter"}
    assert with_critic.analysis == "problems: chatter; edits of leader"
    assert [r["changes"] for r in without.candidates] == EDITS["explore"][:3]
    assert {r["rationale"] for r in without.candidates} == {"addresses explore"}
    assert without.analysis == "no critique: untargeted edits; edits of leader"
    # a Critic whose reply fell back gives no diagnosis either
    failed = critique.model_copy(update={"fallback": "backend error"})
    fell_back = HeuristicCoordinator(k=3).propose(
        [Trial(0, leader, 80.0, metrics, failed)], leader, team=team, iteration=1)
    assert [r["changes"] for r in fell_back.candidates] == EDITS["explore"][:3]


def test_evaluate_without_scipy_is_one_line_before_any_episode(capsys, tmp_path, monkeypatch):
    """Without the report extra it played every held-out episode, then ModuleNotFoundError."""
    import sys

    out = tmp_path / "run"
    run_reflect("leader", layout="studio", backend="planner", seeds=[0], critic="heuristic",
                coordinator="heuristic", iterations=1, out_dir=out, episodes_per_iteration=1)
    played = seeds_played(monkeypatch)
    monkeypatch.setitem(sys.modules, "scipy", None)  # import scipy raises ImportError
    assert main(["reflect", "--out", str(out), "--evaluate", "2"]) == 2
    assert capsys.readouterr().err == ('orgteams reflect: error: reports need scipy and '
                                       'matplotlib: pip install "orgteams[report]"\n')
    assert played == [] and not (out / "evaluation").exists()


def test_the_reflect_lines_say_how_many_episodes_succeeded(capsys):
    """``cost 576.30 (ticks 22.4, ...)``: the cost of failed episodes (the step limit)
    looked like a wrong sum of the numbers beside it."""
    from orgteams.cli.commands import _print_reflect

    _print_reflect({"history": [
        {"iteration": 0, "organization": "leader", "cost": 576.3, "success": 0.0,
         "ticks": 22.4, "comm_tokens_per_step": 6.3, "next_organization": "leader_b"},
        {"iteration": 1, "organization": "leader_b", "cost": 30.5, "success": 0.8,
         "ticks": 25.0, "comm_tokens_per_step": 5.5, "next_organization": None}],
        "best": {"organization": "leader_b", "iteration": 1, "cost": 30.5,
                 "path": "r/best.yaml"}}, as_json=False)
    assert capsys.readouterr().out.splitlines() == [
        "iteration 0: leader cost 576.30 (success 0%, ticks 22.4, tokens/step 6.30) -> leader_b",
        "iteration 1: leader_b cost 30.50 (success 80%, ticks 25.0, tokens/step 5.50)",
        "best: leader_b (iteration 1, cost 30.50) saved to r/best.yaml"]


@pytest.mark.parametrize(("flag", "name", "problem"), [
    ("--eval-tasks", "put_frige", "Unknown task 'put_frige'. Did you mean 'put_fridge'?"),
    ("--eval-layouts", "studo", "Unknown layout 'studo'. Did you mean 'studio'?")])
def test_evaluate_on_an_unknown_task_or_layout_is_one_line(capsys, tmp_path, monkeypatch,
                                                           flag, name, problem):
    """A typo was a "skipped" row (as a layout that cannot host the task is) and exit 0."""
    out = tmp_path / "run"
    run_reflect("leader", layout="studio", backend="planner", seeds=[0], critic="heuristic",
                coordinator="heuristic", iterations=1, out_dir=out, episodes_per_iteration=1)
    played = seeds_played(monkeypatch)
    assert main(["reflect", "--out", str(out), "--evaluate", "2", flag, name]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"orgteams reflect: error: {flag}: {problem}") and err.count("\n") == 1
    assert played == [] and not (out / "evaluation.json").exists()
