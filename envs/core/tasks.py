"""Tasks: goal predicates over object classes, loaded from ``assets/tasks/*.yaml``.

A task file lists candidate predicates such as ``ON(cupcake, coffee_table)``. Each
episode draws a goal of ``units`` objects (3 to 5 by default, as in the papers'
C-WAH tasks) spread over some of those predicates, so two seeds of one task ask
for different things.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from orgteams.assets import asset_dir, asset_names
from orgteams.envs.core.catalog import load_catalog
from orgteams.envs.core.limits import MAX_TICKS
from orgteams.envs.core.user_files import load_yaml, plain_name, read_text
from orgteams.errors import UserError, unknown_name, validation_line

RELATIONS = ("on", "inside")
# At most this many predicates in one goal (array observations have one row each).
MAX_GOAL_PREDICATES = 5


@dataclass(frozen=True)
class Predicate:
    """``relation(cls, target): count``; e.g. ON(cupcake, coffee_table): 2."""

    relation: str
    cls: str
    target: str  # a furniture type
    count: int = 1

    def __str__(self) -> str:
        return f"{self.relation.upper()}({self.cls}, {self.target}): {self.count}"

    def to_dict(self) -> dict:
        """The predicate as plain JSON data (``Predicate(**d)`` reads it back)."""
        return {"relation": self.relation, "cls": self.cls, "target": self.target,
                "count": self.count}


@dataclass(frozen=True)
class TaskSpec:
    """A task as data. See ``assets/tasks/*.yaml`` for the fields."""

    name: str
    description: str
    candidates: tuple[tuple[str, str, str], ...]
    required: tuple[tuple[str, str, str], ...] = ()
    units: tuple[int, int] = (3, 5)
    max_per_predicate: int = 2
    extra_objects: int = 1
    distractors: int = 3
    container_prob: float = 0.4
    far: bool = False  # place goal objects away from the target's room ("hard")
    default_step_limit: int = 400
    step_limits: dict[str, int] = field(default_factory=dict)
    source: str = ""

    def step_limit(self, layout_name: str, num_rooms: int) -> int:
        """Tick limit for a layout: from the task file, else scaled by house size."""
        if layout_name in self.step_limits:
            return self.step_limits[layout_name]
        return int(self.default_step_limit * max(1.0, num_rooms / 6))

    def targets(self) -> set[str]:
        """Every furniture type a goal of this task may name as a target."""
        return {t for _, _, t in self.candidates + self.required}

    def sample_goal(self, rng: np.random.Generator) -> tuple[Predicate, ...]:
        """Draw this episode's goal: ``units`` objects over required + candidate predicates."""
        total = int(rng.integers(self.units[0], self.units[1] + 1))
        preds = list(self.required)
        pool = [c for c in self.candidates if c not in preds]
        order = rng.permutation(len(pool))
        counts = {p: 1 for p in preds}
        remaining = total - len(preds)
        i = 0
        while remaining > 0:
            grow = [p for p in counts if counts[p] < self.max_per_predicate]
            can_add = i < len(order) and len(counts) < MAX_GOAL_PREDICATES
            if can_add and (not grow or rng.random() < 0.6):
                counts[pool[order[i]]] = 1
                i += 1
            elif grow:
                counts[grow[int(rng.integers(len(grow)))]] += 1
            else:
                break
            remaining -= 1
        return tuple(Predicate(r, c, t, n) for (r, c, t), n in counts.items())


def _predicate_shape(value: object) -> object:
    if isinstance(value, str) or (isinstance(value, list)
                                  and all(isinstance(x, str) for x in value)):
        return value
    raise ValueError(f"a predicate must look like ON(class, target) or [on, class, target], "
                     f"got {value!r}")


_Predicate = Annotated[str | list[str], BeforeValidator(_predicate_shape)]
_Count = Annotated[int, Field(ge=0, le=1_000)]
_Limit = Annotated[int, Field(ge=1, le=MAX_TICKS)]


class TaskFile(BaseModel):
    """The fields of a task file and their types (see ``assets/tasks/*.yaml``).

    Predicates are ``"ON(cupcake, coffee_table)"`` or ``[on, cupcake, coffee_table]``;
    their meaning (relation, class, target) is checked when parsed.
    """

    model_config = ConfigDict(extra="forbid")
    name: str
    description: str
    candidates: list[_Predicate]
    required: list[_Predicate] = Field(default_factory=list)
    units: tuple[Annotated[int, Field(ge=1, le=1_000)], Annotated[int, Field(ge=1, le=1_000)]] = (
        3, 5)
    max_per_predicate: Annotated[int, Field(ge=1, le=1_000)] = 2
    extra_objects: _Count = 1
    distractors: _Count = 3
    container_prob: float = Field(default=0.4, ge=0, le=1)
    far: bool = False
    default_step_limit: _Limit = 400
    step_limits: dict[str, _Limit] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        # part of file names (orgteams demos: '<layout>_<task>_n3_s0.npz' under --out)
        return plain_name(value)


def _parse_pred(text, where: str) -> tuple[str, str, str]:
    """Parse ``"ON(cupcake, coffee_table)"`` or ``[on, cupcake, coffee_table]``."""
    catalog = load_catalog()
    if isinstance(text, str):
        head, _, rest = text.partition("(")
        args = [a.strip() for a in rest.rstrip(")").split(",")]
        parts = [head.strip().lower(), *args]
    else:
        parts = [str(x).lower() for x in text]
    if len(parts) != 3:
        raise UserError(f"{where}: predicate {text!r} must look like ON(class, target)")
    rel, cls, target = parts
    if rel not in RELATIONS:
        raise UserError(f"{where}: relation {rel!r} must be one of {', '.join(RELATIONS)}")
    if cls not in catalog.object_glyphs:
        raise UserError(f"{where}: {unknown_name('object class', cls, catalog.object_glyphs)}")
    if target not in catalog.furniture:
        raise UserError(f"{where}: {unknown_name('furniture type', target, catalog.furniture)}")
    if rel == "inside" and not catalog.furniture[target].is_container:
        raise UserError(f"{where}: INSIDE needs a container, and {target!r} is a surface")
    return rel, cls, target


def task_from_dict(data: dict, source: str = "<dict>") -> TaskSpec:
    """Validate a task mapping (the YAML structure) into a :class:`TaskSpec`."""
    known = set(TaskSpec.__dataclass_fields__) - {"source"}
    extra = set(data) - known
    if extra:
        raise UserError(f"{source}: unknown field(s) {sorted(extra)}; known: {sorted(known)}")
    missing = sorted(k for k in ("name", "description") if k not in data)
    if missing:
        raise UserError(f"{source}: missing field(s) {missing}")
    if not data.get("candidates"):
        raise UserError(f"{source}: field 'candidates' must list at least one predicate")
    try:
        kw = TaskFile.model_validate(data).model_dump(exclude_unset=True)
    except ValidationError as exc:
        raise UserError(f"{source}: {validation_line(exc, TaskFile.model_fields)}") from None
    kw["candidates"] = tuple(_parse_pred(p, f"{source}: candidates") for p in kw["candidates"])
    kw["required"] = tuple(_parse_pred(p, f"{source}: required") for p in kw.get("required", []))
    kw["units"] = tuple(kw.get("units", (3, 5)))
    if not 1 <= kw["units"][0] <= kw["units"][1]:
        raise UserError(f"{source}: field 'units' must be [min, max] with 1 <= min <= max")
    most = MAX_GOAL_PREDICATES * kw.get("max_per_predicate", 2)
    if kw["units"][1] > most:
        raise UserError(f"{source}: field 'units' allows at most {most} units "
                        f"({MAX_GOAL_PREDICATES} predicates x max_per_predicate)")
    return TaskSpec(**kw, source=source)


def list_tasks() -> list[str]:
    """The names of the installed tasks (``assets/tasks/*.yaml``)."""
    return asset_names("tasks")


def load_task(name_or_path: str | Path) -> TaskSpec:
    """Load a shipped task by name or a task YAML file by path."""
    text = str(name_or_path)
    path = Path(text)
    if path.suffix not in (".yaml", ".yml"):
        if text not in list_tasks():
            raise unknown_name("task", text, list_tasks())
        path = asset_dir("tasks", f"{text}.yaml")
    data = load_yaml(read_text(path, "a task file"), str(path))
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping of task fields")
    return task_from_dict(data, source=str(path))
