"""Money cost of LLM calls from the shipped price table (``assets/prices.yaml``).

``cost(model, usage)`` returns USD, or None when the model is not in the table:
an unknown price is reported as unknown, never as free.

Prices the user gives come first: ``$ORGTEAMS_PRICES`` names a YAML file in the
table's format (``models: {name: {prompt: USD, completion: USD}}``, per 1 million
tokens), read over the shipped table (a self-hosted or newer model, a negotiated
price); a run's ``price_per_mtok`` (``--price-per-mtok IN,OUT``) prices every
``openai:`` model it calls (see :class:`~orgteams.agents.backends.spend.Spend`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import cache
from typing import Any

import yaml

from orgteams.agents.backends.base import Usage
from orgteams.assets import asset_dir
from orgteams.errors import FieldProblem, UserError

__all__ = ["PRICES_ENV", "Price", "cost", "parse_price", "price_of", "prices_as_of"]

_BOUNDARY = "-:@"
PRICES_ENV = "ORGTEAMS_PRICES"
"""Names a YAML price table read over the shipped one (same format)."""
MAX_PRICE = 10_000.0
"""The highest price per 1 million tokens taken as real (a typo guard)."""


@dataclass(frozen=True)
class Price:
    """USD per 1 million prompt and completion tokens."""

    prompt: float
    completion: float

    def cost(self, usage: Usage) -> float:
        """USD of ``usage`` tokens at this price."""
        return (usage.prompt_tokens * self.prompt
                + usage.completion_tokens * self.completion) / 1e6

    def text(self) -> str:
        """``$0.15/$0.60 per 1M tokens`` (prompt/completion)."""
        return f"${self.prompt:g}/${self.completion:g} per 1M tokens"


def _price(value: Any) -> float:
    """One price: a number from 0 to :data:`MAX_PRICE` USD per 1 million tokens."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise FieldProblem("must be a number of USD per 1 million tokens", value, quoted=True)
    if not 0 <= value <= MAX_PRICE:
        raise FieldProblem(f"must be from 0 to {MAX_PRICE:g} USD per 1 million tokens", value)
    return float(value)


def parse_price(value: Any) -> Price:
    """A price from ``"IN,OUT"`` (USD per 1 million prompt and completion tokens), a pair
    of numbers, or a :class:`Price` (as given).

    Raises:
        FieldProblem: Not two prices from 0 to :data:`MAX_PRICE` (named by the caller).
    """
    if isinstance(value, Price):
        return value
    parts: Any = value
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        try:
            parts = [float(p) for p in parts]
        except ValueError:
            raise FieldProblem("must be IN,OUT: USD per 1 million prompt and completion "
                               "tokens", value, quoted=True) from None
    if not isinstance(parts, list | tuple) or len(parts) != 2:
        raise FieldProblem("must be IN,OUT: USD per 1 million prompt and completion tokens",
                           value, quoted=True)
    try:
        return Price(_price(parts[0]), _price(parts[1]))
    except FieldProblem as problem:
        raise FieldProblem(problem.problem, value, quoted=isinstance(value, str)) from None


def _models(data: Any, source: str) -> dict[str, Price]:
    """The ``models`` of a price table; a bad entry is one line naming file and field."""
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise UserError(f"{source}: field 'models' must map model names to "
                        "{prompt: USD, completion: USD}")
    models: dict[str, Price] = {}
    for name, entry in data["models"].items():
        if not isinstance(entry, dict) or not {"prompt", "completion"} <= set(entry):
            raise UserError(f"{source}: field 'models.{name}' needs numeric 'prompt' and "
                            "'completion' prices")
        try:
            models[str(name).lower()] = Price(_price(entry["prompt"]),
                                              _price(entry["completion"]))
        except FieldProblem as problem:
            raise problem.named(f"{source}: field 'models.{name}'") from None
    return models


@cache
def _shipped() -> tuple[str, dict[str, Price]]:
    path = asset_dir("prices.yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return str(data.get("as_of", "")), _models(data, str(path))


@cache
def _users(path: str, stamp: int | None) -> dict[str, Price]:
    """The user's table at ``path``, read again when it changed (``stamp``: its mtime)."""
    from orgteams.envs.core.user_files import load_yaml, read_text

    source = f"{path} (${PRICES_ENV})"
    text = read_text(path, f"a price table (${PRICES_ENV})")
    return _models(load_yaml(text, source), source)


def _table() -> tuple[str, dict[str, Price]]:
    as_of, models = _shipped()
    path = os.environ.get(PRICES_ENV)
    if path:
        try:
            stamp: int | None = os.stat(path).st_mtime_ns
        except OSError:
            stamp = None  # read_text says why, in one line
        models = {**models, **_users(path, stamp)}
    return as_of, models


def prices_as_of() -> str:
    """The date the shipped price table was last checked (record it beside costs)."""
    return _table()[0]


def price_of(model: str) -> Price | None:
    """The price of ``model``, matched exactly or by longest listed prefix.

    A prefix matches only at a name boundary, so ``"gpt-4o-2024-08-06"`` is
    ``gpt-4o`` and ``"gpt-4o-mini-2024-07-18"`` is ``gpt-4o-mini``. A leading
    ``"provider/"`` is ignored. Case-insensitive. The table is the shipped one with
    ``$ORGTEAMS_PRICES`` read over it.

    Returns:
        The price, or None when no listed model matches.

    Raises:
        UserError: ``$ORGTEAMS_PRICES`` names a missing or malformed file.
    """
    name = model.lower().rsplit("/", 1)[-1]
    models = _table()[1]
    if name in models:
        return models[name]
    best = ""
    for known in models:
        if len(known) > len(best) and name.startswith(known) and name[len(known)] in _BOUNDARY:
            best = known
    return models[best] if best else None


def cost(model: str, usage: Usage) -> float | None:
    """USD cost of ``usage`` tokens on ``model``; None when the price is unknown."""
    price = price_of(model)
    return None if price is None else price.cost(usage)
