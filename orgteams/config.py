"""What an entry point is asked to do: one :class:`EpisodeConfig` that ``run_episode``,
``orgteams run``/``record``, sweep specs and experiment recipes share, and one
:class:`ReflectConfig` for ``run_reflect``, ``orgteams reflect`` and reflect recipes.

A field is defined once, here: its type, default, check, help text and command-line
flag (:class:`Cli`); ``orgteams <command> --help`` is built from the fields
(:func:`orgteams.cli.options.add_fields`). A check raises a
:class:`~orgteams.errors.FieldProblem` that names no field, and each front end puts its
own name of the field in front of the same text::

    run_episode(max_rounds=0)     max_rounds must be from 1 to 10000, got 0
    orgteams run --max-rounds 0   argument --max-rounds: must be from 1 to 10000, got 0
    sweep spec max_rounds: 0      spec.yaml: sweep spec field 'max_rounds' must be from 1 to
                                  10000, got 0

Names (tasks, layouts, organizations, member specs, shocks' agents) are checked by their
loaders when the episode is built; their errors are whole lines that name the file and
field. This module imports no organization, backend or env code (``orgteams --help``
builds its parser from it); the checks that need them import them when they run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from orgteams.envs.core.limits import (
    MAX_AGENTS,
    MAX_ROUNDS,
    MAX_SEED,
    MAX_TICKS,
    finite_weight,
    int_in_range,
)
from orgteams.errors import FieldProblem, UserError
from orgteams.organizations.rounds.status import (
    DEFAULT_MAX_INVALID_REPLIES,
    DEFAULT_MAX_TRANSPORT_FAILURES,
)

__all__ = ["Cli", "EpisodeConfig", "ReflectConfig", "check_reflector", "int_arg", "names",
           "python_name", "typed"]

MAX_CALL_FAILURES = 1000
"""Largest ``max_transport_failures`` / ``max_invalid_replies`` (0 or None: never stop)."""
MAX_COUNT = 1000
"""Most reflect iterations, candidates or episodes per iteration."""
PROMPT_CHOICES = ("default", "compact")
"""The prompt variants (``agents.llm.prompts.PROMPT_VARIANTS``; a test keeps them equal)."""


@dataclass(frozen=True)
class Cli:
    """How a config field appears on the command line (metadata of the field's type).

    Attributes:
        flag: The option, e.g. ``--max-rounds``.
        parse: Command-line text to the field's value, raising ``ValueError`` (argparse
            prints it as ``argument --flag: <text>``). None: the text as given, checked
            when the config is built (names and specs, whose errors are whole lines).
        metavar: As argparse's; None: the flag's name in capitals (argparse's own).
        choices: As argparse's.
        action: ``store_true``, ``store_false``, ``append`` or an argparse Action class;
            None: a value.
    """

    flag: str
    parse: Callable[[str], Any] | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    action: Any = None


# ---------------------------------------------------------------- checks (value -> value)


def _ints(low: int, high: int) -> Callable[[Any], int]:
    return lambda value: int_in_range(value, low, high)


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else check(value)


def _call_limit(value: Any) -> int | None:
    """A failure limit: 0 to 1000 calls in a row; 0 or None never stops the episode."""
    return None if value is None else int_in_range(value, 0, MAX_CALL_FAILURES)


def _count(value: Any) -> int:
    """Reflect's counts: an integer from 1 to 1000 (``>= 1`` as the loop has always said)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldProblem(f"must be an integer from 1 to {MAX_COUNT}", value, quoted=True)
    if value < 1:
        raise FieldProblem("must be >= 1", value)
    if value > MAX_COUNT:
        raise FieldProblem(f"must be at most {MAX_COUNT}", value)
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FieldProblem("must be a number", value, quoted=True)
    return value


MAX_FPS = 1_000
"""Most ticks per second of a window or video (a test runs its window at 1,000)."""
SCALE_RANGE = (0.1, 8.0)
"""Smallest and largest size factor of a window or video."""


def check_fps(value: Any) -> float:
    """Ticks per second: above 0 and at most :data:`MAX_FPS` (nan, inf and 1e9 made a
    traceback in the video writer, or a writer that never finished)."""
    if not 0 < _number(value) <= MAX_FPS:
        raise FieldProblem(f"must be above 0 and at most {MAX_FPS}", value)
    return value


def check_scale(value: Any) -> float:
    """A size factor within :data:`SCALE_RANGE` (1e9 ran pygame out of memory, 1e-9 made
    frames ffmpeg could not store, nan a traceback)."""
    low, high = SCALE_RANGE
    if not low <= _number(value) <= high:
        raise FieldProblem(f"must be from {low} to {high:g}", value)
    return value


def _max_cost(value: Any) -> float | None:
    """A budget: a positive, finite number of USD (None: no budget)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value):
        raise FieldProblem("must be a positive number of USD", value, quoted=True)
    if value <= 0:
        raise FieldProblem("must be a positive number of USD", value)
    return float(value)


def _price_per_mtok(value: Any) -> Any:
    """None (the price table), or ``"IN,OUT"`` / a pair / a ``Price``: USD per 1 million
    prompt and completion tokens."""
    if value is None:
        return None
    from orgteams.agents.backends.pricing import parse_price

    return parse_price(value)


def _temperature(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FieldProblem("must be a number between 0 and 2", value, quoted=True)
    if not 0.0 <= value <= 2.0:
        raise FieldProblem("must be between 0 and 2", value)
    return float(value)


def _prompts(value: Any) -> Any:
    """None (per backend), a variant's name, or a ``PromptVariant``."""
    if value is None or not isinstance(value, str):
        return value
    from orgteams.agents.llm.prompts import PROMPT_VARIANTS

    if value not in PROMPT_VARIANTS:
        raise UserError(f"unknown prompt variant {value!r}; known: {', '.join(PROMPT_VARIANTS)}")
    return value


def _seeds(value: Any) -> tuple[int, ...]:
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        raise FieldProblem("must be a list of seeds", value, quoted=True)
    return tuple(int_in_range(s, 0, MAX_SEED) for s in value)


def _shocks(value: Any) -> tuple[Any, ...]:
    """Shocks as :class:`~orgteams.organizations.rounds.shocks.Shock`; strings in the
    CLI form (``remove:agent_1@5``) are parsed (a bad one is its own line)."""
    from orgteams.organizations.rounds.shocks import Shock

    if isinstance(value, str | Shock):
        value = [value]
    return tuple(Shock.parse(s) if isinstance(s, str) else s for s in value or ())


def check_reflector(role: str, spec: str) -> None:
    """Check the Critic's or Coordinator's spec: ``heuristic`` or a chat backend spec
    (``local``, ``openai:<model>``, ``scripted``).

    Raises:
        UserError: ``Unknown Coordinator backend kind 'nosuch'. Known: heuristic, ...``
            (with a "Did you mean"), or a malformed spec (``local:foo``).
    """
    from orgteams.agents.backends import BACKENDS
    from orgteams.agents.backends.pool import parse_member_spec
    from orgteams.errors import unknown_name

    if spec == "heuristic":
        return
    kind = str(spec).strip().partition(":")[0]
    if kind not in BACKENDS:
        raise unknown_name(f"{role} backend kind", kind, ["heuristic", *BACKENDS])
    parse_member_spec(spec)  # the model part: local takes none, openai needs one


def _monitor(value: Any) -> Any:
    """True: the default thresholds; False or None: no monitor; or a ``MonitorConfig``."""
    if value is True:
        from orgteams.organizations.rounds.monitor import MonitorConfig

        return MonitorConfig()
    return value or None


# ---------------------------------------------------------------- command-line text -> value


def typed(parse_text: Callable[[str], Any], check: Callable[[Any], Any]
          ) -> Callable[[str], Any]:
    """A command-line parser: ``parse_text`` then the field's ``check``, whose problem
    shows the text as typed (``--temperature 3``: ``got 3``, not ``got 3.0``)."""
    def parse(text: str) -> Any:
        value = parse_text(text)
        try:
            return check(value)
        except FieldProblem as problem:
            raise FieldProblem(problem.problem, text, problem.quoted) from None
    return parse


def _int_text(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"expected an integer from {low} to {high}, got {text!r}") from None
    return parse


def _float_text(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None


def _float_or_nan(text: str) -> float:
    """A weight's text: anything not a number fails the weight's own check."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def int_arg(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type=`` for an integer from ``low`` to ``high`` (one line when not)."""
    return typed(_int_text(low, high), _ints(low, high))


def _seed_list(text: str) -> tuple[int, ...]:
    """``0,5,7``: each seed checked as ``--seed`` is."""
    seeds = tuple(int_arg(0, MAX_SEED)(x.strip()) for x in text.split(",") if x.strip())
    if not seeds:
        raise ValueError(f"expected a comma list of seeds, got {text!r}")
    return seeds


def names(text: str) -> list[str]:
    """``a,b``: a comma list of names."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise ValueError("give at least one name")
    return names


# ---------------------------------------------------------------- field types


def _field(kind: Any, check: Callable[[Any], Any] | None, cli: Cli | None = None) -> Any:
    """A field's type: ``kind`` checked by ``check`` before pydantic sees it."""
    meta = [m for m in (BeforeValidator(check) if check else None, cli) if m is not None]
    return Annotated[(kind, *meta)] if meta else kind


Name = _field(str | Path, None)
Agents = _field(int, _ints(1, MAX_AGENTS), Cli("--agents", int_arg(1, MAX_AGENTS)))
MaxRounds = _field(int | None, _optional(_ints(1, MAX_ROUNDS)),
                   Cli("--max-rounds", int_arg(1, MAX_ROUNDS)))
MaxTicks = _field(int | None, _optional(_ints(1, MAX_TICKS)),
                  Cli("--max-ticks", int_arg(1, MAX_TICKS)))
Cache = _field(str | Path | None, None, Cli("--cache"))
Weight = _field(float, finite_weight, None)
Count = _field(int, _count, None)
# Member specs; from Python, callable policies too (policy members, orgteams.run.build_member)
Specs = _field(str | Callable[..., Any] | list[str | Callable[..., Any]], None,
               Cli("--backend"))
Organization = _field(Any, None, Cli("--org"))


MaxCost = _field(float | None, _max_cost, Cli("--max-cost", typed(_float_or_nan, _max_cost),
                                              metavar="USD"))
PricePerMtok = _field(Any, _price_per_mtok, Cli("--price-per-mtok", typed(str, _price_per_mtok),
                                                metavar="IN,OUT"))


def _max_cost_field(what: str, then: str = "") -> Any:
    return Field(None, description=(
        f"stop {what} cleanly once the model calls' spend (their reported usage, priced) "
        f"reaches USD{then}"))


def _price_field() -> Any:
    return Field(None, description=(
        "USD per 1 million prompt and completion tokens of the openai: models, instead of "
        "assets/prices.yaml ($ORGTEAMS_PRICES: a YAML table of your own)"))


def _call_limit_type(flag: str) -> Any:
    return _field(int | None, _call_limit,
                  Cli(flag, typed(_int_text(0, MAX_CALL_FAILURES), _call_limit), metavar="N"))


def _weight_cli(flag: str) -> Cli:
    return Cli(flag, typed(_float_or_nan, finite_weight))


def _count_cli(flag: str, metavar: str | None = None) -> Cli:
    return Cli(flag, typed(_int_text(1, MAX_COUNT), _count), metavar=metavar)




def _transport_failures() -> Any:
    return Field(DEFAULT_MAX_TRANSPORT_FAILURES, description=(
        "stop an episode with status error after N model calls in a row failed after "
        f"retries (default {DEFAULT_MAX_TRANSPORT_FAILURES}; 0: never)"))


def _invalid_replies() -> Any:
    return Field(DEFAULT_MAX_INVALID_REPLIES, description=(
        "stop an episode with status error after N model calls in a row gave no valid "
        f"reply (default {DEFAULT_MAX_INVALID_REPLIES}; 0: never)"))


TransportFailures = _call_limit_type("--max-transport-failures")
InvalidReplies = _call_limit_type("--max-invalid-replies")

T = TypeVar("T", bound="_Config")


def python_name(field: str) -> str:
    """How Python callers see a field in an error: its keyword (``max_rounds``)."""
    return field


class _Config(BaseModel):
    """Frozen, validated once; :meth:`build` turns a bad value into one line."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    def __init__(self, **values: Any) -> None:
        """``EpisodeConfig(seed=3)``: a bad value is one line, as from :meth:`build`."""
        try:
            super().__init__(**values)
        except ValidationError as exc:
            line = _one_line(exc, python_name)
            line.validation = exc  # so build() can name the field its caller's way
            raise line from None

    @classmethod
    def build(cls: type[T], values: Mapping[str, Any],
              name: Callable[[str], str] = python_name) -> T:
        """The config of ``values`` (fields not given keep their defaults).

        Args:
            values: Field name -> value.
            name: How the caller names a field in an error (``max_rounds``,
                ``argument --max-rounds:``, ``spec.yaml: sweep spec field 'max_rounds'``).

        Raises:
            UserError: ``<name(field)> <problem>`` for a value out of range; a whole line
                of its own for a bad name or spec (a shock, a prompt variant).
        """
        try:
            return cls(**values)
        except UserError as exc:
            validation = getattr(exc, "validation", None)
            if validation is None:
                raise
            raise _one_line(validation, name) from None

    @classmethod
    def check(cls, field: str, value: Any, name: Callable[[str], str] = python_name) -> Any:
        """``value`` checked as ``field`` alone (a sweep spec's option), as :meth:`build`
        would check it."""
        for meta in cls.model_fields[field].metadata:
            if isinstance(meta, BeforeValidator):
                try:
                    value = meta.func(value)
                except FieldProblem as problem:
                    raise problem.named(name(field)) from None
        return value

    def values(self) -> dict[str, Any]:
        """Field name -> value, objects as they are (not dumped)."""
        return {k: getattr(self, k) for k in type(self).model_fields}

    def replace(self: T, **changes: Any) -> T:
        """A copy with ``changes``, checked as :meth:`build` checks."""
        return type(self).build({**self.values(), **changes})

    @classmethod
    def merged(cls: type[T], config: T | None, overrides: Mapping[str, Any], caller: str) -> T:
        """``config`` (or the defaults) with ``overrides``, for ``caller(config, **overrides)``.

        Raises:
            TypeError: An override that is no field (as Python says for a bad keyword).
            UserError: A bad value (see :meth:`build`).
        """
        unknown = sorted(set(overrides) - set(cls.model_fields))
        if unknown:
            raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
        if config is None:
            return cls.build(overrides)
        if not isinstance(config, cls):
            raise TypeError(f"{caller}() takes {cls.__name__} as its config (or keywords), "
                            f"got {type(config).__name__}")
        return config.replace(**overrides) if overrides else config


def _one_line(exc: ValidationError, name: Callable[[str], str]) -> UserError:
    """The first problem of a validation, as the front end names its field."""
    err = exc.errors()[0]
    cause = (err.get("ctx") or {}).get("error")
    field = str(err["loc"][0]) if err["loc"] else ""
    if isinstance(cause, FieldProblem):
        return cause.named(name(field))
    if isinstance(cause, UserError):  # a whole line already (a shock, a reflector's kind)
        return cause
    if err["type"] == "extra_forbidden":
        return UserError(f"{name(field)}: unknown field")
    return UserError(f"{name(field)}: {err['msg']}")


class EpisodeConfig(_Config):
    """One episode: a team under an organization on a task (``run_episode``'s arguments).

    Every field's ``description`` is its ``orgteams run --help`` text. In Python:
    ``organization`` is a name, a YAML path or an ``Organization``; ``backend`` one
    member spec for all agents, a comma list or a list per agent; ``log_path``
    ``"auto"`` (under ``runs/``), a path, or None (kept in memory); ``shocks`` ``Shock``
    objects or CLI strings; ``monitor`` True (default thresholds) or a
    ``MonitorConfig``; ``prompts`` None (per backend: ``local`` gets ``compact``);
    ``render`` ``"human"`` for a window; ``render_options`` extra renderer options;
    ``hold`` keeps a window's last frame up until the person closes it (Q) or replays
    it (R).
    """

    task: Annotated[Name, Cli("--task")] = Field(
        "prepare_afternoon_tea", description="task name (orgteams list tasks)")
    layout: Annotated[Name, Cli("--layout")] = Field(
        "apartment", description="layout name or generated:<rooms>:<seed> (orgteams list "
                                 "layouts)")
    agents: Agents = Field(3, description=f"team size (1 to {MAX_AGENTS})")
    seed: _field(int | None, _optional(_ints(0, MAX_SEED)),
                 Cli("--seed", int_arg(0, MAX_SEED))) = Field(0, description="episode seed")
    organization: Organization = Field("leader", description="organization name or YAML path")
    backend: Specs = Field("local", description=(
        "member spec for all agents or a comma list per agent: local, openai:<model>, "
        "planner, random, human, scripted, policy:<model.zip>"))
    max_rounds: MaxRounds = Field(None, description="stop after this many rounds")
    max_ticks: MaxTicks = Field(None, description="stop after this many ticks (default: the "
                                                  "task's step limit)")
    render: _field(str | None, None, Cli("--render", choices=("human",))) = Field(
        None, description="live pygame window (Space pause, N next tick, +/- speed, H keys; "
                          "closing it stops the run)")
    video: _field(str | Path | None, None, Cli("--video")) = Field(
        None, description="record every tick to this .mp4/.gif")
    fps: _field(float | None, _optional(check_fps), Cli("--fps", typed(_float_text,
                                                                       check_fps))) = Field(
        None, description="ticks per second in the window or video (default: 10)")
    scale: _field(float, check_scale, Cli("--scale", typed(_float_text, check_scale))) = Field(
        1.0, description="size factor of the window (it can also be resized) or video")
    log_path: _field(str | Path | None, None, Cli("--log")) = Field(
        "auto", description="JSONL episode log path (default under runs/)")
    shocks: _field(tuple[Any, ...], _shocks, Cli("--shock", action="append")) = Field(
        (), description="remove:agent_1@5, substitute:agent_1=planner@5, "
                        "regulate:protocol=shared@5 or priority:put_fridge@5 (repeatable; "
                        "docs/shocks.md)")
    monitor: _field(Any, _monitor, Cli("--monitor", action="store_true")) = Field(
        None, description="capability-threshold monitor: fall back to coordinator when needed")
    cache: Cache = Field(None, description="SQLite response cache for LLM calls")
    max_transport_failures: TransportFailures = _transport_failures()
    max_invalid_replies: InvalidReplies = _invalid_replies()
    temperature: _field(float, _temperature, Cli("--temperature", typed(
        _float_text, _temperature))) = Field(
        0.0, description="sampling temperature of LLM members, 0-2 (default 0: greedy; the "
                         "self-organizing paper used 0.7)")
    prompts: _field(Any, _prompts, Cli("--prompts", choices=PROMPT_CHOICES)) = Field(
        None, description="prompt variant of LLM members (default: compact for local, "
                          "default for others)")
    max_cost: MaxCost = _max_cost_field("the episode")
    price_per_mtok: PricePerMtok = _price_field()
    render_options: dict[str, Any] | None = Field(
        None, description="extra options of the renderer (title, scale...)")
    hold: bool = Field(True, description="keep a window's last frame up until it is closed")


class ReflectConfig(_Config):
    """One Criticize-Reflect run (``run_reflect``'s arguments).

    Every field's ``description`` is its ``orgteams reflect --help`` text. ``task`` and
    ``layout`` may be lists, cycled over the episodes like ``seeds`` (see
    :func:`~orgteams.experiments.reflect.make_episode_fn`); ``critic`` and
    ``coordinator`` are ``heuristic`` or a chat backend spec; ``budget_chars`` bounds
    what the Coordinator is shown of the history.
    """

    organization: Organization = Field(
        "leader", description="starting organization name or YAML path")
    task: Annotated[Name | list[str], Cli("--task")] = Field(
        "prepare_afternoon_tea", description="task name (orgteams list tasks)")
    layout: Annotated[Name | list[str], Cli("--layout")] = Field(
        "apartment", description="layout name or generated:<rooms>:<seed> (orgteams list "
                                 "layouts)")
    agents: Agents = Field(3, description=f"team size (1 to {MAX_AGENTS})")
    backend: Specs = Field("local", description="team member spec(s), as for run")
    critic: _field(str, None, Cli("--critic")) = Field(
        "local", description="Critic: heuristic (rules), local, openai:<model>, scripted")
    coordinator: _field(str, None, Cli("--coordinator")) = Field(
        "local", description="Coordinator: heuristic (rules) or a model spec")
    iterations: Annotated[Count, _count_cli("--iterations")] = Field(
        3, description="episodes in all (resumes count)")
    candidates: Annotated[Count, _count_cli("--candidates")] = Field(
        3, description="K organizations proposed each time")
    seeds: _field(tuple[int, ...], _seeds, Cli("--seeds", _seed_list)) = Field(
        (0,), description="comma list of the loop's seeds, cycled, E per iteration "
                          "(default: --seed .. --seed + E - 1, the same every iteration)")
    step_weight: Annotated[Weight, _weight_cli("--step-weight")] = Field(
        1.0, description="weight of ticks in an organization's cost")
    token_weight: Annotated[Weight, _weight_cli("--token-weight")] = Field(
        1.0, description="weight of communicated tokens (sent) per tick in the cost")
    use_critic: _field(bool, None, Cli("--no-critic", action="store_false")) = Field(
        True, description="ablation: reflect without Critic")
    episodes_per_iteration: _field(int | None, _optional(_count),
                                   _count_cli("--episodes-per-iteration")) = Field(
        None, description="seeds each iteration plays (default: 5 with --coordinator "
                          "heuristic, else 1 as in the paper's loop)")
    failure_penalty: Annotated[Weight, _weight_cli("--failure-penalty")] = Field(
        0.0, description="extra cost of a failed episode (it already costs the step limit)")
    screen_candidates: _field(bool | None, None, Cli("--screen", action="boolean")) = Field(
        None, description="play every valid candidate, keep the cheapest (default: on for "
                          "--coordinator heuristic)")
    approved: _field(bool, None, Cli("--approved", action="store_true")) = Field(
        False, description="a human approves changes to needs_approval fields")
    out_dir: _field(str | Path, None, Cli("--out")) = Field(
        "runs/reflect", description="output folder; rerun to resume (default "
                                    "runs/reflect_<org>_<task>)")
    max_rounds: MaxRounds = Field(None, description="stop each episode after this many rounds")
    max_ticks: MaxTicks = Field(None, description="stop each episode after this many ticks "
                                                  "(default: the task's limit)")
    cache: Cache = Field(None, description="SQLite response cache for LLM calls")
    max_transport_failures: TransportFailures = _transport_failures()
    max_invalid_replies: InvalidReplies = _invalid_replies()
    budget_chars: _field(int, _ints(1, 10**7), None) = Field(
        6000, description="most characters of history the Coordinator is shown")
    max_cost: MaxCost = _max_cost_field(
        "the run (or its --evaluate)", "; the folder's spend.json keeps the spend: rerun "
        "with a higher one to go on")
    price_per_mtok: PricePerMtok = _price_field()

    def episode(self) -> EpisodeConfig:
        """What every episode of the loop shares: the team, the limits, the cache (the
        schedule gives each its task, layout, seed, organization and log)."""
        return EpisodeConfig.build({k: getattr(self, k) for k in _SHARED_WITH_EPISODES})

    @model_validator(mode="after")
    def _reflectors(self) -> ReflectConfig:
        """The Coordinator's and Critic's kinds, before anything is built or started."""
        check_reflector("Coordinator", self.coordinator)
        if self.use_critic:
            check_reflector("Critic", self.critic)
        return self


_SHARED_WITH_EPISODES = ("agents", "backend", "max_rounds", "max_ticks", "cache",
                         "max_transport_failures", "max_invalid_replies")
"""The :class:`ReflectConfig` fields each of its episodes' :class:`EpisodeConfig` takes."""
