"""Option helpers of the orgteams CLI: positive numbers, --fps/--scale, help with defaults."""

from __future__ import annotations

import argparse


def positive(kind):
    """An argparse type: ``kind`` (int or float) of a value above zero."""
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value
    return parse


def view_options(p: argparse.ArgumentParser, fps: float = 10, what: str = "ticks") -> None:
    """--fps and --scale of a window or a video."""
    p.add_argument("--fps", type=positive(float), default=fps,
                   help=f"{what} per second in the window or video")
    p.add_argument("--scale", type=positive(float), default=1.0,
                   help="size factor of the window (it can also be resized) or video")


class _DefaultsShown(argparse.HelpFormatter):
    """Help that ends each option with its default, unless there is none to show."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or action.required or action.default in (
                None, False, [], argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


def subcommand(sub, name: str, help: str, **kw) -> argparse.ArgumentParser:
    """A subcommand whose --help shows every option's default."""
    return sub.add_parser(name, help=help, description=help, formatter_class=_DefaultsShown,
                          **kw)
