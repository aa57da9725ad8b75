"""The spend of a run's model calls: priced from reported usage, free from the cache, kept
in a ledger shared by processes and reruns, and its budget (``max_cost``)."""

from __future__ import annotations

import json
import multiprocessing
import pickle
import re

import pytest

from orgteams.agents.backends.base import Completion, Usage
from orgteams.agents.backends.pool import BackendPool
from orgteams.agents.backends.pricing import Price, parse_price, price_of
from orgteams.agents.backends.spend import (
    MAX_COST,
    BudgetReached,
    MeteredBackend,
    Spend,
    check_priced,
    run_models,
    usd,
)
from orgteams.errors import FieldProblem, UserError

RUN_PRICE = Price(1000.0, 2000.0)  # USD per 1M tokens: 11 + 5 tokens cost $0.021


def _reply(model: str = "fake-model", prompt: int = 11, completion: int = 5,
           cached: bool = False) -> Completion:
    return Completion("{}", {}, Usage(prompt, completion), 0.0, None, cached=cached,
                      model=model)


def test_a_reply_costs_its_reported_usage_at_the_run_price_or_the_table():
    spend = Spend(price=RUN_PRICE)
    assert spend.charge("openai", "fake-model", _reply()) == pytest.approx(0.021)
    # the table prices the model the server says answered (a dated name: its prefix)
    cost = spend.charge("local", "x", _reply("gpt-4o-mini-2024-07-18", 1_000_000, 0))
    assert cost == pytest.approx(0.15)  # the run price is for openai: models only
    assert spend.spent == pytest.approx(0.171)
    assert spend.totals["by_model"]["fake-model"] == {
        "calls": 1, "prompt_tokens": 11, "completion_tokens": 5, "usd": pytest.approx(0.021)}


def test_cached_replies_are_free_and_unknown_prices_are_counted_not_charged():
    spend = Spend()
    assert spend.charge("openai", "m", _reply(cached=True)) == 0.0
    assert spend.charge("openai", "nosuch-model", _reply("nosuch-model")) is None
    assert (spend.spent, spend.cached_calls, spend.totals["unpriced_calls"]) == (0.0, 1, 1)
    assert spend.totals["prompt_tokens"] == 11  # the unpriced call's tokens still count


def test_the_budget_is_reached_at_the_call_that_reaches_it():
    spend = Spend(max_cost=0.05, price=RUN_PRICE)
    for _ in range(2):
        spend.charge("openai", "m", _reply())
        assert not spend.reached() and spend.stop_reason() is None
    spend.charge("openai", "m", _reply())  # $0.063
    assert spend.reached() and spend.stop_reason() == MAX_COST == "max cost"
    with pytest.raises(BudgetReached) as stop:
        spend.check("2 of 5 episodes")
    assert stop.value.line() == ("budget reached: spent $0.0630 of --max-cost $0.0500; 2 of "
                                 "5 episodes done; rerun with a higher --max-cost to go on")
    assert str(stop.value) == ("budget reached: spent $0.0630 of max cost $0.0500; 2 of 5 "
                               "episodes done; rerun with a higher max cost to go on")


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "1"])
def test_a_budget_must_be_a_positive_number(bad):
    with pytest.raises(ValueError, match=re.escape("max_cost must be a positive number of "
                                                   f"USD, got {bad!r}")):
        Spend(max_cost=bad)


def test_the_ledger_keeps_the_spend_for_the_next_run_and_other_objects(tmp_path):
    ledger = tmp_path / "spend.json"
    first = Spend(0.1, ledger, RUN_PRICE)
    first.charge("openai", "m", _reply())
    second = Spend(0.1, ledger, RUN_PRICE)  # a rerun, or another worker
    assert second.spent == pytest.approx(0.021)
    second.charge("openai", "m", _reply())
    assert first.spent == pytest.approx(0.021)  # it knows at its next charge or refresh
    first.refresh()
    assert first.spent == pytest.approx(0.042)
    data = json.loads(ledger.read_text())
    assert (data["calls"], data["max_cost"], data["spent_usd"]) == (2, 0.1, pytest.approx(0.042))
    assert not list(tmp_path.glob(".*.tmp"))  # written whole, through a temporary file


def _charge_in_a_worker(spend: Spend, n: int) -> None:
    for _ in range(n):
        spend.charge("openai", "m", _reply())


def test_worker_processes_charge_one_ledger(tmp_path):
    """A sweep's spawned workers get a pickled Spend: the same ledger, every call counted
    once whatever the interleaving (the file lock)."""
    spend = Spend(1.0, tmp_path / "spend.json", RUN_PRICE)
    assert pickle.loads(pickle.dumps(spend)) == spend
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_charge_in_a_worker, args=(spend, 20)) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    spend.refresh()
    assert spend.totals["calls"] == 60
    assert spend.spent == pytest.approx(60 * 0.021)


def test_a_ledger_that_is_not_one_is_one_line(tmp_path):
    ledger = tmp_path / "spend.json"
    ledger.write_text("[1, 2]")
    with pytest.raises(UserError, match=re.escape(
            f"{ledger}: not a spend ledger (TypeError: list indices must be integers or "
            "slices, not str); move it away to count the spend from zero")):
        Spend(1.0, ledger)


def test_the_pool_meters_every_backend_it_makes():
    spend = Spend(price=RUN_PRICE)
    with BackendPool(spend=spend) as pool:
        backend = pool.get("scripted")
        assert isinstance(backend, MeteredBackend) and backend.model == "scripted"
        backend.complete([{"role": "user", "content": "hello there"}])
    # the scripted double is free in the table; the run price is for openai: models
    assert spend.totals["calls"] == 1 and spend.spent == 0.0
    with BackendPool() as pool:
        assert not isinstance(pool.get("scripted"), MeteredBackend)


def test_run_models_and_which_runs_are_priced(monkeypatch):
    monkeypatch.setenv("ORGTEAMS_MODEL", "gpt-4o")
    models = run_models(["planner", "openai:gpt-4o-mini,planner,local", "openai", "random"])
    assert models == [("openai", "gpt-4o-mini"), ("local", "smollm2-135m-instruct"),
                      ("openai", "gpt-4o")]
    assert check_priced(models, None, 1.0)
    assert not check_priced([("local", "smollm2-135m-instruct"), ("scripted", "scripted")],
                            None, 1.0)  # free models: nothing to meter
    assert check_priced([("openai", "my-model")], None, None)  # unknown: maybe paid
    assert check_priced([("openai", "my-model")], RUN_PRICE, 1.0)


def test_a_budget_needs_a_price_for_every_model():
    with pytest.raises(UserError, match=re.escape(
            "--max-cost: no price for model 'my-model' (openai:my-model); give "
            "--price-per-mtok IN,OUT or add it to a price table named by $ORGTEAMS_PRICES")):
        check_priced([("openai", "gpt-4o"), ("openai", "my-model")], None, 1.0)


def test_a_price_table_of_ones_own(tmp_path, monkeypatch):
    table = tmp_path / "prices.yaml"
    table.write_text("models:\n  my-model: {prompt: 1.5, completion: 3}\n"
                     "  gpt-4o: {prompt: 1, completion: 2}\n")
    monkeypatch.setenv("ORGTEAMS_PRICES", str(table))
    assert price_of("my-model-v2") == Price(1.5, 3.0)
    assert price_of("gpt-4o") == Price(1.0, 2.0)  # read over the shipped table
    assert price_of("gpt-4o-mini") == Price(0.15, 0.6)  # the shipped one still


@pytest.mark.parametrize(("text", "problem"), [
    ("models: {m: {prompt: -1, completion: 2}}",
     "field 'models.m' must be from 0 to 10000 USD per 1 million tokens, got -1"),
    ("models: {m: {prompt: 1}}",
     "field 'models.m' needs numeric 'prompt' and 'completion' prices"),
    ("prices: []", "field 'models' must map model names to {prompt: USD, completion: USD}"),
])
def test_a_bad_price_table_is_one_line_naming_file_and_field(tmp_path, monkeypatch, text,
                                                            problem):
    table = tmp_path / "bad_prices.yaml"
    table.write_text(text)
    monkeypatch.setenv("ORGTEAMS_PRICES", str(table))
    with pytest.raises(UserError, match=re.escape(f"{table} ($ORGTEAMS_PRICES): {problem}")):
        price_of("m")


def test_a_missing_price_table_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("ORGTEAMS_PRICES", str(tmp_path / "none.yaml"))
    with pytest.raises(UserError, match=re.escape(
            f"{tmp_path / 'none.yaml'}: cannot read a price table ($ORGTEAMS_PRICES): No such "
            "file or directory")):
        price_of("m")


@pytest.mark.parametrize(("value", "problem"), [
    ("1", "must be IN,OUT: USD per 1 million prompt and completion tokens, got '1'"),
    ("a,b", "must be IN,OUT: USD per 1 million prompt and completion tokens, got 'a,b'"),
    ("1,-2", "must be from 0 to 10000 USD per 1 million tokens, got '1,-2'"),
    ((1, 2, 3), "must be IN,OUT: USD per 1 million prompt and completion tokens, "
                "got (1, 2, 3)"),
])
def test_a_run_price_is_in_and_out(value, problem):
    assert parse_price("0.15, 0.6") == Price(0.15, 0.6)
    with pytest.raises(FieldProblem, match=re.escape(problem)):
        parse_price(value)


def test_dollars_are_shown_with_the_digits_that_matter():
    assert [usd(x) for x in (0, 1234.5, 1.0, 0.0630, 0.00012, 3.1e-06)] == [
        "$0", "$1,234.50", "$1.00", "$0.0630", "$0.0001", "$3.1e-06"]
