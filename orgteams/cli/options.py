"""Option helpers of the orgteams CLI: options made from config fields, positive numbers,
--fps/--scale of replay, help with defaults."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Mapping
from typing import Any

from orgteams.config import Cli, check_fps, check_scale, typed


def _no_default(value: Any) -> bool:
    """Defaults the help does not show: none, off, empty. By identity, not ``==``:
    ``0 == False`` would hide a real default of 0 (``--seed``'s)."""
    return (value is None or value is False or value is argparse.SUPPRESS
            or (isinstance(value, list | tuple) and not value))


_FLAGS = ("store_true", "store_false", "boolean")
"""Actions of options that take no value: their help says what they do."""


def positive(kind):
    """An argparse type: ``kind`` (int or float) of a value above zero."""
    def parse(text: str):
        value = kind(text)
        if not math.isfinite(value) or value <= 0:  # nan, inf: a traceback in the renderer
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value
    return parse


def _number_text(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"must be a number, got {text!r}") from None


def checked_number(check: Any) -> Any:
    """An argparse type: a number that passes a config check (its problem as the error,
    showing the text as typed)."""
    return argparse_type(typed(_number_text, check))


def view_options(p: argparse.ArgumentParser, fps: float = 10, what: str = "ticks") -> None:
    """--fps and --scale of a window or a video."""
    p.add_argument("--fps", type=checked_number(check_fps), default=fps,
                   help=f"{what} per second in the window or video")
    p.add_argument("--scale", type=checked_number(check_scale), default=1.0,
                   help="size factor of the window (it can also be resized) or video")


def cli_of(model: Any, name: str) -> Cli | None:
    """The :class:`~orgteams.config.Cli` of a config field, or None (not on the command line)."""
    return next((m for m in model.model_fields[name].metadata if isinstance(m, Cli)), None)


def add_fields(p: argparse.ArgumentParser, model: Any, only: Iterable[str] | None = None, *,
               help: Mapping[str, str] | None = None, defaults: Mapping[str, Any] | None = None,
               given_only: bool = True) -> None:
    """One option per field of a config ``model`` that has a :class:`Cli` flag.

    The option's help is the field's description (its default appended, as
    :class:`_DefaultsShown` does), its type the field's ``Cli.parse`` (a bad value is
    argparse's one line, ``argument --seed: must be from 0 to ...``), its dest the
    field's name (see :func:`config_from_args`).

    Args:
        only: These fields, in this order (default: every field with a flag, in the
            model's order).
        help: A command's own help of a field (``sweep``: "stop each episode ...").
        defaults: A command's own default of a field (``record --backend planner``).
        given_only: Leave options not given out of the namespace, so the config's
            defaults apply; False: put the field's default there (commands that read
            ``args`` rather than build a config).
    """
    names = list(model.model_fields) if only is None else list(only)
    for name in names:
        cli = cli_of(model, name)
        if cli is None:
            if only is not None:
                raise ValueError(f"{model.__name__}.{name} has no command-line flag")
            continue
        field = model.model_fields[name]
        default = (defaults or {}).get(name, argparse.SUPPRESS if given_only else field.default)
        shown = field.default if default is argparse.SUPPRESS else default
        text = (help or {}).get(name, field.description or "")
        if "default" not in text and not _no_default(shown) and cli.action not in _FLAGS:
            text = f"{text} (default: {shown})"
        p.add_argument(cli.flag, dest=name, default=default, help=text, **_kind(cli))


def _kind(cli: Cli) -> dict[str, Any]:
    """argparse's action, type, metavar and choices for a flag."""
    if cli.action == "boolean":
        return {"action": argparse.BooleanOptionalAction}
    if cli.action in ("store_true", "store_false"):
        return {"action": cli.action}
    kw: dict[str, Any] = {"action": cli.action} if cli.action else {}
    if cli.parse is not None:
        kw["type"] = argparse_type(cli.parse)
    if cli.choices is not None:
        kw["choices"] = cli.choices
    else:  # argparse's own metavar for the flag, whatever the dest
        kw["metavar"] = cli.metavar or cli.flag.lstrip("-").replace("-", "_").upper()
    return kw


def argparse_type(parse):
    """``parse``'s ValueError as argparse's one line (``argument --seed: <text>``)."""
    def convert(text: str):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def config_from_args(model: Any, args: argparse.Namespace, **values: Any) -> Any:
    """The ``model`` config of the options given (others keep the config's defaults),
    and ``values`` (what the command sets itself: ``record``'s video path)."""
    given = {k: getattr(args, k) for k in model.model_fields if hasattr(args, k)}

    def name(field: str) -> str:
        cli = cli_of(model, field) if field in model.model_fields else None
        return f"argument {cli.flag}:" if cli else field

    return model.build({**given, **values}, name)


class _DefaultsShown(argparse.HelpFormatter):
    """Help that ends each option with its default, unless there is none to show."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or action.required or _no_default(action.default):
            return text
        return f"{text} (default: %(default)s)"


def subcommand(sub, name: str, help: str, **kw) -> argparse.ArgumentParser:
    """A subcommand whose --help shows every option's default."""
    return sub.add_parser(name, help=help, description=help, formatter_class=_DefaultsShown,
                          **kw)
