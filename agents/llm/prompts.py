"""Prompt templates as data: Jinja2 files in ``assets/prompts/``, rendered strictly.

Templates (``*.j2``) are rendered with ``StrictUndefined``, so a variable missing from
the context is an error that names the template, never a silently empty prompt.

* ``system.j2``: who the agent is and that it answers in JSON.
* ``communicate.j2`` / ``act.j2``: the paper's Communicator / Actor prompts
  (organization instruction, name and teammates, goal and progress, belief, what it
  sees, the lettered actions, the latest dialogue and own actions).
* ``correction.j2``: the one actionable message after an invalid reply.

A :class:`PromptVariant` picks a template set and how much memory goes into a prompt.
``default`` is the papers' prompt (12 messages, 20 own actions, full belief, the
papers' option labels); ``compact`` is for small local models, whose decision time on
a CPU is mostly prompt evaluation: templates in ``assets/prompts/compact/`` override
the shipped ones, with shorter dialogue, action and belief windows and terse option
labels (``explore kitchen``). :func:`variant_for_backend` is the per-backend default
(``local`` gets ``compact``).

:func:`situation` gathers the variables both phase templates share from the env.
:class:`Options` is the lettered menu of one prompt: :func:`action_options` letters the
options in a per-agent seeded shuffled order, so no option gains from always being
``A`` (small models favour the first one), and :meth:`Options.find` reads a reply's
choice back to its :class:`~orgteams.envs.highlevel.space.ActionId`. Option letters
exist only here: everything else (members, the round loop, the log, the env) passes
the action id.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orgteams.agents.llm.quoting import one_line, quote_block
from orgteams.agents.member import ActContext, DialogueLog
from orgteams.agents.shared_context import chosen_lines
from orgteams.errors import UserError

MAX_PROMPT_CHARS = 1_000_000
"""Largest value (characters or items) a prompt template may build."""

if TYPE_CHECKING:
    from orgteams.agents.view import MemberView
    from orgteams.envs.highlevel.highlevel_env import HighLevelAction
    from orgteams.envs.highlevel.space import ActionId

__all__ = [
    "PROMPT_VARIANTS",
    "Options",
    "PromptError",
    "PromptTemplates",
    "PromptVariant",
    "action_options",
    "default_templates",
    "letters",
    "prompt_variant",
    "situation",
    "variant_for_backend",
]


class PromptError(UserError):
    """A prompt template is missing, malformed, unsafe, or lacks a variable."""


def letters(n: int) -> list[str]:
    """Option letters: ``A..Z``, then ``AA, AB, ...`` (spreadsheet style)."""
    out = []
    for i in range(n):
        label, k = "", i + 1
        while k:
            k, r = divmod(k - 1, 26)
            label = chr(65 + r) + label
        out.append(label)
    return out


@dataclass(frozen=True)
class PromptVariant:
    """A prompt template set and how much an agent's memory goes into each prompt.

    Attributes:
        name: ``default`` or ``compact``.
        folder: Subfolder of ``assets/prompts`` whose templates override the shipped
            ones (None: the shipped ones only).
        dialogue_window: Latest messages shown.
        action_window: Latest own actions shown.
        belief_lines: Most lines of the belief shown (None: all).
        terse_labels: Options as ``explore kitchen`` instead of ``[goexplore] <kitchen>``.
    """

    name: str
    folder: str | None
    dialogue_window: int
    action_window: int
    belief_lines: int | None
    terse_labels: bool


PROMPT_VARIANTS: dict[str, PromptVariant] = {
    "default": PromptVariant("default", None, 12, 20, None, False),
    "compact": PromptVariant("compact", "compact", 4, 3, 8, True),
}
_BACKEND_VARIANTS = {"local": "compact"}


def prompt_variant(name: str | PromptVariant) -> PromptVariant:
    """The variant called ``name`` (a variant is returned as is).

    Raises:
        ValueError: Unknown name (with the known ones).
    """
    if isinstance(name, PromptVariant):
        return name
    if name not in PROMPT_VARIANTS:
        raise ValueError(
            f"unknown prompt variant {name!r}; known: {', '.join(PROMPT_VARIANTS)}"
        )
    return PROMPT_VARIANTS[name]


def variant_for_backend(kind: str) -> str:
    """The default prompt variant for a backend kind (``local`` -> ``compact``)."""
    return _BACKEND_VARIANTS.get(kind.split(":", 1)[0], "default")


class PromptTemplates:
    """The prompt templates of one folder (default: the shipped ``assets/prompts``).

    Args:
        directory: A folder of ``<name>.j2`` files; None for the shipped ones. A user
            folder may hold only some templates: the rest come from the shipped folder.
        variant: A shipped variant's subfolder (``compact``) searched before the
            shipped folder and after ``directory``.

    Raises:
        PromptError: A template does not compile (with file and line).
    """

    def __init__(self, directory: str | Path | None = None, *, variant: str | None = None
                 ) -> None:
        import jinja2  # here, not at import: importing orgteams.agents stays light

        from orgteams.assets import asset_dir
        from orgteams.templates import LimitedSandbox

        shipped = asset_dir("prompts")
        folders = [Path(directory)] if directory is not None else []
        if variant:
            folders.append(shipped / variant)
        folders.append(shipped)
        # A prompt folder is a person's templates: sandboxed like organization instructions
        # (no attribute walks to os), with a size limit fit for whole prompts.
        self._env = LimitedSandbox(
            max_size=MAX_PROMPT_CHARS,
            loader=jinja2.FileSystemLoader([str(f) for f in folders]),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
            autoescape=False,
        )
        self._env.filters["tojson"] = self._env.checked_filter(
            lambda v: json.dumps(v, ensure_ascii=False))
        self._cache: dict[str, Any] = {}

    @property
    def names(self) -> list[str]:
        """Template names available (without ``.j2``)."""
        return sorted({n.removesuffix(".j2") for n in self._env.list_templates(extensions=["j2"])})

    def _template(self, name: str) -> Any:
        import jinja2

        if name not in self._cache:
            try:
                self._cache[name] = self._env.get_template(f"{name}.j2")
            except jinja2.TemplateNotFound:
                raise PromptError(
                    f"no prompt template {name!r}; known: {', '.join(self.names)}"
                ) from None
            except jinja2.TemplateSyntaxError as exc:
                raise _syntax_error(exc, name) from None
            except UnicodeDecodeError:
                raise PromptError(f"prompt template {self._path(name)}: not UTF-8 text (is "
                                  "it a binary file?)") from None
        return self._cache[name]

    def _path(self, name: str) -> str:
        """The file template ``name`` comes from (first of the folders that has it)."""
        for folder in self._env.loader.searchpath:
            if (Path(folder) / f"{name}.j2").is_file():
                return str(Path(folder) / f"{name}.j2")
        return f"{name}.j2"

    def render(self, name: str, /, **variables: Any) -> str:
        """Render template ``name`` with ``variables`` (values are data, never templates).

        Raises:
            PromptError: Unknown template, syntax error, a variable is missing, a
                recursive include/extends/macro, a template outside the folders, or a
                file that is not UTF-8 text; the message names the template file.
        """
        import jinja2
        from jinja2.sandbox import SecurityError

        from orgteams.templates import step_budget

        template = self._template(name)
        try:
            with step_budget():
                return template.render(**variables).strip()
        except jinja2.UndefinedError as exc:
            raise PromptError(f"prompt template {name}.j2: {exc.message}") from None
        except SecurityError as exc:
            raise PromptError(f"prompt template {name}.j2: unsafe template: {exc}") from None
        # What a template it includes, extends or imports does wrong shows only now; the
        # message names the innermost template file on the stack.
        except jinja2.TemplateNotFound as exc:
            folders = ", ".join(map(str, self._env.loader.searchpath))
            raise PromptError(
                f"prompt template {_innermost(exc, template)}: uses template {exc.name!r}, "
                f"which is not in the prompt folders ({folders}); a prompt template may "
                "include, import or extend only templates of those folders") from None
        except jinja2.TemplateSyntaxError as exc:
            raise _syntax_error(exc, name) from None
        except RecursionError as exc:
            raise PromptError(
                f"prompt template {_innermost(exc, template)}: includes, extends or calls "
                "itself without end (a recursive include, extends or macro)") from None
        except UnicodeDecodeError as exc:
            raise PromptError(f"prompt template {_innermost(exc, template)}: a template it "
                              "uses is not UTF-8 text (is it a binary file?)") from None


def _syntax_error(exc: Any, name: str) -> PromptError:
    return PromptError(f"prompt template {exc.filename or name}: syntax error at line "
                       f"{exc.lineno}: {exc.message}")


def _innermost(exc: BaseException, template: Any) -> str:
    """The template file deepest in ``exc``'s traceback (Jinja2 compiles each template
    with its file name), else ``template``'s own."""
    found = template.filename or template.name
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.endswith(".j2"):
            found = filename
        tb = tb.tb_next
    return found


@lru_cache(maxsize=4)
def default_templates(variant: str | None = None) -> PromptTemplates:
    """The shipped templates of a variant's folder (compiled once per process)."""
    return PromptTemplates(variant=variant)


def _progress_text(env: MemberView) -> str:
    progress = env.progress()
    done, total = progress["units_done"], progress["units_total"]
    remaining = "; ".join(progress["remaining"]) or "nothing"
    return f"{done} of {total} goal items done. Still to do: {remaining}."


def action_options(
    actions: list[HighLevelAction], order_key: str | None = None
) -> list[tuple[str, HighLevelAction]]:
    """``[(letter, action), ...]``: in the env's order, or shuffled by ``order_key``.

    The shuffle is a pure function of ``order_key`` (e.g. ``"<seed>|agent_1|3"``) and
    of the action ids, so the same agent in the same round of a rerun sees the same
    order (replays and response caches stay exact), and its communicate and act
    prompts list the options alike.
    """
    actions = list(actions)
    if order_key is not None:
        actions.sort(key=lambda a: a.id)  # independent of the env's listing order
        random.Random(order_key).shuffle(actions)
    return list(zip(letters(len(actions)), actions))


def terse_label(action_id: str) -> str:
    """``explore:kitchen`` -> ``explore kitchen`` (compact prompts' option label)."""
    kind, _, target = action_id.partition(":")
    return f"{kind} {target}" if target else kind


@dataclass(frozen=True)
class Options:
    """The actions one prompt offers, lettered ``A``, ``B``, ... in the order shown.

    Attributes:
        actions: The offered actions in the order they are listed.
        terse: Labels as ``explore kitchen`` (compact prompts) instead of the papers'
            ``[goexplore] <kitchen>``.
    """

    actions: tuple[HighLevelAction, ...]
    terse: bool = False

    @classmethod
    def of(cls, actions: Sequence[HighLevelAction], order_key: str | None = None, *,
           terse: bool = False) -> Options:
        """The menu of ``actions``, in the env's order or shuffled by ``order_key``
        (see :func:`action_options`)."""
        return cls(tuple(a for _, a in action_options(list(actions), order_key)), terse)

    def __len__(self) -> int:
        return len(self.actions)

    @cached_property
    def letters(self) -> list[str]:
        """The option letters, in order (what the reply schema's ``action`` allows)."""
        return letters(len(self.actions))

    def ids(self) -> list[ActionId]:
        """The offered action ids in the order shown (recorded as ``options``)."""
        return [a.id for a in self.actions]

    def label(self, action: HighLevelAction) -> str:
        """How the prompt names ``action``."""
        return terse_label(action.id) if self.terse else action.label

    def lines(self) -> list[tuple[str, str]]:
        """``(letter, label)`` per option, as the templates list them."""
        return [(letter, self.label(a)) for letter, a in zip(self.letters, self.actions)]

    def find(self, answer: str, *, labels: bool = True) -> tuple[str, ActionId] | None:
        """``(letter, action id)`` of the option ``answer`` names (case-insensitive): its
        letter, its id, or (``labels``) its label; None when it names none.

        The caller strips the answer as its reader does (a trailing period, spaces).
        """
        key = answer.casefold()
        for letter, action in zip(self.letters, self.actions):
            if key in (letter.casefold(), action.id.casefold()) or (
                    labels and key == self.label(action).casefold()):
                return letter, action.id
        return None


def _belief(env: MemberView, agent: str, max_lines: int | None) -> str:
    lines = env.memory(agent).render_text().strip().splitlines()
    if max_lines is not None and len(lines) > max_lines:
        lines = [*lines[:max_lines], f"(and {len(lines) - max_lines} more lines)"]
    return "\n".join(lines) or "Nothing yet."


def situation(
    env: MemberView,
    ctx: ActContext,
    log: DialogueLog,
    options: Options,
    variant: PromptVariant = PROMPT_VARIANTS["default"],
) -> dict[str, Any]:
    """The template variables shared by the communicate and act prompts.

    Args:
        env: What the member reads of the episode (belief from ``env.memory``, its view
            from ``env.describe``).
        ctx: Who the agent is this round.
        log: Its dialogue and action memory.
        options: The lettered available actions, labelled as the variant labels them.
        variant: The belief window.
    """
    agent = ctx.agent
    return {
        "round": ctx.round,
        "name": ctx.name,
        "role": one_line(ctx.role) if ctx.role else ctx.role,  # may be a model's claim
        # marked line by line as the organization's (it may be a Coordinator model's text)
        "instruction": quote_block(ctx.instruction.strip()),
        "teammates": [n for a, n in ctx.team.items() if a != agent],
        "team_size": len(ctx.team),
        "goal": env.describe_goal(),
        "progress": _progress_text(env),
        "belief": _belief(env, agent, variant.belief_lines),
        "observation": env.describe(agent).strip(),
        "actions": options.lines(),
        "dialogue": log.dialogue_lines(ctx.team, agent),
        "dialogue_window": log.dialogue.maxlen,
        "action_history": log.action_lines(),
        "action_window": log.actions.maxlen,
        # what the protocol shows besides messages (orgteams.agents.shared_context)
        "chosen": chosen_lines(ctx.visible_this_round, ctx.team, agent),
        "history": ctx.history.lines(ctx.team, agent) if ctx.history else [],
    }
