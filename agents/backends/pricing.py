"""Money cost of LLM calls from the shipped price table (``assets/prices.yaml``).

``cost(model, usage)`` returns USD, or None when the model is not in the table:
an unknown price is reported as unknown, never as free.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import yaml

from orgteams.agents.backends.base import Usage
from orgteams.assets import asset_dir

__all__ = ["Price", "cost", "price_of", "prices_as_of"]

_BOUNDARY = "-:@"


@dataclass(frozen=True)
class Price:
    """USD per 1 million prompt and completion tokens."""

    prompt: float
    completion: float


@cache
def _table() -> tuple[str, dict[str, Price]]:
    path = asset_dir("prices.yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    models: dict[str, Price] = {}
    for name, entry in data["models"].items():
        try:
            models[name.lower()] = Price(float(entry["prompt"]), float(entry["completion"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                f"{path}: model {name!r} needs numeric 'prompt' and 'completion' prices"
            ) from exc
    return str(data.get("as_of", "")), models


def prices_as_of() -> str:
    """The date the price table was last checked (record it beside costs)."""
    return _table()[0]


def price_of(model: str) -> Price | None:
    """The price of ``model``, matched exactly or by longest listed prefix.

    A prefix matches only at a name boundary, so ``"gpt-4o-2024-08-06"`` is
    ``gpt-4o`` and ``"gpt-4o-mini-2024-07-18"`` is ``gpt-4o-mini``. A leading
    ``"provider/"`` is ignored. Case-insensitive.

    Returns:
        The price, or None when no listed model matches.
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
    if price is None:
        return None
    return (usage.prompt_tokens * price.prompt + usage.completion_tokens * price.completion) / 1e6
