"""Recipes with per-arm team compositions (paper 1's model mixes) and a list of backends
(paper 2's capability threshold), #28."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from doubles import read_dicts

from orgteams.cli.main import main
from orgteams.errors import UserError
from orgteams.experiments.recipes import load_recipe, run_experiment, team_specs

TINY_MIXES = """description: a small model-mix recipe
kind: sweep
baseline: leader
teams:
  strong: "3x planner"
  mixed: "1x planner + 2x scripted"
sweep:
  tasks: [prepare_afternoon_tea]
  layouts: [studio]
  organizations: [leader]
  agents: [3]
  seeds: 1
  max_rounds: 3
"""


@pytest.fixture
def recipes(tmp_path, monkeypatch):
    folder = tmp_path / "recipes"
    folder.mkdir()
    (folder / "tiny-mixes.yaml").write_text(TINY_MIXES)
    shipped = load_recipe("paper2-capability")
    small = dict(shipped, sweep={**shipped["sweep"], "layouts": ["studio"], "agents": [3],
                                 "max_rounds": 4})
    (folder / "tiny-capability.yaml").write_text(yaml.safe_dump(small, sort_keys=False))
    monkeypatch.setattr("orgteams.experiments.recipes._recipes",
                        lambda: {p.stem: p for p in sorted(folder.glob("*.yaml"))})


def test_a_team_composition_is_one_member_spec_per_agent():
    assert team_specs("1x openai:gpt-4o + 2x openai:gpt-4o-mini", 3) == (
        "openai:gpt-4o,openai:gpt-4o-mini,openai:gpt-4o-mini")
    assert team_specs("planner + 2x scripted", 3) == "planner,scripted,scripted"
    assert team_specs("planner,random,planner", 3) == "planner,random,planner"
    assert team_specs("planner", 5) == "planner"  # one spec: every member, any size
    with pytest.raises(UserError, match=re.escape(
            "team 'mixed': '1x planner + 1x random' has 2 members; the recipe's team has 3")):
        team_specs("1x planner + 1x random", 3, "team 'mixed'")
    with pytest.raises(UserError, match=re.escape(
            "t: '0x planner' is not '<count>x <member spec>' (e.g. '1x openai:gpt-4o + 2x "
            "openai:gpt-4o-mini')")):
        team_specs("0x planner + 3x random", 3, "t")
    with pytest.raises(UserError, match=re.escape("t: Unknown member kind 'gpt'")):
        team_specs("1x gpt:4 + 2x planner", 3, "t")


def test_each_arm_plays_its_own_team(recipes, tmp_path):
    """The episodes of each arm were played by the members its composition names: the
    planner decides by plan, the scripted double by a model call."""
    out = tmp_path / "out"
    table = run_experiment("tiny-mixes", out=out, progress=False)
    assert [(r["team"], r["backend"]) for r in table["rows"]] == [
        ("strong", "planner,planner,planner"), ("mixed", "planner,scripted,scripted")]
    assert table["columns"][0] == "team"
    models = {}
    for arm in ("planner-planner-planner", "planner-scripted-scripted"):
        lines = read_dicts(out / "logs" / f"prepare_afternoon_tea_studio_leader_a3_{arm}_s0"
                                          ".jsonl")
        models[arm.replace("-", ",")] = {d["agent"]: d["model"] for d in lines
                                         if d.get("phase") == "act" and d.get("model")}
    assert models["planner,planner,planner"] == dict.fromkeys(
        ["agent_0", "agent_1", "agent_2"], "planner")
    mixed = models["planner,scripted,scripted"]
    assert mixed["agent_0"] == "planner" and mixed["agent_1"] != "planner"
    assert mixed["agent_1"] == mixed["agent_2"]
    assert "| mixed | prepare_afternoon_tea | studio | 3 | planner,scripted,scripted |" in (
        out / "table.md").read_text()


def test_teams_from_the_command_line(recipes, tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["experiment", "tiny-mixes", "--team", "solo=3x planner", "--out", str(out),
                 "--no-progress"]) == 0
    table = json.loads((out / "table.json").read_text())
    assert [(r["team"], r["n"]) for r in table["rows"]] == [("solo", 1)]
    capsys.readouterr()
    assert main(["experiment", "tiny-mixes", "--team", "3x planner", "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "--team '3x planner': give NAME=COMPOSITION, e.g. mixed='1x openai:gpt-4o + 2x "
        "openai:gpt-4o-mini'")
    assert main(["experiment", "tiny-mixes", "--team", "a=planner", "--backend", "planner",
                 "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "experiment 'tiny-mixes': give --backend or --team, not both")


def test_a_recipe_of_one_team_takes_one_composition(tmp_path):
    with pytest.raises(UserError, match=re.escape(
            "experiment 'paper1-reflect': a reflect recipe plays one team; got 2 (a, b)")):
        run_experiment("paper1-reflect", teams={"a": "planner", "b": "random"},
                       out=tmp_path / "r", progress=False)
    with pytest.raises(UserError, match=re.escape(
            "experiment 'paper2-shocks' team 'a': '1x planner + 1x random' has 2 members; "
            "the recipe's team has 5")):
        run_experiment("paper2-shocks", teams={"a": "1x planner + 1x random"},
                       out=tmp_path / "s", progress=False)
    assert not list(tmp_path.iterdir())  # refused before anything was written


def test_the_capability_recipe_compares_free_form_with_fixed_roles():
    shipped = load_recipe("paper2-capability")
    assert shipped["sweep"]["organizations"] == ["sequential", "coordinator"]
    assert shipped["contrast"] == ["sequential", "coordinator"]
    assert shipped["sweep"]["backends"] == ["planner", "local"]  # offline: both


def test_capability_compares_free_form_with_fixed_roles_per_backend(recipes, tmp_path):
    out = tmp_path / "cap"
    table = run_experiment("tiny-capability", backend="planner,random", seeds=2, out=out,
                           progress=False)
    assert [(r["backend"], r["organization"]) for r in table["rows"]] == [
        ("planner", "sequential"), ("random", "sequential"),
        ("planner", "coordinator"), ("random", "coordinator")]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for contrast in table["contrasts"]:
        assert (contrast["a"], contrast["b"], contrast["n"]) == ("sequential", "coordinator",
                                                                 "2/2")
        seq = [r["summary"] for r in rows if r["cell"]["backend"] == contrast["backend"]
               and r["cell"]["organization"] == "sequential"]
        assert contrast["abstention_rate_a"] == pytest.approx(
            sum(s["abstention_rate"] for s in seq) / 2)
        assert contrast["ticks_a"] == pytest.approx(sum(s["ticks"] for s in seq) / 2)
    assert [c["backend"] for c in table["contrasts"]] == ["planner", "random"]
    md = (out / "table.md").read_text()
    assert "Planners choose roles and abstain by rule" in md
    assert "| prepare_afternoon_tea | studio | 3 | random | sequential | coordinator | 2/2 |" in md


def test_a_recipes_member_names_take_the_backend(tmp_path, monkeypatch):
    """paper1-model-mixes names its members: --backend replaces the strong one, the weak
    one stays, and --team may use the names."""
    shipped = load_recipe("paper1-model-mixes")
    assert shipped["members"] == {"strong": "planner", "weak": "random"}
    assert shipped["teams"]["mixed"] == "1x strong + 2x weak"
    small = dict(shipped, sweep={**shipped["sweep"], "layouts": ["studio"],
                                 "organizations": ["none"], "max_rounds": 2})
    path = tmp_path / "mixes.yaml"
    path.write_text(yaml.safe_dump(small, sort_keys=False))
    monkeypatch.setattr("orgteams.experiments.recipes._recipes", lambda: {"mixes": path})
    table = run_experiment("mixes", backend="scripted", seeds=1, out=tmp_path / "a",
                           progress=False)
    assert [(r["team"], r["backend"]) for r in table["rows"]] == [
        ("strong", "scripted,scripted,scripted"), ("mixed", "scripted,random,random"),
        ("weak", "random,random,random")]
    table = run_experiment("mixes", teams={"two": "2x weak + strong"}, seeds=1,
                           out=tmp_path / "b", progress=False)
    assert [(r["team"], r["backend"]) for r in table["rows"]] == [
        ("two", "random,random,planner")]
    with pytest.raises(UserError, match=re.escape(
            "experiment 'mixes': teams 'a' and 'b' are the same team (planner,planner,planner)")):
        run_experiment("mixes", teams={"a": "3x strong", "b": "3x planner"}, seeds=1,
                       out=tmp_path / "c", progress=False)


def test_scaling_tests_each_protocol_across_team_sizes(tmp_path, monkeypatch):
    """paper2-scaling: the self-organizing protocols and the coordinator, a Kruskal-Wallis
    test across sizes per organization (and the paper's pair), from the played episodes."""
    from orgteams.experiments.stats import kruskal

    shipped = load_recipe("paper2-scaling")
    assert shipped["sweep"]["organizations"] == ["sequential", "shared", "coordinator"]
    assert shipped["sweep"]["agents"] == [8, 16, 32, 64, 128, 256]
    assert shipped["across_sizes"]["pair"] == [64, 256]
    small = dict(shipped, across_sizes={"metrics": ["ticks"], "pair": [3, 4]},
                 sweep={**shipped["sweep"], "layouts": ["studio"], "max_rounds": 6})
    path = tmp_path / "scaling.yaml"
    path.write_text(yaml.safe_dump(small, sort_keys=False))
    monkeypatch.setattr("orgteams.experiments.recipes._recipes", lambda: {"scaling": path})
    out = tmp_path / "out"
    table = run_experiment("scaling", agents=[2, 3, 4], seeds=2, out=out, progress=False)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["organization"] for r in table["across_sizes"]] == [
        "sequential", "shared", "coordinator"]
    for found in table["across_sizes"]:
        ticks = {n: [r["summary"]["ticks"] for r in rows if r["cell"]["agents"] == n
                     and r["cell"]["organization"] == found["organization"]]
                 for n in (2, 3, 4)}
        assert all(len(v) == 2 for v in ticks.values())
        every, pair = kruskal(list(ticks.values())), kruskal([ticks[3], ticks[4]])
        assert (found["H"], found["p"]) == (every["H"], every["p"])
        assert (found["pair"], found["pair_H"], found["pair_p"]) == (
            "3 vs 4", pair["H"], pair["p"])
    assert "Kruskal-Wallis across team sizes" in (out / "table.md").read_text()
    assert {"unique_roles", "abstention_rate", "hierarchy_depth",
            "algebraic_connectivity"} <= set(table["columns"])
