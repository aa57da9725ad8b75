"""An organization fixed for one team: leaders, roles, channels, graph, instructions."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import networkx as nx

from orgteams.agents.member_rules import MemberRules
from orgteams.agents.team import AGENT_ID, Team
from orgteams.errors import UserError, did_you_mean
from orgteams.organizations.spec.organization import (
    SELF_CHOSEN,
    Organization,
    _fragments,
    compile_template,
)
from orgteams.organizations.spec.rules import rules_text
from orgteams.organizations.spec.succession import vacate
from orgteams.organizations.spec.topology import share_count
from orgteams.templates import render_instruction, substitute_fields


@dataclass(frozen=True)
class ResolvedOrganization:
    """An organization fixed for one team: leaders, roles, channels, graph, instructions.

    Attributes:
        organization: The spec it came from.
        team: Agent ids in speaking order.
        tiers: ``(role, agents)`` per topology tier, top first (empty unless kind 'tiers').
        leaders: Agents of every tier but the last, top first.
        reports_to: Each agent's direct leader, or ``None``.
        graph: Leader -> member edges (chain: agent_i -> agent_{i+1}); do not mutate.
        roster: The team it was resolved for: ids, display names and the roles this
            organization gives them (``"self-chosen"`` when agents choose their own);
            :attr:`roles` reads them by id.
        instructions: Each agent's organization prompt, rendered when resolved (so a bad
            template fails before an episode starts).
        removed: Members a shock took out of the team, in the order they left; unless
            the rules' ``succession`` is ``none`` their seats were taken
            (:mod:`~orgteams.organizations.spec.succession`).
    """

    organization: Organization
    team: tuple[str, ...]
    tiers: tuple[tuple[str, tuple[str, ...]], ...]
    leaders: tuple[str, ...]
    reports_to: dict[str, str | None]
    graph: nx.DiGraph = field(repr=False)
    roster: Team = field(repr=False)
    instructions: dict[str, str] = field(default_factory=dict, repr=False)
    removed: tuple[str, ...] = ()

    @classmethod
    def build(
        cls, org: Organization, team: Team | list[str], leaders: list[str] | None = None,
        removed: tuple[str, ...] = (),
    ) -> ResolvedOrganization:
        """Resolve ``org`` for ``team``; see :meth:`Organization.resolve`."""
        ids = list(team.ids if isinstance(team, Team) else team)
        if len(set(ids)) != len(ids):
            raise UserError(f"organization {org.name!r}: team has duplicate agents: {ids}")
        removed = tuple(dict.fromkeys(removed))
        if any(a not in ids for a in removed):
            raise ValueError(f"removed agents {list(removed)} are not all in the team {ids}")
        succeed = org.rules.succession != "none"
        roster = Team.of(team)
        team = ids
        if len(team) < org.min_agents:
            raise UserError(
                f"organization {org.name!r} needs at least {org.min_agents} agents, got {len(team)}"
            )
        graph = nx.DiGraph()
        graph.add_nodes_from(team)
        reports_to: dict[str, str | None] = dict.fromkeys(team)
        roles = dict.fromkeys(team, org.topology.member_role)
        tiers: list[tuple[str, tuple[str, ...]]] = []
        if org.topology.kind == "tiers":
            tiers = _fill_tiers(org, team, leaders)
            above: tuple[str, ...] = ()
            for _, agents in tiers:
                if above:
                    for boss, member in _equal_shares(above, agents):
                        reports_to[member] = boss
                above = agents or above
            if succeed and removed:  # their seats are taken, down the tiers
                seats = [list(agents) for _, agents in tiers]
                for agent in removed:
                    vacate(seats, reports_to, team, agent)
                tiers = [(role, tuple(sorted(s, key=team.index)))
                         for (role, _), s in zip(tiers, seats)]
            for role, agents in tiers:
                roles.update(dict.fromkeys(agents, role))
            graph.add_edges_from((boss, a) for a, boss in reports_to.items() if boss)
        elif leaders:
            raise UserError(f"organization {org.name!r} has no leader tier to replace")
        elif org.topology.kind == "chain":  # the chain closes around removed links
            nx.add_path(graph, [a for a in team if not (succeed and a in removed)])
        if isinstance(org.roles, dict):
            roles.update({a: r for a, r in org.roles.items() if a in roles})
        elif org.roles == SELF_CHOSEN:
            roles = dict.fromkeys(team, SELF_CHOSEN)
        top = tuple(a for _, agents in tiers[:-1] for a in agents)
        resolved = cls(org, tuple(team), tuple(tiers), top, reports_to, graph,
                       roster.with_roles(roles), removed=removed)
        fragments: dict[str, str] = {}  # read once for the team, when an instruction needs them
        resolved.instructions.update({a: resolved._render_instruction(a, fragments=fragments)
                                      for a in team})
        return resolved

    # ------------------------------------------------------------------ queries
    @property
    def top_leaders(self) -> tuple[str, ...]:
        """The first tier's agents (the top leader(s); empty without a leader tier)."""
        return self.tiers[0][1] if len(self.tiers) > 1 else ()

    @property
    def roles(self) -> dict[str, str]:
        """Agent id -> role (``"self-chosen"`` when agents choose their own): the
        roster's roles."""
        return self.roster.roles_by_id  # type: ignore[return-value]

    def role_of(self, agent: str) -> str:
        """The role of ``agent`` (``"self-chosen"`` when agents pick their own)."""
        roles = self.roster.roles_by_id  # one lookup: asked several times per agent a round
        if agent not in roles:
            self._known(agent)  # raises: an unknown agent, and the team
        return roles[agent]  # type: ignore[return-value]

    def display_name(self, agent: str) -> str:
        """The team's display name of ``agent`` (by default ``agent_2`` is Charlie)."""
        return self.roster.name(agent)

    def members_of(self, leader: str) -> list[str]:
        """Agents that report directly to ``leader``, in team order."""
        self._known(leader)
        return list(self._reports.get(leader, ()))

    @cached_property
    def _reports(self) -> dict[str, tuple[str, ...]]:
        # each leader's reports, in team order, from one pass over the team: resolving a
        # 256-agent team asks members_of of every agent (instructions, rules), a pass each
        out: dict[str, list[str]] = {}
        for a in self.team:
            boss = self.reports_to[a]
            if boss is not None:
                out.setdefault(boss, []).append(a)
        return {boss: tuple(agents) for boss, agents in out.items()}

    @cached_property
    def _allowed(self) -> frozenset[tuple[str, str]]:
        org, team = self.organization, self.team
        if org.channels == "all":
            return frozenset((a, b) for a in team for b in team if a != b)
        if org.channels == "none":
            return frozenset()
        if org.channels == "topology":
            edges = set(self.graph.edges)
            return frozenset(edges | {(b, a) for a, b in edges})
        return frozenset(
            (a, b)
            for ch in org.channels
            for a in self._endpoint(ch.sender)
            for b in self._endpoint(ch.receiver)
            if a != b
        )

    @cached_property
    def _receivers(self) -> dict[str, tuple[str, ...]]:
        if self.organization.channels == "all":  # every other member: no pair looked up
            return {a: tuple(b for b in self.team if b != a) for a in self.team}
        allowed = self._allowed
        return {a: tuple(b for b in self.team if (a, b) in allowed) for a in self.team}

    def receivers_of(self, sender: str) -> tuple[str, ...]:
        """Agents ``sender`` may message, in team order (computed once per resolution)."""
        return self._receivers[self._known(sender)]

    def to_everyone(self, sender: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """A message of ``sender`` to everyone: the other members the channels let it
        reach and the ones they do not, each in team order (computed once per
        resolution: a 256-agent team routes hundreds of such messages a round)."""
        return self._to_everyone[self._known(sender)]

    @cached_property
    def _to_everyone(self) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
        if self.organization.channels == "all":  # each reaches every other member
            return {a: (self._receivers[a], ()) for a in self.team}
        allowed = self._allowed
        out = {}
        for a in self.team:
            others = [b for b in self.team if b != a]
            out[a] = (tuple(b for b in others if (a, b) in allowed),
                      tuple(b for b in others if (a, b) not in allowed))
        return out

    def can_message(self, sender: str, receiver: str) -> bool:
        """Whether ``sender`` may message ``receiver`` under the organization's channels."""
        pair = (self._known(sender), self._known(receiver))
        if self.organization.channels == "all":  # not the 65,000 pairs of a 256-agent team
            return sender != receiver
        return pair in self._allowed

    def instruction_for(self, agent: str, names: dict[str, str] | None = None) -> str:
        """The organization prompt for ``agent``: the rendered instruction, rules, abstention.

        ``names``: agent id -> display name, the team's own names (default
        :meth:`display_name`), so the instruction names people as the rest of the
        prompt does; other names render the instruction again.
        """
        known = self._known(agent)
        if not names or all(names.get(a, self.display_name(a)) == self.display_name(a)
                            for a in self.team):
            return self.instructions[known]
        return self._render_instruction(known, names)

    def _render_instruction(self, agent: str, names: dict[str, str] | None = None,
                            fragments: dict[str, str] | None = None) -> str:
        """``fragments``: the organizations' fragments as read for this team (filled on
        first need; :meth:`build` shares one across the team: a YAML read per agent was
        half of resolving a 256-agent team), else read now."""
        org = self.organization
        if org.instruction_format == "plain":  # a model's text: never a template
            text = substitute_fields(org.instruction, self._context(agent, names)).strip()
        else:
            text = _render_template(org, self._context(agent, names))
        parts = [text] if text else []
        rules = rules_text(org.rules, election_every=org.election_every,
                           elections=org.leadership_rule == "election",
                           has_leader=bool(self.top_leaders),
                           leads=agent in self.top_leaders)
        frag: dict[str, str] = {}
        if rules or org.allow_abstain:  # a YAML read: once for the team when shared
            if fragments is None:
                frag = _fragments()
            else:
                if not fragments:
                    fragments.update(_fragments())
                frag = fragments
        if rules:
            parts.append("\n".join([frag["rules_header"], *(f"- {r}" for r in rules)]))
        if org.allow_abstain:
            parts.append(frag["abstain"])
        return "\n\n".join(parts)

    def member_rules(self, agent: str) -> MemberRules:
        """The organization's rules as ``agent`` is told them (computed once per agent)."""
        return self._member_rules[self._known(agent)]

    @cached_property
    def _member_rules(self) -> dict[str, MemberRules]:
        org, rules = self.organization, self.organization.rules
        top = self.top_leaders
        out = {}
        for a in self.team:
            reports = tuple(r for r in self.members_of(a) if r not in self.removed)
            tier = next((t for _, t in self.tiers[:-1] if a in t), ())
            peers = tuple(p for p in tier if p != a and p not in self.removed
                          and self.reports_to[p] == self.reports_to[a] and self.members_of(p)
                          and self.can_message(a, p))
            out[a] = MemberRules(
                assign_work=rules.assign_work, report_when=rules.report_when,
                report_to=self._report_receivers(a), max_messages=rules.budget.messages,
                max_tokens=rules.budget.tokens, corrections=rules.corrections,
                vote=rules.election.vote, vote_seed=rules.election.seed, leaders=top,
                boss=self.reports_to[a], reports=reports, peers=peers if reports else (),
                assigns=rules.assign_work == "leader" and bool(reports),
                may_abstain=org.allow_abstain,
                self_chosen_roles=org.self_chosen_roles or self.roles[a] == SELF_CHOSEN)
        return out

    def _report_receivers(self, agent: str) -> tuple[str, ...] | None:
        """Whom ``agent``'s reports go to under ``report_to`` (None: everyone).

        ``leader``: its boss, else (a top leader) the agents it leads; ``neighbours``:
        its boss, the agents it leads and its chain neighbours. Where the topology gives
        nobody (a flat team), reports go to everyone.
        """
        to = self.organization.rules.report_to
        boss = self.reports_to[agent]
        if to == "leader":  # a top leader: the agents it leads, and the other top leaders
            near = [boss] if boss else [*self.members_of(agent), *(
                p for p in self.top_leaders if p != agent and self.members_of(agent)
                and self.can_message(agent, p))]
        elif to == "neighbours":
            near = [boss] if boss else []
            near += self.members_of(agent)
            near += [b for b in self.team if self.graph.has_edge(b, agent)
                     or self.graph.has_edge(agent, b)]
        else:
            return None
        near = [a for a in dict.fromkeys(near) if a != agent]
        return tuple(near) if near else None

    def with_leaders(self, leaders: list[str]) -> ResolvedOrganization:
        """The same team with ``leaders`` in the top tier (after an election or hand-over)."""
        return self.build(self.organization, self.roster, leaders, self.removed)

    def with_removed(self, agent: str) -> ResolvedOrganization:
        """The same team after a shock removed ``agent`` (its seat taken by the rules'
        ``succession``); the top tier as it is now, unless it was ``agent``'s."""
        top = list(self.top_leaders) if len(self.tiers) > 1 else None
        return self.build(self.organization, self.roster, top, (*self.removed, agent))

    def behaviour(self, reads_prompts: bool = True) -> str:
        """A canonical form of what playing this organization depends on (one JSON line):
        two organizations with the same behaviour play alike for this team, whatever their
        names, descriptions or moot fields.

        It holds the protocol, the leadership schedule, each agent's role, boss,
        receivers and :class:`MemberRules`, the graph and, when ``reads_prompts`` (a team
        with model or human members), each agent's rendered instruction. Settings that
        cannot act are left out (our choice, documented in docs/recipes.md):
        report and budget rules of an agent that can message nobody, ``corrections``
        of an agent nobody can message (no order reaches it), the vote of a team that
        never votes, ``report_to`` when nobody reports, and the batch size, election
        and hand-over periods of protocols and leadership rules that do not use them.
        Planners, random and policy members never read the instruction, so without
        ``reads_prompts`` it is left out too.
        """
        import dataclasses
        import json

        org, rules = self.organization, self.organization.rules
        votes = org.leadership_rule == "election" or rules.succession == "elect"
        heard = {b for a in self.team for b in self.receivers_of(a)}
        agents = {}
        for a in self.team:
            told = self.member_rules(a)
            fields = dataclasses.asdict(told)
            if not self.receivers_of(a) or told.report_when == "never":
                fields["report_to"] = None
            if not self.receivers_of(a):
                fields.update(report_when=None, max_messages=None, max_tokens=None)
            if a not in heard:
                fields["corrections"] = None
            if not votes:
                fields.update(vote=None, vote_seed=None)
            agents[a] = {"role": self.roles[a], "boss": self.reports_to[a],
                         "receivers": list(self.receivers_of(a)),
                         "rules": {k: list(v) if isinstance(v, tuple) else v
                                   for k, v in fields.items()},
                         **({"instruction": self.instructions[a]} if reads_prompts else {})}
        shape = {
            "protocol": org.protocol,
            "batch_size": org.batch_size if org.protocol == "batched_sequential" else None,
            "leadership_rule": org.leadership_rule,
            "election_every": org.election_every if org.leadership_rule == "election" else None,
            "reelect": rules.election.reelect if org.leadership_rule == "election" else None,
            "leadership_every": (org.leadership_every if org.leadership_rule in
                                 ("round_robin", "most_progress") else None),
            "succession": rules.succession,
            "tiers": [[role, list(agents_)] for role, agents_ in self.tiers],
            "edges": sorted(self.graph.edges), "removed": list(self.removed),
            "agents": agents}
        return json.dumps(shape, sort_keys=True, default=str)

    # ------------------------------------------------------------------ helpers
    def _known(self, agent: str) -> str:
        if agent not in self.reports_to:
            raise ValueError(
                f"unknown agent {agent!r}.{did_you_mean(agent, self.team)} "
                f"Team: {', '.join(self.team)}"
            )
        return agent

    def _endpoint(self, name: str) -> list[str]:
        if name == "*":
            return list(self.team)
        if AGENT_ID.fullmatch(name):
            return [name] if name in self.reports_to else []
        declared = {t.role for t in self.organization.topology.tiers}
        declared |= {self.organization.topology.member_role, *self.roles.values()}
        if name not in declared:
            raise UserError(
                f"organization {self.organization.name!r}: field 'channels': unknown role or "
                f"agent {name!r}.{did_you_mean(name, declared)}"
            )
        return [a for a in self.team if self.roles[a] == name]

    @cached_property
    def _display_names(self) -> dict[str, str]:
        return {a: self.display_name(a) for a in self.team}

    def _context(self, agent: str, names: dict[str, str] | None = None) -> dict[str, Any]:
        org = self.organization

        if names:
            def name(a: str) -> str:
                return names.get(a) or self.display_name(a)
        else:  # the team's names (resolving a 256-agent team names each agent 256 times)
            name = self._display_names.__getitem__

        boss = self.reports_to[self._known(agent)]
        chain: list[str] = []
        if org.topology.kind == "chain":  # the links next to it (a removed one's closed over)
            near = {*self.graph.successors(agent), *self.graph.predecessors(agent)}
            chain = [b for b in self.team if b in near]
        top = self.tiers[0][1] if self.tiers else ()
        return {
            "me": name(agent),
            "agent": agent,
            "role": self.roles[agent],
            "names": [name(a) for a in self.team],
            "n": len(self.team),
            "leader": name(top[0]) if top else None,
            "leaders": [name(a) for a in self.leaders],
            "top_leaders": [name(a) for a in top],
            "boss": name(boss) if boss else None,
            "reports": [name(a) for a in self.members_of(agent)],
            "tiers": [(role, [name(a) for a in agents]) for role, agents in self.tiers],
            "neighbours": [name(a) for a in chain],
            "mission": org.mission,
            "rules": list(org.rules.notes),
            "allow_abstain": org.allow_abstain,
            "batch_size": org.batch_size,
            "election_every": org.election_every,
            "leadership_every": org.leadership_every,
        }


def _render_template(org: Organization, context: dict[str, Any]) -> str:
    """A person's instruction rendered in the limited sandbox; what goes wrong is a UserError."""
    import jinja2

    try:
        return render_instruction(compile_template(org.instruction), context).strip()
    except jinja2.UndefinedError as exc:
        msg = exc.message
    except jinja2.sandbox.SecurityError as exc:
        msg = f"unsafe template: {exc}"
    except jinja2.TemplateError as exc:
        msg = f"template error: {exc}"
    except (ArithmeticError, LookupError, TypeError, ValueError) as exc:
        msg = f"template error: {type(exc).__name__}: {exc}"
    raise UserError(f"{org.origin}: field 'instruction': {msg}")


def _fill_tiers(
    org: Organization, team: list[str], leaders: list[str] | None
) -> list[tuple[str, tuple[str, ...]]]:
    """Place agents into tiers in team order; ``leaders`` replaces the first tier."""
    left, tiers = list(team), []
    for i, tier in enumerate(org.topology.tiers):
        named = leaders if i == 0 and leaders else tier.agents
        if named is not None:
            missing = [a for a in named if a not in team]
            if missing:
                raise UserError(
                    f"organization {org.name!r}: tier {tier.role!r} names "
                    f"{', '.join(missing)}, not in the team of {len(team)}"
                )
            chosen = [a for a in dict.fromkeys(named) if a in left]
        elif tier.count == "rest":
            chosen = list(left)
        elif isinstance(tier.count, int):
            chosen = left[: tier.count]
        else:
            chosen = left[: share_count(tier.count, len(left))]
        left = [a for a in left if a not in chosen]
        tiers.append((tier.role, tuple(chosen)))
    return tiers


def _equal_shares(bosses: tuple[str, ...], members: tuple[str, ...]) -> list[tuple[str, str]]:
    """Contiguous equal shares of ``members`` per boss; the first bosses take the remainder."""
    q, r = divmod(len(members), len(bosses))
    pairs, start = [], 0
    for j, boss in enumerate(bosses):
        size = q + (1 if j < r else 0)
        pairs += [(boss, m) for m in members[start : start + size]]
        start += size
    return pairs
