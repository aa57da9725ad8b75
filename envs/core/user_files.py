"""Reading a person's file: text and YAML within limits, every failure one line.

Organization files, layouts, tasks and sweep specs are people's files, and may be
hostile or simply wrong: a directory, a binary file, a 2 GB file, YAML nested 50,000
deep (PyYAML's composer recurses once per level: a ``RecursionError`` and 3,000 lines
of traceback) or a "billion laughs" of aliases (loaded as shared references, but
validation walks every copy). :func:`read_text` and :func:`load_yaml` refuse each
in one :class:`~orgteams.errors.UserError` naming the file (and line), before
parsing: the caps are :data:`~orgteams.envs.core.limits.MAX_FILE_BYTES`,
:data:`~orgteams.envs.core.limits.MAX_YAML_DEPTH` and
:data:`~orgteams.envs.core.limits.MAX_YAML_NODES`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from orgteams.envs.core.limits import MAX_FILE_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES
from orgteams.errors import UserError

__all__ = ["MAX_NAME_CHARS", "check_yaml", "load_yaml", "make_parents", "plain_name",
           "read_text", "utf8_problem"]

MAX_NAME_CHARS = 100
"""Longest ``name`` of an organization, layout or task file."""


def plain_name(value: str) -> str:
    """The ``name`` field of a person's file, which is printed and becomes part of file
    and folder names (a run's log folder, a demonstration's file): 1 to
    :data:`MAX_NAME_CHARS` printable characters, no ``/`` or ``\\``, not ``.`` or ``..``.

    Raises:
        ValueError: Another name (a pydantic validator's error: the field is named).
    """
    if (not 1 <= len(value) <= MAX_NAME_CHARS or value.strip(".") == ""
            or any(c in "/\\" or not c.isprintable() for c in value)):
        raise ValueError(f"must be 1 to {MAX_NAME_CHARS} printable characters without "
                         f"'/' or '\\' (it names files and folders), got {value!r}")
    return value

# libyaml's event parser is 40x faster than PyYAML's (both iterate, neither recurses);
# the check only needs events, and stops at the first one past a cap.
_EVENT_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STARTS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_ENDS = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def utf8_problem(raw: bytes, exc: UnicodeDecodeError, first_line: int = 1) -> str:
    """``line N: not UTF-8 text (...)`` for a decode error of ``raw`` (whose first line
    is line ``first_line`` of its file)."""
    line = first_line + raw.count(b"\n", 0, exc.start)
    return f"line {line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}; is it a binary file?)"


def read_text(path: str | Path, what: str, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the file at ``path``.

    Args:
        path: The file.
        what: What it should be, with its article, for the message (``"a layout file"``).
        max_bytes: Largest file accepted.

    Raises:
        UserError: One line naming the file: a directory, a file past ``max_bytes``,
            bytes that are not UTF-8 (with the line), or any other read error.
    """
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{path}: is a directory, expected {what}")
    try:
        with path.open("rb") as fh:  # at most max_bytes + 1: a device or FIFO has no size
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        raise UserError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise UserError(f"{path}: file is larger than {max_bytes:,} bytes, the limit for "
                        f"{what}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: {utf8_problem(raw, exc)}, expected {what}") from None


def make_parents(path: Path, what: str) -> None:
    """Create the folders of ``path``, a file we are about to write.

    Raises:
        UserError: ``<path>: cannot write <what>: <parent> is a file, not a folder`` (or
            the system's reason: permissions, a read-only disk).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        why = f"{blocking} is a file, not a folder" if blocking else exc.strerror or exc
        raise UserError(f"{path}: cannot write {what}: {why}") from None


def load_yaml(text: str, source: str, *, max_depth: int = MAX_YAML_DEPTH,
              max_nodes: int = MAX_YAML_NODES) -> Any:
    """``yaml.safe_load(text)``, once the text passed the nesting and size caps.

    Args:
        text: The YAML text.
        source: The file (or ``<text>``), first in every message.
        max_depth: Deepest nesting of mappings and sequences.
        max_nodes: Most nodes once every alias is expanded (what a validator walks).

    Raises:
        UserError: ``<source>: line N: ...`` past a cap, or ``<source>: not valid
            YAML: ...`` on one line.
    """
    try:
        check_yaml(text, source, max_depth=max_depth, max_nodes=max_nodes)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserError(f"{source}: not valid YAML: {_yaml_problem(exc)}") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's error on one line: where, what, and what it was parsing (its own text
    names the file ``"<unicode string>"`` twice and quotes the line with a caret)."""
    if not isinstance(exc, yaml.MarkedYAMLError) or not exc.problem:
        return " ".join(str(exc).split())
    mark, context = exc.problem_mark, exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    during = ""
    if exc.context:
        at = f" at line {context.line + 1}, column {context.column + 1}" if context else ""
        during = f" ({exc.context}{at})"
    return " ".join(f"{where}{exc.problem}{during}".split())


def check_yaml(text: str, source: str, *, max_depth: int = MAX_YAML_DEPTH,
               max_nodes: int = MAX_YAML_NODES) -> None:
    """Check ``text`` against the caps of :func:`load_yaml` without loading it.

    Raises:
        UserError: Past a cap (naming ``source`` and the line).
        yaml.YAMLError: The text is not YAML.
    """
    try:
        _check_shape(text, source, max_depth, max_nodes, _EVENT_LOADER)
    except yaml.YAMLError:  # libyaml stops at its own depth, 1,000, scanning ahead:
        # PyYAML's parser says where, as safe_load would (past our cap: ours)
        _check_shape(text, source, max_depth, max_nodes, yaml.SafeLoader)
        raise


def _check_shape(text: str, source: str, max_depth: int, max_nodes: int, loader: Any
                 ) -> None:
    """Walk the parser's events (no recursion) counting depth and expanded nodes."""
    open_nodes: list[list[Any]] = []  # [expanded nodes so far, anchor] per open collection
    sizes: dict[str, int] = {}  # anchor -> expanded nodes of what it names
    total = 0

    def count(n: int, event: yaml.Event) -> None:
        nonlocal total
        total += n
        if total > max_nodes:
            raise UserError(f"{source}: line {event.start_mark.line + 1}: more than "
                            f"{max_nodes:,} YAML nodes once aliases are expanded; the "
                            f"limit is {max_nodes:,}")

    for event in yaml.parse(text, Loader=loader):
        size = 0  # what this event adds to the open collection
        if isinstance(event, _STARTS):
            if len(open_nodes) >= max_depth:
                raise UserError(f"{source}: line {event.start_mark.line + 1}: YAML nested "
                                f"more than {max_depth} levels deep; the limit is {max_depth}")
            count(1, event)
            open_nodes.append([1, event.anchor])
        elif isinstance(event, _ENDS):
            size, anchor = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = size
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
            count(1, event)
        elif isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor, 1)
            count(size, event)
        if size and open_nodes:
            open_nodes[-1][0] += size
