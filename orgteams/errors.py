"""The one exception type for bad user input, and the "did you mean" lines it carries.

``UserError`` means "what the user gave us is wrong": an unknown name, a malformed
layout, task, organization or sweep file, an out-of-range option. The CLI prints it as
one line and exits 2. Anything else that escapes is our bug and keeps its traceback.
It subclasses ``ValueError`` so callers that catch ``ValueError`` keep working.

A leaf module: it imports nothing of ours, so every layer (``envs`` included) may
import it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

__all__ = ["FieldProblem", "MissingExtraError", "UserError", "did_you_mean",
           "script_needs_extra", "unknown_name", "validation_line"]


class UserError(ValueError):
    """Bad input from the user (a file, an option, a name); the message says where."""


class MissingExtraError(UserError, ImportError):
    """A feature the user asked for needs an optional extra that is not installed.

    The message carries the install hint (``pip install 'orgteams[render]'``). It is
    also an ``ImportError``, so code that tries an import and falls back keeps working.
    """


class FieldProblem(UserError):
    """What is wrong with one value, told without the value's name: ``must be from 1 to
    10000, got 0``. Each front end names the field its own way in front of it
    (``max_rounds must be ...``, ``argument --max-rounds: must be ...``, ``spec.yaml:
    sweep spec field 'max_rounds' must be ...``), so one check gives one text everywhere.

    Args:
        problem: The rule broken (``must be from 1 to 10000``).
        got: The value given.
        quoted: Show the value as its ``repr`` (``got 'nan'``), not as text (``got 0``).
    """

    def __init__(self, problem: str, got: Any, quoted: bool = False) -> None:
        self.problem, self.got, self.quoted = problem, got, quoted
        super().__init__(self.told(got))

    def told(self, got: Any) -> str:
        """The problem with ``got`` shown as the value (the command line shows the text
        that was typed: ``--temperature 3`` gets ``got 3``, not ``got 3.0``)."""
        return f"{self.problem}, got {got!r}" if self.quoted else f"{self.problem}, got {got}"

    def named(self, name: str) -> UserError:
        """The problem as one line naming the field: ``max_rounds must be ...``."""
        return UserError(f"{name} {self}")


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ' Did you mean 'x'?' for the closest choice, or '' when none is close."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.5)
    return f" Did you mean {close[0]!r}?" if close else ""


_SCRIPT_INSTALL = {  # torch's CPU build first: PyPI's default wheel pulls in CUDA
    "rl": 'pip install torch --index-url https://download.pytorch.org/whl/cpu && '
          'pip install -e ".[rl]"',
    "jax": 'pip install -e ".[jax]"',
}


def script_needs_extra(exc: ImportError, extra: str) -> SystemExit:
    """The one line an example script exits with when ``extra`` (``rl``, ``jax``) is
    missing (raise it ``from None``): the script, the extra, the module that failed and
    how to install it."""
    import sys
    from pathlib import Path

    missing = (exc.name or "a module").split(".")[0]  # stable_baselines3, not .common
    return SystemExit(f"{Path(sys.argv[0]).name} needs the {extra} extra ({missing} is "
                      f"not installed): {_SCRIPT_INSTALL[extra]}")


def unknown_name(kind: str, name: str, choices: Iterable[str]) -> UserError:
    """Build the one error every loader raises for an unknown name.

    Example: ``Unknown layout 'apartmnt'. Did you mean 'apartment'? Known: apartment, ...``
    """
    choices = sorted(choices)
    return UserError(
        f"Unknown {kind} {name!r}.{did_you_mean(name, choices)} Known: {', '.join(choices)}"
    )


def validation_line(exc: Any, known: Iterable[str] = ()) -> str:
    """A pydantic ``ValidationError`` as one line: ``field 'rooms.a': Input should be ...``.

    Args:
        exc: The ``pydantic.ValidationError``.
        known: Top-level field names, for a "Did you mean" hint on an unknown field.
    """
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            hint = did_you_mean(str(err["loc"][-1]), known) if len(err["loc"]) == 1 else ""
            msg = f"unknown field.{hint}" if hint else "unknown field"
        parts.append(f"field '{loc}': {msg}" if loc else msg)
    return "; ".join(dict.fromkeys(parts))
