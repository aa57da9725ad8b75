"""The sweep spec: tasks x layouts x organizations x team sizes x backends x seeds.

Loaded from YAML (``assets/sweeps/example.yaml``) or CLI lists and validated before
any episode runs; every error names the spec field (see :mod:`orgteams.experiments.sweep`).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from orgteams.config import EpisodeConfig
from orgteams.envs.core.limits import MAX_SEED, MAX_SEEDS, MAX_SWEEP_CELLS
from orgteams.envs.core.user_files import load_yaml, read_text
from orgteams.errors import UserError
from orgteams.organizations.rounds.status import (
    DEFAULT_MAX_INVALID_REPLIES,
    DEFAULT_MAX_TRANSPORT_FAILURES,
)

EPISODE_FIELDS = ("max_rounds", "max_ticks", "cache", "max_transport_failures",
                  "max_invalid_replies")
"""The :class:`~orgteams.config.EpisodeConfig` fields a spec gives every episode."""
BUDGET_FIELDS = ("max_cost", "price_per_mtok")
"""The fields of the sweep's budget (checked as :class:`~orgteams.config.EpisodeConfig`
checks them): for the whole sweep, not each episode."""


@dataclass(frozen=True)
class SweepSpec:
    """What to run: every combination of the lists, once per seed.

    ``seeds`` is a count (seeds ``0..n-1``) or an explicit list. ``backends`` are
    member specs as in ``orgteams run --backend`` (one for all agents, or a comma list
    per agent). ``max_rounds``, ``max_ticks``, ``cache``, ``max_transport_failures`` and
    ``max_invalid_replies`` (0: never stop an episode for failed model calls, or for
    calls that gave no valid reply) are passed to every episode.
    ``shocks`` maps a condition name to its shocks (``orgteams run --shock`` strings, or
    mappings with ``kind``, ``round``, ``agent`` / ``member`` / ``field`` / ``value``); the
    conditions are one more dimension of the product (empty: no shocks, no dimension).
    ``max_cost`` (USD) stops the sweep cleanly once the spend of its model calls, kept in
    ``<out>/spend.json`` across reruns, reaches it; ``price_per_mtok`` (``[IN, OUT]``
    USD per 1 million tokens) prices its ``openai:`` models instead of the price table.
    """

    tasks: tuple[str, ...] = ("prepare_afternoon_tea",)
    layouts: tuple[str, ...] = ("studio",)
    organizations: tuple[str, ...] = ("none", "leader")
    agents: tuple[int, ...] = (3,)
    backends: tuple[str, ...] = ("planner",)
    seeds: tuple[int, ...] = tuple(range(5))
    max_rounds: int | None = None
    max_ticks: int | None = None
    cache: str | None = None
    max_transport_failures: int = DEFAULT_MAX_TRANSPORT_FAILURES
    max_invalid_replies: int = DEFAULT_MAX_INVALID_REPLIES
    shocks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    max_cost: float | None = None
    price_per_mtok: Any = None

    def __post_init__(self) -> None:
        # Built in Python, ``seeds=20`` is the count this docstring promises (it was a
        # TypeError deep in validate(): "object of type 'int' has no len()").
        if isinstance(self.seeds, int | str):
            object.__setattr__(self, "seeds", parse_seeds(self.seeds, "SweepSpec"))

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<spec>") -> SweepSpec:
        """Build from a mapping (YAML); unknown keys and bad values raise ``UserError``."""
        if not isinstance(data, dict):
            raise UserError(f"{source}: a sweep spec must be a mapping of fields")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserError(f"{source}: unknown sweep spec field {unknown[0]!r} "
                            f"(fields: {', '.join(sorted(known))})")
        kw: dict[str, Any] = {}
        for name in ("tasks", "layouts", "organizations", "backends"):
            if name in data:
                kw[name] = _str_list(data[name], name, source)
        if "agents" in data:
            kw["agents"] = _int_list(data["agents"], "agents", source)
        if "seeds" in data:
            kw["seeds"] = parse_seeds(data["seeds"], source)
        kw.update(_episode_options(data, source))
        kw.update(_budget(data, source))
        if data.get("shocks") is not None:
            kw["shocks"] = _shock_conditions(data["shocks"], source)
        return cls(**kw)

    @classmethod
    def from_yaml(cls, path: str | Path) -> SweepSpec:
        """The spec in the YAML file ``path``.

        Raises:
            FileNotFoundError: No file there.
            UserError: A malformed file or field (one line naming the file and field).
        """
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"sweep spec not found: {path}")
        data = load_yaml(read_text(path, "a sweep spec"), str(path)) or {}
        return cls.from_dict(data, source=str(path))

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain YAML/JSON data (lists, not tuples), as a sweep's folder keeps it."""
        d = asdict(self)
        d["shocks"] = {k: list(v) for k, v in self.shocks.items()}
        if self.price_per_mtok is not None:
            d["price_per_mtok"] = [self.price_per_mtok.prompt, self.price_per_mtok.completion]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    def cells(self) -> Iterator[dict[str, Any]]:
        """Every cell of the product, in a stable order (seed varies fastest). With
        ``shocks`` a cell also names its condition (``shocks``) and lists them
        (``shock_list``)."""
        conditions = list(self.shocks.items()) or [(None, ())]
        for t, lay, org, n, b, (cond, shocks), s in itertools.product(
                self.tasks, self.layouts, self.organizations, self.agents, self.backends,
                conditions, self.seeds):
            cell = {"task": t, "layout": lay, "organization": org, "agents": n, "backend": b,
                    "seed": s}
            if cond is not None:
                cell.update(shocks=cond, shock_list=list(shocks))
            yield cell

    def validate(self, source: str = "", flags: Mapping[str, str] | None = None) -> None:
        """Check every name before any episode runs; errors name the spec field.

        Args:
            source: Where the spec came from (its file, ``command line``, ``experiment
                NAME``): each error starts with it, as :meth:`from_dict`'s do.
            flags: Field -> the flag that gave it over the file or recipe
                (``{"backends": "--backend"}``): their errors name the flag, as
                argparse does (``command line: argument --backend: ...``).
        """
        try:
            self._validate()
        except UserError as exc:
            named = exc.field if isinstance(exc, _FieldError) else None
            flag = (flags or {}).get(named) if named is not None else None
            if flag is not None:
                raise UserError(f"command line: argument {flag}: {exc.text}") from None
            if not source:
                raise
            raise UserError(f"{source}: {exc}") from None

    def _validate(self) -> None:
        from orgteams.envs.core.layout import load_layout
        from orgteams.envs.core.tasks import load_task

        for name in ("tasks", "layouts", "organizations", "agents", "backends", "seeds"):
            value = getattr(self, name)
            if not isinstance(value, list | tuple):  # organizations="leader": 6 letters
                raise _FieldError(name, f"must be a list, got {value!r}")
            if not value:
                raise _FieldError(name, "empty list")
        for t in self.tasks:
            _field("tasks", load_task, t)
        for lay in self.layouts:
            _field("layouts", load_layout, lay)
        for n in self.agents:
            _field("agents", lambda n: EpisodeConfig.check("agents", n, _a_team_size), n)
        cells = math.prod(len(getattr(self, f)) for f in (
            "tasks", "layouts", "organizations", "agents", "backends", "seeds"))
        cells *= max(1, len(self.shocks))
        if cells > MAX_SWEEP_CELLS:
            raise UserError(f"the sweep spec has {cells} cells (episodes); the limit is "
                            f"{MAX_SWEEP_CELLS}")
        self._validate_organizations()
        self._validate_backends()

    def _validate_organizations(self) -> None:
        """Each organization resolves for each team size, and takes each shock condition."""
        from orgteams.agents.backends.pool import parse_member_spec
        from orgteams.agents.team import Team
        from orgteams.organizations.rounds.shocks import Shock, check_shocks
        from orgteams.organizations.spec.library import load_organization

        for o in self.organizations:
            org = _field("organizations", load_organization, o)
            for n in self.agents:
                _field("organizations", lambda _o, n=n, org=org: org.resolve(
                    Team.of_size(n)), f"{o} with {n} agents")
                for cond, texts in self.shocks.items():
                    team = Team.of_size(n)
                    _field(f"shocks.{cond}", lambda _t, team=team, org=org, texts=texts:
                           check_shocks([Shock.parse(t) for t in texts], list(team.ids),
                                        _spec_only, org, team), None)
        for cond, texts in self.shocks.items():
            for shock in map(Shock.parse, texts):
                if shock.kind == "substitute":
                    _field(f"shocks.{cond}", parse_member_spec, shock.member)

    def _validate_backends(self) -> None:
        """Every member spec parses, none is a person, and each team has one or n."""
        from orgteams.agents.backends.pool import parse_member_spec

        for b in self.backends:
            parts = [p.strip() for p in b.split(",")]
            for p in parts:
                kind, _ = _field("backends", parse_member_spec, p)
                if kind == "human":
                    raise _FieldError("backends", "a sweep cannot wait for a human member; use "
                                   "planner, random, local or openai:<m>")
            bad = [n for n in self.agents if len(parts) not in (1, n)]
            if bad:
                raise _FieldError("backends", f"{b!r} lists {len(parts)} members but a team "
                               f"has {bad[0]} agents")

    def episode_options(self) -> dict[str, Any]:
        """What every cell's :class:`~orgteams.config.EpisodeConfig` takes from the spec
        (:data:`EPISODE_FIELDS`; a failure limit of 0 never stops an episode)."""
        return {name: getattr(self, name) for name in EPISODE_FIELDS}

    @property
    def uses_local(self) -> bool:
        """Whether any member of any backend is the embedded ``local`` model."""
        return any(p.strip().split(":")[0] == "local" for b in self.backends
                   for p in b.split(","))


def cell_config(cell: dict[str, Any], log_path: str | None, options: dict[str, Any]
                ) -> EpisodeConfig:
    """The :class:`~orgteams.config.EpisodeConfig` of one cell (of :meth:`SweepSpec.cells`)
    with the spec's :meth:`~SweepSpec.episode_options` (other keys of ``options``, such as
    the sweep's ``spend``, are not the episode's)."""
    return EpisodeConfig.build({
        "task": cell["task"], "layout": cell["layout"], "organization": cell["organization"],
        "agents": cell["agents"], "backend": cell["backend"], "seed": cell["seed"],
        "log_path": log_path, "shocks": list(cell.get("shock_list") or ()),
        **{k: v for k, v in options.items() if k in EPISODE_FIELDS}})


def _a_team_size(key: str) -> str:
    return "a team size"


def _spec_only(agent: str, spec: str) -> None:
    """Stands in for a member factory while validating: substitutes are built per cell."""


def _episode_options(data: dict[str, Any], source: str) -> dict[str, Any]:
    """The spec's :data:`EPISODE_FIELDS` given (not None), each checked as
    :class:`~orgteams.config.EpisodeConfig` checks it (the same problem text as
    ``run_episode`` and ``orgteams run``), after the spec's own reading of numbers
    (``"5"`` and ``[5]`` are 5)."""
    from orgteams.config import EpisodeConfig

    def name(key: str) -> str:
        return f"{source}: sweep spec field {key!r}"

    out = {}
    for key in EPISODE_FIELDS:
        value = data.get(key)
        if value is None:
            continue
        if key != "cache":
            value = _int_list(value, key, source)[0]
        out[key] = EpisodeConfig.check(key, value, name)
    if "cache" in out:
        out["cache"] = str(out["cache"])
    return out


def _budget(data: dict[str, Any], source: str) -> dict[str, Any]:
    """The spec's :data:`BUDGET_FIELDS` given (not None), checked as
    :class:`~orgteams.config.EpisodeConfig` checks them."""
    return {key: EpisodeConfig.check(key, data[key],
                                     lambda k: f"{source}: sweep spec field {k!r}")
            for key in BUDGET_FIELDS if data.get(key) is not None}


def _shock_conditions(v: Any, source: str) -> dict[str, tuple[str, ...]]:
    """``{condition: [shock, ...]}`` with every shock parsed and written in CLI form."""
    from orgteams.organizations.rounds.shocks import Shock

    if not isinstance(v, dict) or not all(isinstance(k, str) and k for k in v):
        raise UserError(f"{source}: sweep spec field 'shocks' must map condition names to "
                        "lists of shocks")
    out = {}
    for cond, items in v.items():
        where = f"{source}: sweep spec field 'shocks.{cond}'"
        if items is None:
            items = []
        if not isinstance(items, list | tuple):
            raise UserError(f"{where} must be a list of shocks")
        out[cond] = tuple(
            Shock.from_spec(item, f"{source}: sweep spec field 'shocks.{cond}[{i}]'").text()
            for i, item in enumerate(items))
    return out


class _FieldError(UserError):
    """``sweep spec field 'NAME': TEXT``, knowing its field (``validate`` names its source)."""

    def __init__(self, name: str, text: str) -> None:
        super().__init__(f"sweep spec field '{name}': {text}")
        self.field, self.text = name.split(".")[0], text


def _field(name: str, fn: Callable[[Any], Any], value: Any) -> Any:
    try:
        return fn(value)
    except (UserError, FileNotFoundError) as exc:
        raise _FieldError(name, str(exc)) from None


def _str_list(v: Any, name: str, source: str) -> tuple[str, ...]:
    items = v.split(",") if isinstance(v, str) else v
    if not isinstance(items, list | tuple) or not all(isinstance(x, str | int) for x in items):
        raise UserError(f"{source}: sweep spec field '{name}' must be a list of names")
    return tuple(str(x).strip() for x in items if str(x).strip())


def _int_list(v: Any, name: str, source: str) -> tuple[int, ...]:
    items = v.split(",") if isinstance(v, str) else (v if isinstance(v, list | tuple) else [v])
    try:
        return tuple(int(x) for x in items)
    except (TypeError, ValueError):
        raise UserError(f"{source}: sweep spec field '{name}' must be integers, got {v!r}"
                        ) from None


def parse_seeds(v: Any, source: str = "<spec>") -> tuple[int, ...]:
    """``20`` -> seeds 0..19; a list or ``"0,5,7"`` -> those; ``"10-19"`` -> a range.

    At most :data:`~orgteams.envs.core.limits.MAX_SEEDS` seeds, each from 0 to ``MAX_SEED``.
    """
    where = f"{source}: sweep spec field 'seeds'"
    if isinstance(v, str) and re.fullmatch(r"\s*\d+\s*-\s*\d+\s*", v):
        lo, hi = (int(x) for x in v.split("-"))
        _check_seed_count(hi - lo + 1, where)
        seeds = tuple(range(lo, hi + 1))
    elif isinstance(v, int) and not isinstance(v, bool) or (
            isinstance(v, str) and v.strip().isdigit()):
        n = int(v)
        if n < 1:
            raise UserError(f"{where}: need at least one seed")
        _check_seed_count(n, where)
        seeds = tuple(range(n))
    else:
        if isinstance(v, list | tuple):
            _check_seed_count(len(v), where)
        seeds = _int_list(v, "seeds", source)
    if not seeds:
        raise UserError(f"{where}: need at least one seed")
    for s in seeds:
        if not 0 <= s <= MAX_SEED:
            raise UserError(f"{where}: seed {s} is not from 0 to {MAX_SEED}")
    return seeds


def _check_seed_count(n: int, where: str) -> None:
    if n > MAX_SEEDS:
        raise UserError(f"{where}: {n} seeds; the limit is {MAX_SEEDS}")


def spec_from_lists(base: SweepSpec | None = None, **lists: Iterable | None) -> SweepSpec:
    """``base`` (or the defaults) with the given non-None fields replaced (CLI helper)."""
    data = (base or SweepSpec()).to_dict()
    data.update({k: v for k, v in lists.items() if v is not None})
    return SweepSpec.from_dict(data, source="command line")
