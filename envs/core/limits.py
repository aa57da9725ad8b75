"""Documented caps on what a user may ask for; past them the request is refused in one line.

Without caps a 10,000 x 10,000 grid ran 300 s and took 4 GB, and ``seeds: 1000000000``
ran out of memory building the sweep. The caps are far above anything the papers or
benchmarks use (generated houses of 83 rooms are about 100 x 80 cells; the largest
team in the tests has 64 agents).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from orgteams.errors import FieldProblem

MAX_GRID_SIDE = 512
"""Most rows or columns of a layout grid."""
MAX_AGENTS = 256
"""Largest team."""
MAX_ROUNDS = 10_000
"""Most rounds of one episode (``--max-rounds``)."""
MAX_TICKS = 1_000_000
"""Most ticks of one episode (``--max-ticks``, a task's step limit)."""
MAX_SEEDS = 100_000
"""Most seeds in one sweep spec."""
MAX_SWEEP_CELLS = 1_000_000
"""Most episodes (cells) in one sweep spec."""
MAX_SEED = 2**32 - 1
"""Largest seed (numpy's legacy seeding range; seeds are never negative)."""

MESSAGE_MAX_CHARS = 300
"""Longest message a member may send (characters): models, people, the keyboard player."""

MAX_FILE_BYTES = 4 * 1024 * 1024
"""Largest organization, layout, task or sweep-spec file (bytes); a 512 x 512 grid is
about 270 KB, a spec listing 100,000 seeds about 700 KB."""
MAX_YAML_DEPTH = 100
"""Deepest nesting of YAML mappings and sequences in those files (the shipped ones nest
at most 5 levels; PyYAML recurses once per level)."""
MAX_YAML_NODES = 1_000_000
"""Most YAML nodes in one of those files once every alias is expanded (a "billion
laughs" of nested aliases is small on disk but not to a validator)."""


def int_in_range(value: Any, low: int, high: int) -> int:
    """``value`` as an int in ``[low, high]``, else a :class:`FieldProblem` (without a name).

    Bools are refused: ``True`` is not a team size.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise FieldProblem(f"must be an integer from {low} to {high}", value, quoted=True)
    if not low <= value <= high:
        raise FieldProblem(f"must be from {low} to {high}", value)
    return int(value)


def check_int(value: Any, name: str, low: int, high: int) -> int:
    """``value`` as an int in ``[low, high]``, else a UserError naming ``name``
    (``seed must be from 0 to 4294967295, got -1``)."""
    try:
        return int_in_range(value, low, high)
    except FieldProblem as problem:
        raise problem.named(name) from None


def finite_weight(value: Any) -> float:
    """``value`` as a finite float >= 0 (a cost weight), else a :class:`FieldProblem`."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value) or value < 0:
        raise FieldProblem("must be a finite number >= 0", value, quoted=True)
    return float(value)
