"""What a run spends on model calls, priced from the usage its backends report, and its
budget (``max_cost``).

A :class:`Spend` given to a :class:`~orgteams.agents.backends.pool.BackendPool` meters
every backend the pool makes (:class:`MeteredBackend`): each reply's reported usage is
priced (:meth:`Spend.price_for`: the run's ``price_per_mtok`` for ``openai:`` models,
else the price table of :mod:`~orgteams.agents.backends.pricing`) and added up; a
reply from the response cache costs nothing. ``run_episode`` stops an episode whose
pool's spend reached ``max_cost`` at its next check (``episode_status`` ``interrupted``,
``stop_reason`` ``max cost``): after each stage's calls, before their decisions are
used, and at every tick. Calls already started finish and are charged, so a run can
pass its budget by the calls of one stage (one per member speaking at once, and their
retries).

With a ledger (``<out>/spend.json`` of a sweep, reflect run or experiment) the spend is
kept across reruns and shared by processes: each charge adds itself to the file under a
lock (``filelock``) and reads the total back, so a sweep's workers see each other's
spend at their next call, and a rerun starts from what the folder already spent.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from orgteams.agents.backends.base import ChatBackend, ChatMessage, Completion
from orgteams.agents.backends.pricing import PRICES_ENV, Price, price_of
from orgteams.errors import UserError

__all__ = ["LEDGER", "LLM_KINDS", "MAX_COST", "BudgetReached", "MeteredBackend", "Spend",
           "check_priced", "price_for", "run_models", "usd"]

MAX_COST = "max cost"
"""The ``stop_reason`` of an episode its run's budget stopped (``interrupted``)."""
LEDGER = "spend.json"
"""The ledger's name in a run's output folder."""
PRICED_BY_RUN = ("openai",)
"""Member kinds the run's own ``price_per_mtok`` prices (the embedded and scripted
models cost nothing to call)."""
LLM_KINDS = ("local", "scripted", "openai")
"""Member kinds that call a model."""


def price_for(kind: str, model: str, price: Price | None = None) -> Price | None:
    """The price of ``model`` called as member kind ``kind``: the run's own ``price``
    for ``openai`` models, else the price table's (None: unknown)."""
    if price is not None and kind in PRICED_BY_RUN:
        return price
    return price_of(model)


def run_models(specs: Iterable[str]) -> list[tuple[str, str]]:
    """The ``(kind, model)`` of every model member spec in ``specs`` (comma lists too;
    planners, random and human members call no model), each once."""
    from orgteams.agents.backends.pool import parse_member_spec

    found: dict[tuple[str, str], None] = {}
    for spec in specs:
        for part in str(spec).split(","):
            kind, model = parse_member_spec(part)
            if kind in LLM_KINDS:
                found[(kind, _model_name(kind, model))] = None
    return list(found)


def _model_name(kind: str, model: str | None) -> str:
    """The model a member kind calls: ``openai`` without a name calls ``$ORGTEAMS_MODEL``."""
    if model:
        return model
    if kind == "local":
        from orgteams.agents.backends.local import LOCAL_MODEL

        return LOCAL_MODEL
    if kind == "openai":
        return os.environ.get("ORGTEAMS_MODEL") or "?"
    return kind


def check_priced(models: Sequence[tuple[str, str]], price: Price | None,
                 max_cost: float | None, flag: str = "--max-cost") -> bool:
    """Whether a run of ``models`` calls one that costs money (or has no known price):
    its spend is worth metering and its estimate worth printing.

    Raises:
        UserError: ``max_cost`` is set and a model has no known price (its spend could
            not be measured): ``--max-cost: no price for model 'x' (openai:x); ...``.
    """
    priced = False
    for kind, model in models:
        p = price_for(kind, model, price)
        if p is None and max_cost is not None:
            raise UserError(f"{flag}: no price for model {model!r} ({kind}:{model}); give "
                            f"--price-per-mtok IN,OUT or add it to a price table named by "
                            f"${PRICES_ENV}")
        priced = priced or p is None or p.prompt > 0 or p.completion > 0
    return priced


def usd(amount: float) -> str:
    """``$1.25``, ``$0.0042``, ``$3.1e-06``: dollars with the digits that matter."""
    if amount == 0:
        return "$0"
    if amount >= 1:
        return f"${amount:,.2f}"
    if amount >= 1e-4:
        return f"${amount:.4f}"
    return f"${amount:.2g}"


class BudgetReached(Exception):
    """A run stopped because its spend reached ``max_cost``; rerun with a higher one.

    Attributes:
        spent: USD spent in all (the ledger's total, earlier runs included).
        max_cost: The budget, USD.
        ledger: Where the spend is kept (None: this run only).
        done: What was finished, in words (``3 of 8 episodes``), or ''.
    """

    def __init__(self, spent: float, max_cost: float, ledger: Path | None = None,
                 done: str = "") -> None:
        self.spent, self.max_cost, self.ledger, self.done = spent, max_cost, ledger, done
        super().__init__(self.line("max cost"))

    def line(self, flag: str = "--max-cost") -> str:
        """One line: ``budget reached: spent $X of --max-cost $Y (spend in <ledger>);
        <done> done; rerun with a higher --max-cost to go on``."""
        where = f" (spend in {self.ledger})" if self.ledger is not None else ""
        done = f"; {self.done} done" if self.done else ""
        return (f"budget reached: spent {usd(self.spent)} of {flag} {usd(self.max_cost)}"
                f"{where}{done}; rerun with a higher {flag} to go on")


@dataclass
class _Totals:
    """Spend in all, and per model."""

    spent_usd: float = 0.0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unpriced_calls: int = 0
    by_model: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, model: str, prompt: int, completion: int, cost: float | None) -> None:
        self.calls += 1
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        row = self.by_model.setdefault(model, {"calls": 0, "prompt_tokens": 0,
                                               "completion_tokens": 0, "usd": 0.0})
        row["calls"] += 1
        row["prompt_tokens"] += prompt
        row["completion_tokens"] += completion
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.spent_usd += cost
            row["usd"] += cost

    def to_dict(self) -> dict[str, Any]:
        return {"spent_usd": self.spent_usd, "calls": self.calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "unpriced_calls": self.unpriced_calls, "by_model": self.by_model}

    @classmethod
    def read(cls, path: Path) -> _Totals:
        """The ledger at ``path`` (none yet: zero).

        Raises:
            UserError: The file is not a ledger (edited by hand, or another file).
        """
        if not path.exists():
            return cls()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            totals = cls(float(data["spent_usd"]), int(data["calls"]),
                         int(data["prompt_tokens"]), int(data["completion_tokens"]),
                         int(data.get("unpriced_calls", 0)), dict(data.get("by_model") or {}))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UserError(f"{path}: not a spend ledger ({type(exc).__name__}: {exc}); "
                            "move it away to count the spend from zero") from None
        if not math.isfinite(totals.spent_usd) or totals.spent_usd < 0:
            raise UserError(f"{path}: not a spend ledger (spent_usd {totals.spent_usd})")
        return totals


class Spend:
    """The money a run spends on model calls, and its budget.

    Args:
        max_cost: The budget in USD; None: metered, never stopped.
        ledger: A JSON file that keeps the spend across reruns and processes (a run's
            ``<out>/spend.json``); None: this object only.
        price: The run's own price for its ``openai:`` models (``price_per_mtok``); None:
            the price table.

    A ``Spend`` pickles as its settings (a sweep's worker processes get a copy that
    meters into the same ledger).
    """

    def __init__(self, max_cost: float | None = None, ledger: str | Path | None = None,
                 price: Price | None = None) -> None:
        if max_cost is not None and not (isinstance(max_cost, int | float)
                                         and math.isfinite(max_cost) and max_cost > 0):
            raise ValueError(f"max_cost must be a positive number of USD, got {max_cost!r}")
        self.max_cost = None if max_cost is None else float(max_cost)
        self.ledger = None if ledger is None else Path(ledger)
        self.price = price
        self._lock = threading.Lock()
        self._totals = _Totals.read(self.ledger) if self.ledger is not None else _Totals()
        self.cached_calls = 0
        """Replies served from a response cache (free), this process."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (Spend, (self.max_cost, self.ledger, self.price))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spend) and (self.max_cost, self.ledger, self.price) == (
            other.max_cost, other.ledger, other.price)

    __hash__ = None  # type: ignore[assignment]  (settings compare; the totals change)

    def __repr__(self) -> str:
        return (f"Spend(max_cost={self.max_cost}, ledger={self.ledger}, "
                f"spent={usd(self.spent)})")

    # ------------------------------------------------------------ prices

    def price_for(self, kind: str, model: str) -> Price | None:
        """The price of ``model`` called as member kind ``kind``: the run's own price for
        ``openai`` models, else the price table's (None: unknown)."""
        return price_for(kind, model, self.price)

    # ------------------------------------------------------------ spending

    def charge(self, kind: str, model: str, completion: Completion) -> float | None:
        """Add one reply's cost (its reported usage at :meth:`price_for` of the model that
        answered, else ``model``: the one asked); return it (None: no price known; its
        tokens are still counted)."""
        if completion.cached:
            with self._lock:
                self.cached_calls += 1
            return 0.0
        model = completion.model or model
        price = self.price_for(kind, model)
        usage = completion.usage
        cost = None if price is None else price.cost(usage)
        with self._lock:
            if self.ledger is None:
                self._totals.add(model, usage.prompt_tokens, usage.completion_tokens, cost)
            else:
                self._totals = self._add_to_ledger(model, usage.prompt_tokens,
                                                   usage.completion_tokens, cost)
        return cost

    def _add_to_ledger(self, model: str, prompt: int, completion: int,
                       cost: float | None) -> _Totals:
        from filelock import FileLock

        assert self.ledger is not None
        with FileLock(f"{self.ledger}.lock"):
            totals = _Totals.read(self.ledger)
            totals.add(model, prompt, completion, cost)
            data = {**totals.to_dict(), "max_cost": self.max_cost,
                    "updated_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            self.ledger.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.ledger.with_name(f".{self.ledger.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
            os.replace(tmp, self.ledger)  # whole or not at all, whatever kills us
        return totals

    def refresh(self) -> None:
        """Read the ledger again (what other processes spent since this one last did)."""
        if self.ledger is not None:
            with self._lock:
                self._totals = _Totals.read(self.ledger)

    @property
    def spent(self) -> float:
        """USD spent as this object last knew it (the ledger's total at its last charge
        or :meth:`refresh`)."""
        return self._totals.spent_usd

    @property
    def totals(self) -> dict[str, Any]:
        """Calls, tokens and USD in all, and per model."""
        return self._totals.to_dict()

    def reached(self) -> bool:
        """Whether the spend reached ``max_cost`` (never without one)."""
        return self.max_cost is not None and self.spent >= self.max_cost

    def stop_reason(self) -> str | None:
        """``max cost`` once the budget is reached (an episode's ``should_stop``)."""
        return MAX_COST if self.reached() else None

    def check(self, done: str = "") -> None:
        """Raise :class:`BudgetReached` when the budget is reached.

        Args:
            done: What was finished, for the message (``3 of 8 episodes``).
        """
        if self.reached():
            assert self.max_cost is not None
            raise BudgetReached(self.spent, self.max_cost, self.ledger, done)


class MeteredBackend(ChatBackend):
    """A backend whose every reply is charged to a :class:`Spend` (made by the pool).

    Args:
        inner: The backend that answers.
        spend: What the replies are charged to.
        kind: The member kind it was made for (``openai``, ``local``...), which says
            whether the run's own price applies.
    """

    def __init__(self, inner: ChatBackend, spend: Spend, kind: str) -> None:
        self.inner, self.spend, self.kind = inner, spend, kind

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    @property
    def model(self) -> str:  # type: ignore[override]
        return self.inner.model

    def __repr__(self) -> str:
        return f"MeteredBackend({self.inner!r})"

    def complete(self, messages: list[ChatMessage], *, schema: dict[str, Any] | None = None,
                 temperature: float = 0.0, max_tokens: int = 256, seed: int | None = None
                 ) -> Completion:
        """The inner backend's reply, charged."""
        reply = self.inner.complete(messages, schema=schema, temperature=temperature,
                                    max_tokens=max_tokens, seed=seed)
        self.spend.charge(self.kind, self.inner.model, reply)
        return reply

    async def acomplete(self, messages: list[ChatMessage], *,
                        schema: dict[str, Any] | None = None, temperature: float = 0.0,
                        max_tokens: int = 256, seed: int | None = None) -> Completion:
        """The inner backend's reply, charged."""
        reply = await self.inner.acomplete(messages, schema=schema, temperature=temperature,
                                           max_tokens=max_tokens, seed=seed)
        self.spend.charge(self.kind, self.inner.model, reply)
        return reply

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        await self.inner.aclose()
