"""A person as a team member, answering the same two decisions from a terminal.

:class:`HumanAgent` shows the situation compactly (goal, what it sees and knows, the
latest messages, the lettered actions) through ``output_fn`` and reads answers
through ``input_fn``. Both are plain callables, so a GUI can supply them: the pygame
window does (:class:`~orgteams.agents.human.window_input.WindowInput`, used by
``orgteams run --render human --backend human,...``). ``input_fn`` may also be
``async`` (it then runs on the event loop, as the window's must); a sync
``input_fn`` runs in a worker thread so LLM teammates keep thinking while the
person types.

Answers:

* act: a letter (``B``) or an action id (``explore:kitchen``).
* communicate: ``Bob, Charlie: text`` or ``everyone: text`` (a line without a
  receiver prefix goes to everyone); an empty line stays silent; ``abstain`` when the
  organization allows it; ``role <name>`` when roles are self-chosen (then the message).
* vote: a teammate's name. Claim: a role (empty claims none). Intention: one sentence.

Invalid input is answered with what was wrong and asked again.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from orgteams.agents.llm.llm_agent import safe_action
from orgteams.agents.llm.prompts import Options
from orgteams.agents.llm.quoting import printable
from orgteams.agents.llm.schemas import MESSAGE_MAX_CHARS, ROLE_MAX_CHARS
from orgteams.agents.member import (
    ActContext,
    ActDecision,
    CommunicateContext,
    CommunicateDecision,
    DecisionRecord,
    DialogueLog,
    DialogueMember,
    TeamMessage,
)
from orgteams.agents.messages import EVERYONE

if TYPE_CHECKING:
    from orgteams.agents.view import MemberView
    from orgteams.envs.highlevel.space import ActionId

__all__ = ["ACT_PROMPT", "HumanAgent"]

ACT_PROMPT = "Your action (letter): "  # the act question (a window answers Escape with wait)

InputFn = Callable[[str], "str | Awaitable[str]"]


class _Closed(Exception):
    """The input stream ended or the attempt limit was reached."""


class HumanAgent(DialogueMember):
    """A person playing one agent.

    Args:
        agent_id: ``agent_<i>``.
        input_fn: Reads one answer given a prompt (default: :func:`input`).
        output_fn: Shows one block of text (default: :func:`print`, with control
            characters other than line breaks escaped: teammates' text is in it).
        name: Display name (default: the runner's).
        dialogue_window: Latest messages shown.
        max_attempts: Stop re-asking after this many invalid answers and take the safe
            decision (recorded); None asks until valid.
    """

    model = "human"

    def __init__(
        self,
        agent_id: str,
        input_fn: InputFn = input,
        output_fn: Callable[[str], object] | None = None,
        *,
        name: str | None = None,
        dialogue_window: int = 12,
        max_attempts: int | None = None,
    ) -> None:
        self.agent_id = agent_id
        self.input_fn = input_fn
        self.output_fn = output_fn if output_fn is not None else _print_to_terminal
        self.name = name
        self.max_attempts = max_attempts
        self.log = DialogueLog(dialogue_window, 20)
        self._context: ActContext | None = None

    # ---- TeamMember (reset, observe and receive come from DialogueMember) ----
    async def communicate(self, ctx: CommunicateContext, env: MemberView) -> CommunicateDecision:
        """Ask the person what to say (or vote, claim, abstain)."""
        started = time.perf_counter()
        if self.name:  # a copy: the runner's context is shared
            ctx = replace(ctx, name=self.name, team={**ctx.team, self.agent_id: self.name})
        self._context = ctx.act_context()
        record = DecisionRecord("communicate", self.agent_id, ctx.round, model="human")
        shown = self._situation(env, self._context)
        for out in ctx.visible_this_round:
            who = ctx.team.get(out.sender, out.sender)
            text = out.text or "(nothing)"
            said = "abstained" if out.abstained else (
                f"chose: {text}" if out.kind == "action" else f"said: {text}")
            shown.append(f"This round, {who} {said}")
        self.output_fn("\n".join(shown))
        record.prompt = [{"role": "user", "content": "\n".join(shown)}]
        decision = CommunicateDecision([], None, False, None, "", record)
        try:
            await self._communicate(ctx, decision)
        except _Closed as exc:
            record.fallback = str(exc)
            decision.messages, decision.vote, decision.abstain = [], None, False
        self.log.said(decision.messages)
        record.parsed = {"messages": [m.text for m in decision.messages], "role": decision.role,
                         "abstain": decision.abstain, "vote": decision.vote}
        record.wall = time.perf_counter() - started
        return decision

    async def act(
        self, env: MemberView, round: int, ctx: ActContext | None = None
    ) -> ActDecision:
        """Ask the person for an action letter."""
        started = time.perf_counter()
        last = self._context
        if ctx is None:
            name = self.name or (last.name if last else self.agent_id)
            ctx = ActContext(round, self.agent_id, name,
                             dict(last.team) if last else {self.agent_id: name},
                             last.instruction if last else "", last.role if last else None)
        record = DecisionRecord("act", self.agent_id, round, model="human")
        actions = env.available_actions(self.agent_id)
        options = Options.of(actions)
        shown = self._situation(env, ctx)
        shown += ["Actions:"] + [f"  {letter}. {label}" for letter, label in options.lines()]
        self.output_fn("\n".join(shown))
        record.prompt = [{"role": "user", "content": "\n".join(shown)}]

        def parse(answer: str) -> ActionId:
            found = options.find(answer.strip().rstrip("."), labels=False)
            if found is None:
                raise ValueError(
                    f"Not a valid choice: {answer.strip()!r}. Type one of "
                    f"{options.letters[0]}-{options.letters[-1]}." if options
                    else "No actions offered.")
            return found[1]

        try:
            action_id = await self._ask(record, ACT_PROMPT, parse)
        except _Closed as exc:
            record.fallback = str(exc)
            action_id = safe_action(actions)[0]
        record.parsed = {"action": action_id}
        label = next((a.label for a in actions if a.id == action_id), action_id)
        self.log.acted(round, label)
        record.wall = time.perf_counter() - started
        return ActDecision(action_id, "", record)

    # ------------------------------------------------------------ helpers
    def _situation(self, env: MemberView, ctx: ActContext) -> list[str]:
        role = f" ({ctx.role})" if ctx.role else ""
        lines = [f"=== Round {ctx.round}: you are {ctx.name}{role} ==="]
        if ctx.instruction:
            lines.append(f"Organization: {ctx.instruction}")
        lines += [
            f"Goal: {env.describe_goal()}",
            f"You see: {env.describe(self.agent_id)}",
            f"You know: {env.memory(self.agent_id).render_text()}",
        ]
        dialogue = self.log.dialogue_lines(ctx.team, self.agent_id)
        if dialogue:
            lines += ["Messages:"] + [f"  {line}" for line in dialogue[-5:]]
        return lines

    async def _communicate(self, ctx: CommunicateContext, decision: CommunicateDecision) -> None:
        record, team = decision.record, ctx.team
        lookup = {k.casefold(): a for a, n in team.items() for k in (a, n)}
        if ctx.stage_kind == "vote":
            candidates = ctx.candidates or []
            names = ", ".join(team.get(c, c) for c in candidates)

            def vote(answer: str) -> str:
                agent = lookup.get(answer.strip().casefold())
                if agent not in candidates:
                    raise ValueError(f"Not a candidate: {answer.strip()!r}. Type one of {names}.")
                return agent

            decision.vote = await self._ask(record, f"Vote for one of {names}: ", vote)
            return
        if ctx.stage_kind == "claim":
            decision.role = await self._ask(
                record, "Claim a role (empty: none): ", lambda a: _role(a) or None
            )
            return
        allowed = ctx.can_message
        if ctx.stage_kind == "intention":
            prompt, public = "Your intention (one sentence, empty: none): ", True
        else:
            who = ", ".join(team.get(a, a) for a in allowed) or "nobody"
            extra = ', or "abstain"' if ctx.allow_abstain else ""
            extra += ', or "role <name>" first' if ctx.self_chosen_roles else ""
            prompt = f'Message as "names: text" (you may message {who}; empty: silence{extra}): '
            public = False

        def say(receivers: tuple[str, ...] | str, text: str) -> TeamMessage:
            return TeamMessage(self.agent_id, receivers, _bounded(text), round=ctx.round)

        def message(answer: str) -> TeamMessage | str | None:
            text = answer.strip()
            if not text:
                return None
            if ctx.allow_abstain and text.casefold() == "abstain":
                return "abstain"
            if ctx.self_chosen_roles and text.casefold().startswith("role "):
                return ("role", _role(text))
            if public:
                return say(EVERYONE, text)
            head, sep, body = text.partition(":")
            parts = [p.strip() for p in head.split(",") if p.strip()]
            if not sep or not parts:
                return say(EVERYONE, text)
            if [p.casefold() for p in parts] == [EVERYONE]:
                return say(EVERYONE, body.strip())
            ids = [lookup.get(p.casefold()) for p in parts]
            bad = [p for p, a in zip(parts, ids) if a not in allowed]
            if bad:
                names = ", ".join(team.get(a, a) for a in allowed) or "nobody"
                raise ValueError(f"You cannot message {', '.join(bad)}. Choose from: {names}, "
                                 f"or everyone.")
            return say(tuple(dict.fromkeys(ids)), body.strip())

        answer = await self._ask(record, prompt, message)
        while isinstance(answer, tuple):
            decision.role = answer[1] or None
            self.output_fn(f"Role set to {decision.role}.")
            answer = await self._ask(record, prompt, message)
        if answer == "abstain":
            decision.abstain = True
        elif isinstance(answer, TeamMessage) and answer.text:
            decision.messages = [answer]

    async def _ask(self, record: DecisionRecord, prompt: str, parse: Callable[[str], object]):
        attempts = 0
        while True:
            t0 = time.perf_counter()
            try:
                if inspect.iscoroutinefunction(self.input_fn):
                    answer = await self.input_fn(prompt)
                else:
                    answer = await asyncio.to_thread(self.input_fn, prompt)
                    if inspect.isawaitable(answer):
                        answer = await answer
            except EOFError:
                raise _Closed("input closed") from None
            record.latency += time.perf_counter() - t0
            record.replies.append(answer)
            try:
                return parse(answer)
            except ValueError as exc:
                attempts += 1
                record.errors.append(str(exc))
                self.output_fn(str(exc))
                if self.max_attempts is not None and attempts >= self.max_attempts:
                    raise _Closed(f"no valid answer after {attempts} attempt(s)") from None
                record.retries += 1


def _print_to_terminal(text: str) -> None:
    """The default ``output_fn``: teammates' (models') messages are in ``text``, so its
    control characters other than line breaks are escaped (no terminal escape sequences)."""
    print(printable(text, keep="\n"))


def _role(answer: str) -> str:
    role = answer.strip()
    if role.casefold().startswith("role "):
        role = role[5:].strip()
    if len(role) > ROLE_MAX_CHARS:
        raise ValueError(f"A role has at most {ROLE_MAX_CHARS} characters; got {len(role)}.")
    return role


def _bounded(text: str) -> str:
    if len(text) > MESSAGE_MAX_CHARS:
        raise ValueError(f"A message has at most {MESSAGE_MAX_CHARS} characters; "
                         f"got {len(text)}.")
    return text

