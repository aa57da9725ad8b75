"""Small helpers shared by every layer: asset lookup and "did you mean" errors."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from orgteams.envs.errors import UserError


def asset_dir(*parts: str) -> Path:
    """Return the path of a folder (or file) inside the shipped ``assets/`` data."""
    return Path(str(resources.files("orgteams.assets").joinpath(*parts)))


def asset_names(folder: str, suffix: str = ".yaml") -> list[str]:
    """Names (file stems) of the asset files in ``assets/<folder>``, sorted."""
    return sorted(p.stem for p in asset_dir(folder).glob(f"*{suffix}"))


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ' Did you mean 'x'?' for the closest choice, or '' when none is close."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.5)
    return f" Did you mean {close[0]!r}?" if close else ""


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
