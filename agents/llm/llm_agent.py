"""The LLM team member: a chat model decides what to say, then which action to take.

Each decision renders a prompt from the templates in ``assets/prompts`` (see
:mod:`orgteams.agents.llm.prompts`), asks the agent's own backend for one JSON object
with a schema built for this call (:mod:`orgteams.agents.llm.schemas`), and validates
the reply. An invalid reply gets one actionable correction message and at most
``max_retries`` more attempts; after that, or when the backend fails
(:class:`~orgteams.agents.backends.BackendError`), the agent takes the declared safe
decision (act: ``continue`` when busy, else ``wait``; communicate: silence) and the
:class:`~orgteams.agents.records.DecisionRecord` says why, with every raw reply.
The ask, validate, correct, retry loop is the one of
:mod:`orgteams.agents.llm.structured`, shared with the Critic and the Coordinator.
It never picks a random action.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from orgteams.agents.backends.base import ChatBackend, ChatMessage
from orgteams.agents.llm.prompts import (
    Options,
    PromptTemplates,
    PromptVariant,
    default_templates,
    prompt_variant,
    situation,
)
from orgteams.agents.llm.quoting import one_line, quote_text
from orgteams.agents.llm.replies import (
    ParsedCommunicate,
    parse_act,
    parse_communicate,
    parse_defer,
)
from orgteams.agents.llm.schemas import MAX_MESSAGES, ReplySpec, act_spec, communicate_spec
from orgteams.agents.llm.structured import astructured_call
from orgteams.agents.member import (
    ActContext,
    ActDecision,
    CommunicateContext,
    CommunicateDecision,
    DecisionRecord,
    DialogueLog,
    DialogueMember,
    TeamMessage,
    safe_action,
)
from orgteams.agents.messages import EVERYONE

if TYPE_CHECKING:
    from orgteams.agents.view import MemberView
    from orgteams.envs.highlevel.space import ActionId

__all__ = ["LLMAgent", "safe_action"]

T = TypeVar("T")
_ASSIGNABLE = ("explore", "check", "grab", "put")  # subgoals a leader hands out


class LLMAgent(DialogueMember):
    """A team member driven by a chat model.

    Args:
        agent_id: ``agent_<i>``.
        backend: This agent's model (teams may mix models).
        name: Display name; default: the name the runner gives in the contexts.
        temperature, max_tokens, seed: Passed to every model call (the
            self-organizing paper used temperature 0.7; 0.0 is greedy).
        dialogue_window: Latest messages shown in prompts; default: the variant's
            (``default``: 12 as in the paper).
        action_window: Latest own actions shown in prompts; default: the variant's
            (``default``: 20 as in the paper).
        max_retries: Extra attempts after an invalid reply (each after a correction).
        prompts: Prompt variant, ``"default"`` or ``"compact"`` (small models; see
            :class:`~orgteams.agents.llm.prompts.PromptVariant`).
        shuffle_options: List the options in a per-agent, per-round order seeded by
            ``seed`` (recorded as ``options`` in each decision record) instead of the
            env's order, whose first option a small model picks far too often.
        templates: Prompt templates; default: the shipped ones of the variant.
    """

    def __init__(
        self,
        agent_id: str,
        backend: ChatBackend,
        *,
        name: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 320,
        dialogue_window: int | None = None,
        action_window: int | None = None,
        max_retries: int = 1,
        seed: int | None = None,
        prompts: str | PromptVariant = "default",
        shuffle_options: bool = True,
        templates: PromptTemplates | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if not 0.0 <= temperature <= 2.0:
            raise ValueError(f"temperature must be in [0, 2], got {temperature}")
        self.variant = prompt_variant(prompts)
        self.agent_id = agent_id
        self.backend = backend
        self.name = name
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.seed = seed
        self.shuffle_options = shuffle_options
        self.templates = templates or default_templates(self.variant.folder)
        self.log = DialogueLog(
            self.variant.dialogue_window if dialogue_window is None else dialogue_window,
            self.variant.action_window if action_window is None else action_window,
        )
        self._context: ActContext | None = None
        self._order: tuple[str, str] | None = None  # (who, action id) of its latest order
        self.leader = False

    def set_leader(self, leader: bool) -> None:
        """Called by the runner when leadership changes: a leader's (of any tier)
        message and plan replies also assign each of its reports that must decide one
        of its actions."""
        self.leader = leader

    @property
    def model(self) -> str:
        """The model name of this agent's backend (recorded in summaries)."""
        return self.backend.model

    @property
    def settings(self) -> dict[str, Any]:
        """What shapes this agent's decisions besides the model (recorded in summaries)."""
        return {"temperature": self.temperature, "prompts": self.variant.name,
                "option_order": "shuffled" if self.shuffle_options else "env",
                "max_tokens": self.max_tokens}

    def __repr__(self) -> str:
        return f"LLMAgent({self.agent_id!r}, model={self.backend.model!r})"

    def _options(self, env: MemberView, round: int, record: DecisionRecord) -> Options:
        """The lettered options of this round, recorded in the order shown."""
        key = f"{self.seed}|{self.agent_id}|{round}" if self.shuffle_options else None
        options = Options.of(env.available_actions(self.agent_id), key,
                             terse=self.variant.terse_labels)
        record.options = options.ids()
        return options

    def _assignable(self, ctx: CommunicateContext, env: MemberView
                    ) -> dict[str, dict[str, ActionId]]:
        """A leader's assignable work: teammate -> {option label: action id}.

        Its own reports (``ctx.rules.reports``: a top leader's vice leaders, a vice
        leader's members, a dual leader's half) that it may message and that must
        decide now, each with the subgoals (explore, check, grab, put) of that
        teammate's own available actions, in a seeded order per teammate like the
        agent's own options. Nobody else is offered: orders never skip or cross tiers.
        """
        if not self.leader or ctx.stage_kind not in ("message", "plan"):
            return {}
        out = {}
        for agent in ctx.rules.reports:
            if agent not in ctx.can_message or not env.needs_decision(agent):
                continue
            actions = [a for a in env.available_actions(agent) if a.id.kind in _ASSIGNABLE]
            order = Options.of(actions, f"{self.seed}|{self.agent_id}|{ctx.round}|{agent}",
                               terse=self.variant.terse_labels)
            if order:
                out[agent] = {order.label(a): a.id for a in order.actions}
        return out

    # ---- TeamMember (observe comes from DialogueMember) ----
    def reset(self) -> None:
        """Forget the last episode's dialogue, actions and order."""
        super().reset()
        self._order = None

    def receive(self, messages: list[TeamMessage]) -> None:
        """Remember delivered messages, and the latest order (``assign``) given to it:
        an action that carries it out depends on its sender (``depends_on``)."""
        super().receive(messages)
        for m in messages:
            c = m.content
            if m.kind == "assign" and m.sender != self.agent_id and isinstance(c, Mapping) \
                    and c.get("agent") == self.agent_id and c.get("action"):
                self._order = (m.sender, str(c["action"]))

    async def communicate(self, ctx: CommunicateContext, env: MemberView) -> CommunicateDecision:
        """Decide what to say in one stage (see :class:`CommunicateContext`)."""
        started = time.perf_counter()
        ctx = self._named(ctx)
        self._context = ctx.act_context()
        record = DecisionRecord("communicate", self.agent_id, ctx.round, model=self.backend.model)
        budget = ctx.rules.max_messages  # the organization's messages per round, or None
        most = MAX_MESSAGES if budget is None else min(MAX_MESSAGES, budget)
        receivers = tuple(ctx.team.get(a, a) for a in ctx.can_message) if most else ()
        if not most and ctx.stage_kind in ("message", "plan"):
            record.notes.append("the organization's budget allows no messages")
        candidates = tuple(ctx.team.get(a, a) for a in ctx.candidates or ())
        if ctx.stage_kind in ("message", "plan") and not (
            receivers or ctx.allow_abstain or ctx.self_chosen_roles
        ):
            record.notes.append("no teammate may be messaged: silent without a model call")
            record.wall = time.perf_counter() - started
            return CommunicateDecision([], None, False, None, "", record)
        assignable = self._assignable(ctx, env)
        spec = communicate_spec(
            ctx.stage_kind,
            receivers,
            allow_abstain=ctx.allow_abstain,
            self_chosen_roles=ctx.self_chosen_roles,
            candidates=candidates,
            assignees=tuple((ctx.team.get(a, a), tuple(opts)) for a, opts in assignable.items()),
            max_messages=max(most, 1),
        )
        options = self._options(env, ctx.round, record)
        variables = situation(env, self._context, self.log, options, self.variant)
        variables.update(
            stage_kind=ctx.stage_kind,
            visible=_visible_lines(ctx),
            receivers=list(receivers),
            candidates=list(candidates),
            allow_abstain=ctx.allow_abstain,
            self_chosen_roles=ctx.self_chosen_roles,
            assignees=[ctx.team.get(a, a) for a in assignable],
            max_messages=most,
            fields=spec.fields,
        )
        prompt = self._prompt("communicate", variables)
        reply = await self._decide(
            record, prompt, spec,
            lambda parsed: parse_communicate(
                parsed, spec, ctx.team, ctx.can_message, ctx.candidates,
                sender=self.agent_id, round=ctx.round),
        )
        if reply is None:
            reply = ParsedCommunicate()
            if ctx.stage_kind == "vote":
                record.notes.append("no vote cast")
        else:
            record.notes += reply.notes
        messages = [] if reply.abstain else list(reply.messages)
        for agent, label in ({} if reply.abstain else reply.assignments).items():
            # structured assign messages: planner members follow them
            messages.append(TeamMessage(
                self.agent_id, (agent,), f"{ctx.team.get(agent, agent)}: {label}", "assign",
                round=ctx.round, content={"agent": agent, "action": assignable[agent][label]}))
        if reply.abstain and reply.messages:
            record.notes.append("abstained: message not sent")
        self.log.said(messages)
        record.wall = time.perf_counter() - started
        return CommunicateDecision(
            messages, reply.role, reply.abstain, reply.vote, reply.thoughts, record
        )

    async def act(
        self, env: MemberView, round: int, ctx: ActContext | None = None
    ) -> ActDecision:
        """Pick one available high-level action by id.

        Args:
            env: The high-level env.
            round: The decision round.
            ctx: Who the agent is; default: the context of its latest communicate call
                (or just its id and name when there was none).
        """
        started = time.perf_counter()
        ctx = self._act_context(ctx, round)
        record = DecisionRecord("act", self.agent_id, round, model=self.backend.model)
        actions = env.available_actions(self.agent_id)
        options = self._options(env, round, record)
        if ctx.abstained or not options:
            action_id, note = safe_action(actions)
            record.notes.append("abstained this round" if ctx.abstained else "no actions offered")
            record.notes += [note] if note else []
            return self._acted(ActDecision(action_id, "", record), options, started)
        heard = self._heard(ctx)
        spec = act_spec(tuple(options.letters), tuple(heard.values()))
        variables = situation(env, ctx, self.log, options, self.variant)
        variables.update(fields=spec.fields, letters=options.letters)
        prompt = self._prompt("act", variables)
        reply = await self._decide(record, prompt, spec, lambda p: parse_act(p, spec, options))
        if reply is None:
            action_id, note = safe_action(actions)
            record.notes += [note] if note else []
            decision = ActDecision(action_id, "", record)
        else:
            action_id, thoughts, notes = reply
            deferred = parse_defer(record.parsed, spec, heard, notes)
            self._depends(record, action_id, deferred, notes)
            record.notes += notes
            decision = ActDecision(action_id, thoughts, record)
        return self._acted(decision, options, started)

    def _heard(self, ctx: ActContext) -> dict[str, str]:
        """Teammates (id -> name) whose messages, chosen actions or shared history the
        act prompt shows: the only ones a ``defer_to`` may name."""
        seen = {m.sender for m in self.log.dialogue}
        seen.update(m.sender for m in ctx.visible_this_round)
        for r in ctx.history.rounds if ctx.history is not None else ():
            seen.update(r.actions)
        return {a: n for a, n in ctx.team.items() if a in seen and a != self.agent_id}

    def _depends(self, record: DecisionRecord, action_id: str, deferred: str | None,
                 notes: list[str]) -> None:
        """Write whom the action depended on, ``record.parsed["depends_on"]``, as
        planners do (``{agent: "order" | "claim"}``; docs/metrics.md): the sender of the
        order it carries out (its latest ``assign``: checked, not the model's word),
        else the heard teammate its reply deferred to. The reply's own ``depends_on``
        (model text) is dropped: only the member writes it."""
        parsed = dict(record.parsed) if isinstance(record.parsed, dict) else {}
        if parsed.pop("depends_on", None) is not None:
            notes.append("ignored field 'depends_on': the member writes it, not the model")
        if self._order is not None and self._order[1] == str(action_id):
            parsed["depends_on"] = {self._order[0]: "order"}
            self._order = None  # carried out: a later same choice is its own
        elif deferred is not None:
            parsed["depends_on"] = {deferred: "claim"}
        record.parsed = parsed

    # ------------------------------------------------------------ helpers
    def _named(self, ctx: CommunicateContext) -> CommunicateContext:
        if self.name and ctx.name != self.name:  # a copy: the runner's context is shared
            return replace(ctx, name=self.name, team={**ctx.team, self.agent_id: self.name})
        return ctx

    def _act_context(self, ctx: ActContext | None, round: int) -> ActContext:
        if ctx is None:
            last = self._context
            name = self.name or (last.name if last else self.agent_id)
            team = dict(last.team) if last else {self.agent_id: name}
            ctx = ActContext(round, self.agent_id, name, team,
                             last.instruction if last else "", last.role if last else None)
        elif self.name:
            ctx = replace(ctx, name=self.name, team={**ctx.team, self.agent_id: self.name})
        self._context = ActContext(ctx.round, ctx.agent, ctx.name, ctx.team,
                                   ctx.instruction, ctx.role)
        return ctx

    def _acted(self, decision: ActDecision, options: Options, started: float) -> ActDecision:
        label = next((options.label(a) for a in options.actions
                      if a.id == decision.action_id), decision.action_id)
        self.log.acted(decision.record.round, label)
        decision.record.wall = time.perf_counter() - started
        return decision

    def _prompt(self, phase: str, variables: dict[str, Any]) -> list[ChatMessage]:
        return [
            {"role": "system", "content": self.templates.render("system", **variables)},
            {"role": "user", "content": self.templates.render(phase, **variables)},
        ]

    async def _decide(
        self,
        record: DecisionRecord,
        prompt: list[ChatMessage],
        spec: ReplySpec,
        parse: Callable[[Any], T],
    ) -> T | None:
        """One structured call (:func:`~orgteams.agents.llm.structured.astructured_call`)
        filling ``record``; None means: take the safe decision."""
        value, _ = await astructured_call(
            self.backend, prompt, schema=spec.schema, parse=parse, record=record,
            correction=lambda error: self.templates.render(
                "correction", error=error, fields=spec.fields, hint=spec.hint),
            max_retries=self.max_retries, temperature=self.temperature,
            max_tokens=self.max_tokens, seed=self.seed)
        return value


def _visible_lines(ctx: CommunicateContext) -> list[str]:
    """This round's visible outputs as ``Alice (leader) to everyone: "text"`` lines (quoted)."""
    lines = []
    for out in ctx.visible_this_round:
        if out.kind == "action":
            continue  # chosen actions are their own prompt section (prompts.situation)
        sender = out.sender
        who = "You" if sender == ctx.agent else ctx.team.get(sender, sender)
        if out.role:
            who += f" ({one_line(out.role)})"  # a self-chosen role is model text
        if out.abstained:
            lines.append(f"{who} abstained.")
            continue
        to = (
            EVERYONE
            if out.receivers == EVERYONE
            else ", ".join(ctx.team.get(r, r) for r in out.receivers)
        )
        lines.append(f"{who} to {to}: {quote_text(out.text)}" if out.text
                     else f"{who} stayed silent.")
    return lines
