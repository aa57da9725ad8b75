"""The cost estimate printed before a priced run: against a fake priced server where model
teams play as long as planners (one round), its calls and prompt tokens are exactly what
the run then sends, its completion tokens the members' max_tokens, its dollars those at
the price."""

from __future__ import annotations

import re

import pytest
from fault_server import FaultServer

from orgteams.agents.backends.pricing import Price
from orgteams.agents.backends.spend import usd
from orgteams.cli.main import main
from orgteams.config import ReflectConfig
from orgteams.experiments.estimate import (
    HOW,
    PROBE_ROUNDS,
    estimate_reflect,
    estimate_sweep,
    reflect_episodes,
)
from orgteams.experiments.sweep_spec import SweepSpec

pytest.importorskip("openai")
pytest.importorskip("tenacity")

MAX_TOKENS = 320  # an LLM member's max_tokens: the completion tokens of every call


@pytest.fixture
def server(monkeypatch):
    with FaultServer("ok", reply_text=None, usage="count") as srv:
        monkeypatch.setenv("ORGTEAMS_BASE_URL", srv.base_url)
        monkeypatch.setenv("ORGTEAMS_API_KEY", "sk-priced")
        yield srv


@pytest.mark.parametrize(("org", "team"), [
    ("leader", "openai:fake-model"),
    ("sequential", "openai:fake-model,planner,openai:fake-model"),
    ("none", "openai:fake-model"),
])
def test_the_estimate_is_what_a_one_round_sweep_then_sends(server, tmp_path, capsys, org,
                                                            team):
    out = tmp_path / "sweep"
    assert main(["sweep", "--orgs", org, "--layouts", "studio", "--agents", "3", "--backend",
                 team, "--seeds", "0,3", "--max-rounds", "1", "--out", str(out), "--quiet",
                 "--price-per-mtok", "1000,2000"]) == 0
    err = capsys.readouterr().err.splitlines()
    calls = len(server.requests)
    prompt = sum(p for p, _ in server.usages)
    completion = calls * MAX_TOKENS
    cost = (prompt * 1000 + completion * 2000) / 1e6
    assert err[0] == (f"cost estimate: 2 episodes, {calls:,} model calls, {prompt:,} prompt + "
                      f"{completion:,} completion tokens: about {usd(cost)} (fake-model at "
                      "$1000/$2000 per 1M tokens)")
    tokenizer = re.search(r"\((\S+) tokens\)", err[1]).group(1)
    assert err[1] == "  " + HOW.format(rounds=PROBE_ROUNDS, tokenizer=tokenizer)
    planners = team.count("planner")
    assert calls == 2 * (3 - planners) * 2  # each model member: one message, one action


def test_models_without_a_price_make_the_cost_unknown(monkeypatch):
    monkeypatch.delenv("ORGTEAMS_PRICES", raising=False)
    spec = SweepSpec(layouts=("studio",), organizations=("none",), agents=(2,),
                     backends=("openai:gpt-4o-mini,openai:my-model",), seeds=(0,),
                     max_rounds=1)
    estimate = estimate_sweep(spec)
    lines = estimate.lines()
    assert estimate.usd is None and estimate.unpriced == ["my-model"]
    assert lines[0].endswith(": cost unknown")
    mini, mine = estimate.models["openai:gpt-4o-mini"], estimate.models["openai:my-model"]
    assert lines[1] == (f"  gpt-4o-mini: {round(mini.calls)} calls, "
                        f"{round(mini.prompt_tokens):,} + {round(mini.completion_tokens):,} "
                        f"tokens at $0.15/$0.6 per 1M tokens = {usd(mini.usd)}")
    assert lines[2] == (f"  my-model: {round(mine.calls)} calls, {round(mine.prompt_tokens):,}"
                        f" + {round(mine.completion_tokens):,} tokens at no price (give "
                        "--price-per-mtok IN,OUT or add it to $ORGTEAMS_PRICES)")
    # the run's own price prices it
    priced = estimate_sweep(SweepSpec(**{**spec.__dict__, "price_per_mtok": Price(1, 2)}))
    assert priced.usd == pytest.approx(
        sum((round(m.prompt_tokens) * 1 + round(m.completion_tokens) * 2) / 1e6
            for m in priced.models.values()))


def test_more_seeds_than_measured_count_as_the_measured_mean():
    one = estimate_sweep(SweepSpec(layouts=("studio",), organizations=("leader",),
                                   agents=(2,), backends=("openai:gpt-4o",), seeds=(0, 1, 2)))
    six = estimate_sweep(SweepSpec(layouts=("studio",), organizations=("leader",),
                                   agents=(2,), backends=("openai:gpt-4o",),
                                   seeds=tuple(range(6))))
    assert six.episodes == 6
    assert six.calls == round(2 * sum(m.calls for m in one.models.values()))
    assert six.prompt_tokens == pytest.approx(2 * one.prompt_tokens, abs=1)


def test_a_reflect_estimate_counts_screening_and_the_reflecting_models():
    config = ReflectConfig(layout="studio", agents=2, backend="openai:gpt-4o-mini",
                           critic="scripted", coordinator="scripted", iterations=4,
                           candidates=3, episodes_per_iteration=2, seeds=(0, 1),
                           max_rounds=2)
    assert len(reflect_episodes(config)) == 4 * 2  # a model Coordinator: no screening
    screened = config.replace(coordinator="heuristic", screen_candidates=None)
    assert len(reflect_episodes(screened)) == 2 + 3 * 3 * 2  # K candidates after the first
    assert len(reflect_episodes(screened, start=2)) == 2 * 3 * 2
    estimate = estimate_reflect(config, heldout_seeds=3)
    assert estimate.episodes == 8 + 2 * 3
    scripted = estimate.models["scripted:scripted"]
    assert scripted.calls == 4 + 3  # a Critic call per iteration, a Coordinator call per
    assert scripted.completion_tokens == 4 * 1024 + 3 * 2048  # decision, at max_tokens
    resumed = estimate_reflect(config, start=3)
    assert resumed.done == 6 and resumed.episodes == 2
    assert resumed.models["scripted:scripted"].calls == 1  # the last Critic call only


def test_the_evaluation_estimate_is_what_a_one_round_evaluation_then_sends(server, tmp_path,
                                                                          capsys):
    """``reflect --evaluate`` with a priced team prints its estimate first: the held-out
    episodes of both arms, exactly the calls and prompt tokens they then send."""
    out = tmp_path / "reflect"
    assert main(["reflect", "--backend", "openai:fake-model", "--critic", "heuristic",
                 "--coordinator", "heuristic", "--layout", "studio", "--agents", "2",
                 "--iterations", "1", "--episodes-per-iteration", "1", "--max-rounds", "1",
                 "--out", str(out), "--json", "--price-per-mtok", "1000,2000"]) == 0
    capsys.readouterr()
    loop = len(server.requests)
    assert main(["reflect", "--out", str(out), "--evaluate", "2", "--json",
                 "--price-per-mtok", "1000,2000"]) == 0
    err = capsys.readouterr().err.splitlines()
    calls = len(server.requests) - loop
    prompt = sum(p for p, _ in server.usages[loop:])
    completion = calls * MAX_TOKENS
    cost = (prompt * 1000 + completion * 2000) / 1e6
    assert err[0] == (f"cost estimate: 4 episodes, {calls:,} model calls, {prompt:,} prompt + "
                      f"{completion:,} completion tokens: about {usd(cost)} (fake-model at "
                      "$1000/$2000 per 1M tokens)")
    assert calls == 4 * 2 * 2  # 4 episodes, 2 members: one message, one action
