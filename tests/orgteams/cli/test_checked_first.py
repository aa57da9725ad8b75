"""Bad input that used to surface mid-run is refused before anything runs, in one line
(issue 24): a substitute shock's backend, the Coordinator's and Critic's kinds, a YAML
shock value nested 50,000 deep."""

from __future__ import annotations

import re

import pytest
from doubles import records_of
from test_bad_input import one_line, run_fails  # noqa: E402  (tests/cli is on the path)

from orgteams.cli.main import main
from orgteams.envs.core.limits import MAX_YAML_DEPTH
from orgteams.errors import UserError


def test_a_substitute_shock_with_an_unknown_backend_fails_before_round_0(
        capsys, tmp_path, monkeypatch):
    """It was checked at round 5, after rounds 0-4 played and a log was written."""
    assert run_fails(capsys, tmp_path, monkeypatch, "--shock",
                     "substitute:agent_1=nosuch@5") == (
        "orgteams run: error: substitute shock 'substitute:agent_1=nosuch@5': Unknown member "
        "kind 'nosuch'. Known: human, local, openai, planner, policy, random, scripted")
    assert run_fails(capsys, tmp_path, monkeypatch, "--shock",
                     "substitute:agent_1=plannr@5") == (
        "orgteams run: error: substitute shock 'substitute:agent_1=plannr@5': Unknown member "
        "kind 'plannr'. Did you mean 'planner'? Known: human, local, openai, planner, policy, "
        "random, scripted")


def test_a_substitute_backend_that_cannot_be_made_fails_before_round_0(
        capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("ORGTEAMS_MODEL", raising=False)
    assert run_fails(capsys, tmp_path, monkeypatch, "--shock",
                     "substitute:agent_1=openai@5") == (
        "orgteams run: error: substitute shock 'substitute:agent_1=openai@5': No model name: "
        "pass model=... or set ORGTEAMS_MODEL (e.g. gpt-4o-mini)")


def test_the_substitute_made_first_is_the_one_that_plays(tmp_path):
    """The backend made by the early check is the pool's: the shock's member uses it."""
    from orgteams.agents.backends.pool import BackendPool
    from orgteams.run import run_episode

    with BackendPool() as pool:
        result = run_episode(layout="studio", backend="planner", agents=3, seed=0,
                             max_rounds=3, log_path=None, pool=pool,
                             shocks=["substitute:agent_1=scripted@1"])
        assert len(pool) == 1  # one scripted backend, made before round 0, used at round 1
    records = [r for r in records_of(result) if r.get("agent") == "agent_1" and r.get("phase")]
    assert {r["model"] for r in records if r["round"] >= 1} == {"scripted"}
    assert {r["model"] for r in records if r["round"] == 0} == {"planner"}


def test_a_shock_value_nested_50000_deep_is_one_line(capsys, tmp_path, monkeypatch):
    shock = "regulate:topology=" + "[" * 50_000 + "]" * 50_000 + "@1"
    assert run_fails(capsys, tmp_path, monkeypatch, "--shock", shock) == (
        f"orgteams run: error: shock {shock[:60]!r}: line 1: YAML nested more than "
        f"{MAX_YAML_DEPTH} levels deep; the limit is {MAX_YAML_DEPTH}")


@pytest.mark.parametrize(("argv", "line"), [
    (["--coordinator", "nosuch:x"], "Unknown Coordinator backend kind 'nosuch'. Known: "
                                    "heuristic, local, openai, scripted"),
    (["--coordinator", "heurstic"], "Unknown Coordinator backend kind 'heurstic'. Did you "
                                    "mean 'heuristic'? Known: heuristic, local, openai, "
                                    "scripted"),
    (["--coordinator", "heuristic", "--critic", "planner"],
     "Unknown Critic backend kind 'planner'. Known: heuristic, local, openai, scripted"),
    (["--coordinator", "heuristic", "--critic", "local:smol"],
     "member spec 'local:smol': local takes no model name (the embedded model is SmolLM2; "
     "another model is openai:<model> on any OpenAI-compatible server)"),
])
def test_an_unknown_reflector_kind_is_named_before_any_extra_is_needed(
        capsys, tmp_path, argv, line):
    """``--coordinator nosuch:x`` said the local extra was missing (the default Critic
    and team are ``local``): the unknown kind is what is wrong."""
    out = tmp_path / "reflect"
    assert main(["reflect", "--out", str(out), *argv]) == 2
    assert one_line(capsys) == f"orgteams reflect: error: {line}"
    assert not out.exists()


def test_run_reflect_checks_the_reflectors_too():
    from orgteams.experiments.reflect import run_reflect

    with pytest.raises(UserError, match=re.escape("Unknown Critic backend kind 'nosuch'")):
        run_reflect("leader", backend="planner", critic="nosuch", coordinator="heuristic",
                    out_dir="never-written")
