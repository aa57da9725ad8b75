"""Safe template rendering: people's templates in a limited Jinja2 sandbox, models' text never.

Two kinds of text become prompt text, and they are treated differently:

* **Templates written by people** (an organization file's ``instruction``, a prompt
  folder's ``*.j2``) render in :class:`LimitedSandbox`, Jinja2's
  ``ImmutableSandboxedEnvironment`` (no ``__class__``/``__mro__`` walks, no mutation of
  the context) with limits: ``range`` gives at most :data:`MAX_RANGE` items; an
  instruction's loops, filter and method calls share a budget of :data:`MAX_STEPS` steps
  per render; every value a template builds (``*``, ``+``, ``~``, list literals, filter
  and call results) and the rendered text hold at most :data:`MAX_INSTRUCTION_CHARS`
  characters or items; filters that pad or repeat by a number (``center``, ``indent``,
  ``wordwrap``, ``format``, ``batch``, ``slice``) and ``lipsum``/``namespace`` are gone;
  an instruction may not use macros, ``call``, ``include``/``import``/``extends``, block
  ``set``, ``filter`` blocks or recursive loops.
* **Text written by a model** (a Coordinator's proposed instruction, messages, critiques)
  is never a template: :func:`substitute_fields` replaces ``{me}``-style names of a fixed
  set of variables and leaves every other character as it is.

A leaf module (it imports nothing of ours): organizations render instructions and the
LLM agent renders prompt folders here, neither importing the other.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from jinja2.visitor import NodeTransformer

__all__ = [
    "MAX_INSTRUCTION_CHARS",
    "MAX_RANGE",
    "MAX_STEPS",
    "LimitedSandbox",
    "TemplateLimitError",
    "compile_instruction",
    "compile_template",
    "render_instruction",
    "step_budget",
    "substitute_fields",
]

MAX_RANGE = 10_000
"""Most items one ``range(...)`` in a template may give."""
MAX_STEPS = 100_000
"""Loop iterations, filter and method calls (plus the items they inspect) per instruction render."""
MAX_INSTRUCTION_CHARS = 20_000
"""Longest instruction text (the template and its rendered text) and largest value it builds."""

_REMOVED_FILTERS = ("center", "indent", "wordwrap", "format", "batch", "slice")
_BLOCKED_METHODS = frozenset({"format", "format_map", "ljust", "rjust", "center", "zfill",
                              "expandtabs", "replace", "join"})
_FORBIDDEN_NODES: dict[type[nodes.Node], str] = {
    nodes.Macro: "macros", nodes.CallBlock: "call blocks", nodes.Import: "import",
    nodes.FromImport: "import", nodes.Include: "include", nodes.Extends: "extends",
    nodes.Block: "blocks", nodes.AssignBlock: "block set", nodes.FilterBlock: "filter blocks",
}
_steps: ContextVar[list[int] | None] = ContextVar("orgteams_template_steps", default=None)


class TemplateLimitError(SecurityError):
    """A template went past a limit (loop length, steps, size) or used a forbidden construct."""


def _charge(n: int = 1) -> None:
    left = _steps.get()
    if left is None:  # rendering outside step_budget()
        return
    left[0] -= n
    if left[0] < 0:
        raise TemplateLimitError(f"the template takes more than {MAX_STEPS} steps "
                                 "(loop iterations, filter and method calls)")


def _size(value: Any, cap: int) -> int:
    """Characters of strings plus items of containers in ``value``, counting up to ``cap + 1``."""
    total, stack = 0, [value]
    while stack and total <= cap:
        v = stack.pop()
        if isinstance(v, str | bytes):
            total += len(v)
        elif isinstance(v, Mapping):
            total += len(v)
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list | tuple | set | frozenset):
            total += len(v)
            stack.extend(v)
        else:
            total += 1
    if _steps.get() is not None:
        _charge(total // 100)
    return total


class LimitedSandbox(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox with limits on ``range``, value sizes and filters.

    Args:
        max_size: Largest string (characters) or container (items) a template may build.
        **kwargs: Passed to :class:`jinja2.sandbox.ImmutableSandboxedEnvironment`.
    """

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, *, max_size: int = MAX_INSTRUCTION_CHARS, **kwargs: Any) -> None:
        kwargs.setdefault("undefined", jinja2.StrictUndefined)
        super().__init__(finalize=self._finalize, **kwargs)
        self.max_size = max_size
        for name in ("lipsum", "namespace"):
            self.globals.pop(name, None)
        self.globals["range"] = _limited_range
        for name in _REMOVED_FILTERS:
            self.filters.pop(name, None)
        self.filters = {name: self.checked_filter(f) for name, f in self.filters.items()}
        self.filters["replace"] = self.checked_filter(_limited_replace(max_size))
        self.filters["_counted"] = _counted
        self.filters["_sized"] = self._sized
        self.filters["_concat"] = self._concat

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        # Every template (an instruction, a prompt file) counts its loop iterations and
        # checks the size of its literals and ``~`` joins.
        return _Limiter().visit(super()._parse(source, name, filename))

    def _check(self, value: Any) -> Any:
        if _size(value, self.max_size) > self.max_size:
            raise TemplateLimitError(f"the template builds a value of more than {self.max_size} "
                                     "characters or items")
        return value

    def _sized(self, value: Any) -> Any:
        """Filter the instruction AST puts around list, tuple and dict literals."""
        return self._check(value)

    def _concat(self, parts: list[Any]) -> str:
        """What ``a ~ b`` becomes in an instruction: joined once the parts' size is checked."""
        return self._check("".join(map(str, self._check(parts))))

    def _finalize(self, value: Any) -> Any:
        return self._check(value)

    def checked_filter(self, f: Callable[..., Any]) -> Callable[..., Any]:
        """``f`` as a filter that counts a step and checks its arguments' and result's size."""
        @functools.wraps(f)  # keeps jinja_pass_arg (pass_context & co)
        def checked(*args: Any, **kwargs: Any) -> Any:
            _charge()
            for a in (*args, *kwargs.values()):
                if isinstance(a, str | list | tuple | dict):
                    self._check(a)
            return self._check(f(*args, **kwargs))

        return checked

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        """Calls from templates: size-amplifying methods refused, the result checked."""
        _charge()
        if getattr(__obj, "__name__", "") in _BLOCKED_METHODS and not isinstance(__obj, type):
            raise TemplateLimitError(f"the method {__obj.__name__!r} is not allowed in templates "
                                     "(use the join or replace filter)")
        return __self._check(super().call(__context, __obj, *args, **kwargs))

    def call_binop(self, context: Any, operator_: str, left: Any, right: Any) -> Any:
        """``*``, ``**``, ``+``, ``%`` with bounded results (no ``'x' * 10**9``, no ``9**9**9``)."""
        _charge()
        if operator_ == "%" and isinstance(left, str):
            raise TemplateLimitError("the % string formatting operator is not allowed in "
                                     "templates; use {{ value }}")
        if operator_ == "**" and isinstance(left, int) and isinstance(right, int):
            if abs(left) > 1 and right * max(abs(left).bit_length(), 1) > 4096:
                raise TemplateLimitError(f"{left} ** {right} is too large for a template")
        if operator_ == "*" and isinstance(left, int) and isinstance(right, int):
            if left.bit_length() + right.bit_length() > 4096:
                raise TemplateLimitError("a product too large for a template")
        if operator_ == "*":
            seq, times = (left, right) if isinstance(right, int) else (right, left)
            if isinstance(seq, str | list | tuple) and isinstance(times, int):
                if _size(seq, self.max_size) * max(times, 0) > self.max_size:
                    raise TemplateLimitError(f"the template builds a value of more than "
                                             f"{self.max_size} characters or items")
        if operator_ == "+":
            self._check(left), self._check(right)
        return self._check(super().call_binop(context, operator_, left, right))


def _limited_range(*args: int) -> range:
    r = range(*args)
    if len(r) > MAX_RANGE:
        raise TemplateLimitError(f"range of {len(r)} items is longer than the limit of "
                                 f"{MAX_RANGE}")
    return r


def _counted(items: Iterable[Any]) -> Iterator[Any]:
    """Filter the instruction AST puts around every ``for`` loop: one step per iteration."""
    for item in items:
        _charge()
        yield item


def _limited_replace(max_size: int) -> Callable[..., str]:
    def replace(s: Any, old: str, new: str, count: int | None = None) -> str:
        s, old, new = str(s), str(old), str(new)
        hits = (len(s) + 1 if not old else s.count(old))
        hits = min(hits, count) if count is not None and count >= 0 else hits
        if len(s) + hits * (len(new) - len(old)) > max_size:
            raise TemplateLimitError(f"replace would build more than {max_size} characters")
        return s.replace(old, new, -1 if count is None else count)

    return replace


class _Limiter(NodeTransformer):
    """Counts loop iterations and checks the size of literals and ``~`` in an instruction."""

    def visit_For(self, node: nodes.For) -> nodes.Node:  # noqa: N802 - NodeTransformer API
        self.generic_visit(node)
        node.iter = nodes.Filter(node.iter, "_counted", [], [], None, None, lineno=node.lineno)
        return node

    def _sized(self, node: nodes.Expr) -> nodes.Node:
        self.generic_visit(node)
        if getattr(node, "ctx", "load") != "load":  # a tuple assigned to: for a, b in ...
            return node
        return nodes.Filter(node, "_sized", [], [], None, None, lineno=node.lineno)

    visit_List = visit_Tuple = visit_Dict = _sized  # noqa: N815

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:  # noqa: N802
        self.generic_visit(node)
        parts = nodes.List(node.nodes, lineno=node.lineno)
        return nodes.Filter(parts, "_concat", [], [], None, None, lineno=node.lineno)


@functools.lru_cache(maxsize=1)
def _instruction_env() -> LimitedSandbox:
    return LimitedSandbox(trim_blocks=True, lstrip_blocks=True, autoescape=False)


@functools.lru_cache(maxsize=256)
def compile_instruction(text: str) -> jinja2.Template:
    """Compile an organization instruction written by a person (sandboxed, limited).

    Raises:
        TemplateLimitError: Forbidden syntax (macros, include, ...) or a template longer
            than :data:`MAX_INSTRUCTION_CHARS`.
        jinja2.TemplateSyntaxError: The text does not parse.
    """
    if len(text) > MAX_INSTRUCTION_CHARS:
        raise TemplateLimitError(f"the instruction is longer than {MAX_INSTRUCTION_CHARS} "
                                 "characters")
    env = _instruction_env()
    tree = env.parse(text)
    for node in tree.find_all(tuple(_FORBIDDEN_NODES)):
        raise TemplateLimitError(f"{_FORBIDDEN_NODES[type(node)]} are not allowed in an "
                                 f"instruction (line {node.lineno})")
    for loop in tree.find_all(nodes.For):
        if loop.recursive:
            raise TemplateLimitError(f"recursive loops are not allowed in an instruction "
                                     f"(line {loop.lineno})")
    return env.from_string(tree)  # parse() already counted its loops (LimitedSandbox._parse)


def compile_template(text: str) -> Any:
    """Compile a person's instruction in the limited sandbox; bad syntax or limits -> ValueError.

    See :func:`orgteams.templates.compile_instruction` for what is allowed.
    """
    try:
        return compile_instruction(text)
    except jinja2.TemplateSyntaxError as exc:
        raise ValueError(f"template syntax error at line {exc.lineno}: {exc.message}") from None
    except TemplateLimitError as exc:
        raise ValueError(f"unsafe template: {exc}") from None


def render_instruction(template: jinja2.Template, variables: Mapping[str, Any]) -> str:
    """Render a compiled instruction within the step budget and the output size limit.

    Raises:
        jinja2.sandbox.SecurityError: Unsafe access (``__class__``...) or a limit passed
            (:class:`TemplateLimitError`).
        jinja2.UndefinedError: A variable the template uses is not defined.
    """
    with step_budget():
        out, size = [], 0
        for chunk in template.generate(**variables):
            size += len(chunk)
            if size > MAX_INSTRUCTION_CHARS:
                raise TemplateLimitError(f"the rendered instruction is longer than "
                                         f"{MAX_INSTRUCTION_CHARS} characters")
            out.append(chunk)
        return "".join(out)


@contextmanager
def step_budget(steps: int = MAX_STEPS) -> Iterator[None]:
    """Renders inside share a budget of ``steps`` loop iterations and calls."""
    token = _steps.set([steps])
    try:
        yield
    finally:
        _steps.reset(token)


_FIELD = re.compile(r"\{([a-z_]+)\}")


def substitute_fields(text: str, variables: Mapping[str, Any]) -> str:
    """Replace ``{name}`` for the names in ``variables``; every other character stays as is.

    For text written by a model: no template syntax, no attribute access, no loops.
    Lists become ``"a, b"``, ``None`` becomes ``"nobody"``.
    """
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            return match.group(0)
        v = variables[name]
        if v is None:
            return "nobody"
        if isinstance(v, list | tuple):
            return ", ".join(map(str, v))
        return str(v)

    return _FIELD.sub(value, text)

