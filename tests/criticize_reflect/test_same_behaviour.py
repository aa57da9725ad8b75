"""Candidates that resolve to the same behaviour as an organization already tried are
recognised and skipped before any episode plays them, and the skip is recorded (#28)."""

from __future__ import annotations

import json

import orgteams.run
from orgteams.criticize_reflect.coordinator import Trial
from orgteams.criticize_reflect.heuristic import HeuristicCoordinator
from orgteams.experiments.reflect import run_reflect
from orgteams.organizations.spec.library import load_organization
from orgteams.run import run_episode
from tests.doubles import log_dicts

TEAM = ["agent_0", "agent_1", "agent_2"]


def silent_leader():
    return load_organization("leader").updated(name="leader__channels_none", channels="none")


def test_report_rules_are_moot_once_nobody_can_message():
    silent = silent_leader()
    moot = [silent.updated(name="a", rules={**silent.rules.model_dump(),
                                            "report_when": "on_completion"}),
            silent.updated(name="b", rules={**silent.rules.model_dump(),
                                            "budget": {"messages": 1}}),
            silent.updated(name="c", rules={**silent.rules.model_dump(),
                                            "report_to": "everyone"})]
    key = silent.resolve(TEAM).behaviour(reads_prompts=False)
    assert all(o.resolve(TEAM).behaviour(reads_prompts=False) == key for o in moot)
    # a member that reads its prompt is told other rules: a new behaviour for it
    assert all(o.resolve(TEAM).behaviour() != silent.resolve(TEAM).behaviour() for o in moot)
    # with channels the same report rule acts
    talking = load_organization("leader")
    told = talking.updated(name="d", rules={**talking.rules.model_dump(),
                                            "report_when": "on_completion"})
    assert (told.resolve(TEAM).behaviour(reads_prompts=False)
            != talking.resolve(TEAM).behaviour(reads_prompts=False))
    # the name and description never count; the protocol does
    assert silent.updated(name="x", description="y").resolve(TEAM).behaviour() == \
        silent.resolve(TEAM).behaviour()
    assert silent.updated(name="e", protocol="shared").resolve(TEAM).behaviour(False) != key


def test_organizations_with_the_same_behaviour_play_the_same_episode():
    """The premise of the skip: a planner team plays a moot edit exactly as before."""
    silent = silent_leader()
    moot = silent.updated(name="moot", rules={**silent.rules.model_dump(),
                                              "report_when": "on_completion",
                                              "budget": {"messages": 1}})
    a, b = (run_episode(organization=o, layout="studio", backend="planner", seed=3, agents=3,
                        log_path=None) for o in (silent, moot))
    acts = [[(d["tick"], d["agent"], d.get("action")) for d in log_dicts(r.records)
             if d.get("phase") == "act"] for r in (a, b)]
    assert len(acts[0]) > 10 and acts[0] == acts[1]
    assert a.summary.ticks == b.summary.ticks


def test_the_heuristic_skips_an_edit_that_behaves_as_a_tried_one():
    silent = silent_leader()
    history = [Trial(0, silent, 50.0, {}, None)]
    planners = HeuristicCoordinator(k=8, reads_prompts=False).propose(
        history, silent, team=TEAM, iteration=1)
    skipped = {r["name"]: r["reason"] for r in planners.candidates if not r["valid"]}
    why = ("skipped: resolves to the same behaviour as leader__channels_none (iteration 0); "
           "not played again")
    assert skipped["leader__rules_report_when_on_completion"] == why
    assert skipped["leader__channels_none"] == why
    assert "leader__rules_report_when_on_completion" not in [o.name for o in planners.options]
    # a team that reads its prompt is told the new rule: proposed
    models = HeuristicCoordinator(k=8, reads_prompts=True).propose(
        history, silent, team=TEAM, iteration=1)
    assert "leader__rules_report_when_on_completion" in [o.name for o in models.options]


def test_the_loop_never_plays_a_candidate_that_behaves_as_one_tried(tmp_path, monkeypatch):
    played: list[str] = []  # the behaviour of every episode's organization, in order
    real = orgteams.run.run_episode

    def spy(config=None, **kw):
        played.append(config.organization.resolve(TEAM).behaviour(reads_prompts=False))
        return real(config, **kw)

    monkeypatch.setattr(orgteams.run, "run_episode", spy)
    out = tmp_path / "r"
    run_reflect(silent_leader(), layout="studio", backend="planner", seeds=[0],
                critic="heuristic", coordinator="heuristic", iterations=3, candidates=4,
                out_dir=out, episodes_per_iteration=1)
    history = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    skipped = [c for row in history for c in (row["decision"] or {}).get("candidates", [])
               if str(c["reason"]).startswith("skipped: resolves to the same behaviour")]
    assert "leader__rules_report_when_on_completion" in {c["name"] for c in skipped}
    # one seed per iteration: no behaviour was played twice (screened episodes are reused)
    screened = sum(len(row["decision"]["screened"]) for row in history if row["decision"])
    assert len(played) == 1 + screened and len(set(played)) == len(played)
    # the skip is recorded with the decision
    saved = json.loads((out / "iteration_0" / "proposal.json").read_text())
    assert any(c["reason"] and c["reason"].startswith("skipped:") for c in saved["candidates"])


def test_the_loop_stops_when_every_candidate_was_tried(tmp_path, monkeypatch):
    """A Coordinator with nothing untried ends the loop: the current organization is not
    played again (also not by a rerun asking for more iterations)."""
    played: list[str] = []
    real = orgteams.run.run_episode

    def spy(config=None, **kw):
        played.append(config.organization.name)
        return real(config, **kw)

    monkeypatch.setattr(orgteams.run, "run_episode", spy)
    # nothing is editable but the instruction's text, which planners never read
    locked = silent_leader().updated(governance={"human_only": [
        "channels", "protocol", "topology", "rules", "allow_abstain", "governance"]})
    out = tmp_path / "r"
    result = run_reflect(locked, layout="studio", backend="planner", seeds=[0],
                         critic="heuristic", coordinator="heuristic", iterations=4,
                         out_dir=out, episodes_per_iteration=1)
    assert played == ["leader__channels_none"] and len(result.history) == 1
    assert result.stopped == ("stopped after iteration 0: no untried edit is valid (every "
                              "candidate is invalid or behaves as an organization already "
                              "tried)")
    assert result.history[0]["decision"]["exhausted"] is True
    again = run_reflect(locked, layout="studio", backend="planner", seeds=[0],
                        critic="heuristic", coordinator="heuristic", iterations=6,
                        out_dir=out, episodes_per_iteration=1)
    assert played == ["leader__channels_none"] and again.stopped == result.stopped


def test_the_cli_says_why_the_loop_stopped(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    locked = silent_leader().updated(governance={"human_only": [
        "channels", "protocol", "topology", "rules", "allow_abstain", "governance"]})
    path = tmp_path / "locked.yaml"
    path.write_text(locked.to_yaml())
    from orgteams.cli.main import main

    assert main(["reflect", "--org", str(path), "--layout", "studio", "--backend", "planner",
                 "--critic", "heuristic", "--coordinator", "heuristic", "--iterations", "3",
                 "--episodes-per-iteration", "1", "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == ("stopped after iteration 0: no untried edit is valid (every candidate "
                      "is invalid or behaves as an organization already tried)")
    # the last iteration names no next organization: none plays (it printed '-> itself')
    assert out[0].startswith("iteration 0: leader__channels_none cost ") and " -> " not in out[0]
