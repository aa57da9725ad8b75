"""Option helpers of the orgteams CLI: shared options, checked numbers, help with defaults."""

from __future__ import annotations

import argparse


def common_options(p: argparse.ArgumentParser, agents: int = 3) -> None:
    """--task, --layout, --agents, --seed and --json, as most commands take them."""
    p.add_argument("--task", default="prepare_afternoon_tea",
                   help="task name (orgteams list tasks)")
    p.add_argument("--layout", default="apartment",
                   help="layout name or generated:<rooms>:<seed> (orgteams list layouts)")
    p.add_argument("--agents", type=int, default=agents, help="team size")
    p.add_argument("--seed", type=int, default=0, help="episode seed")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


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
