"""The organization spec: a pydantic model loaded from YAML, and its YAML round trip.

An :class:`Organization` is data. Its ``topology`` says who leads whom with *tiers*
that resolve for any team size; ``protocol`` names the turn-taking of the communicate
phase (see :mod:`orgteams.organizations.protocols`); ``instruction`` is a Jinja2
template (``StrictUndefined``) rendered into each agent's prompt.
:meth:`Organization.resolve` fixes everything for an actual team
(:class:`ResolvedOrganization`).

Protocols and the named organizations that use them:

============================  ====================================================
protocol                      organizations
============================  ====================================================
``free``                      none, decentralized, chain
``leader_first``              leader, leader_with_correction, elected_leader,
                              dual_leader, pyramid, dynamic
``coordinator``               coordinator
``broadcast``                 broadcast
``shared``                    shared
``sequential``                sequential
``batched_sequential``        batched_sequential
``claim_shared``              claim_shared
============================  ====================================================

Elections are not a protocol: ``leadership_rule: election`` adds a vote stage in front
of the protocol's stages every ``election_every`` rounds.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import networkx as nx
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from orgteams.envs._util import did_you_mean

PROTOCOLS: tuple[str, ...] = (
    "free",
    "leader_first",
    "coordinator",
    "broadcast",
    "shared",
    "sequential",
    "batched_sequential",
    "claim_shared",
)
LEADERSHIP_RULES: tuple[str, ...] = ("fixed", "election", "round_robin", "most_progress")
SELF_CHOSEN = "self-chosen"
_NAMES = (
    "Alice", "Bob", "Charlie", "David", "Eve", "Frank",
    "Grace", "Heidi", "Ivan", "Judy", "Kevin", "Laura",
)  # fmt: skip


def display_names(n: int) -> list[str]:
    """Display names for ``agent_0 ... agent_{n-1}``: Alice, Bob, ... Laura, then Agent12, ...

    Args:
        n: Team size (>= 0).

    Returns:
        One label per agent index; labels are for prompts only, ids stay ``agent_i``.
    """
    if n < 0:
        raise ValueError(f"display_names(n) needs n >= 0, got {n}")
    return [_NAMES[i] if i < len(_NAMES) else f"Agent{i}" for i in range(n)]


class Share(BaseModel):
    """A tier size as a share of the agents not yet placed: ``clamp(floor(fraction * left))``."""

    model_config = ConfigDict(extra="forbid")
    fraction: float = Field(gt=0, le=1)
    min: int = Field(default=0, ge=0)
    max: int | None = Field(default=None, ge=0)


class Tier(BaseModel):
    """One level of a hierarchy. Agents fill tiers in team order (agent_0 first).

    ``count`` is a number, ``"rest"`` (every agent not yet placed) or a :class:`Share`;
    ``agents`` names agents explicitly instead. Each agent of a tier reports to one
    agent of the nearest non-empty tier above, in contiguous equal shares
    (6 members under 2 vice leaders: 3 each; the first leaders take the remainder).
    """

    model_config = ConfigDict(extra="forbid")
    role: str
    count: int | Literal["rest"] | Share = 1
    agents: list[str] | None = None


class Topology(BaseModel):
    """Who leads whom.

    ``kind``: ``flat`` (no leaders; everyone has ``member_role``), ``chain`` (agent_i
    passes to agent_{i+1}; no leaders) or ``tiers`` (a hierarchy; the last tier must have
    ``count: rest`` and holds the members; every earlier tier's agents are leaders).
    """

    model_config = ConfigDict(extra="forbid")
    kind: Literal["flat", "chain", "tiers"] = "flat"
    tiers: list[Tier] = Field(default_factory=list)
    member_role: str = "member"

    @model_validator(mode="after")
    def _check_tiers(self) -> Topology:
        if self.kind == "tiers":
            if not self.tiers:
                raise ValueError("kind 'tiers' needs at least one tier")
            if self.tiers[-1].count != "rest" or self.tiers[-1].agents is not None:
                raise ValueError("the last tier must have count 'rest' so every agent has a place")
            if any(t.count == "rest" for t in self.tiers[:-1]):
                raise ValueError("only the last tier may have count 'rest'")
        elif self.tiers:
            raise ValueError(f"kind {self.kind!r} takes no tiers; use kind 'tiers'")
        return self


class Channel(BaseModel):
    """An allowed direction of messages: endpoints are agent ids, role names or ``*``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    sender: str = Field(alias="from")
    receiver: str = Field(alias="to")


class Governance(BaseModel):
    """Which fields a Coordinator may not change (``human_only``) or may change only with
    human approval (``needs_approval``); the self-organizing paper's rings 1 and 2."""

    model_config = ConfigDict(extra="forbid")
    human_only: list[str] = Field(
        default_factory=lambda: ["mission", "allow_abstain", "governance"]
    )
    needs_approval: list[str] = Field(default_factory=list)

    @field_validator("human_only", "needs_approval")
    @classmethod
    def _known_fields(cls, names: list[str]) -> list[str]:
        for name in names:
            if name not in Organization.model_fields:
                hint = did_you_mean(name, Organization.model_fields)
                raise ValueError(f"unknown organization field {name!r}.{hint}")
        return names


class Organization(BaseModel):
    """An organization of a team: topology, roles, channels, rules, protocol, instruction.

    Instruction template variables (Jinja2, a missing one is an error): ``me`` (this
    agent's display name), ``agent`` (its id), ``role``, ``names`` (all display names),
    ``n``, ``leader`` (first top leader's name or ``None``), ``leaders`` (names of all
    leaders), ``top_leaders``, ``boss`` (who this agent reports to, or ``None``),
    ``reports`` (names reporting to this agent), ``tiers`` (list of ``(role, names)``),
    ``neighbours`` (chain neighbours' names), ``mission``, ``rules``, ``allow_abstain``,
    ``batch_size``, ``election_every``, ``leadership_every``.

    Attributes:
        name: Short identifier (the file stem for library organizations).
        description: One line for humans.
        source: ``organized-teams``, ``self-organizing`` or ``user``.
        protocol: One of :data:`PROTOCOLS` (table in the module docstring).
        topology: Who leads whom (:class:`Topology`).
        roles: ``topology`` (role = tier role), ``self-chosen``, or ``{agent_id: role}``
            overrides on top of the topology's roles.
        channels: ``all``, ``topology`` (along leader or chain edges, both directions),
            ``none`` or a list of ``{from, to}`` pairs.
        rules: Behavioural rules, appended to the instruction as a list.
        allow_abstain: Whether an agent may abstain (it stays in the env and waits).
        self_chosen_roles: Agents pick their own role each round (set by ``roles: self-chosen``).
        leadership_rule: ``fixed``, ``election``, ``round_robin`` or ``most_progress``.
        election_every: Rounds between elections (``leadership_rule: election``).
        leadership_every: Rounds between leadership hand-overs (round_robin, most_progress).
        batch_size: Group size K of ``batched_sequential``.
        min_agents: Smallest team this organization resolves for.
        mission: The team's mission statement (human-only by default).
        governance: What the Criticize-Reflect Coordinator may change.
        instruction: Jinja2 template of the organization prompt; empty = no instruction.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    source: Literal["organized-teams", "self-organizing", "user"] = "user"
    protocol: str = "free"
    topology: Topology = Field(default_factory=Topology)
    roles: Literal["topology", "self-chosen"] | dict[str, str] = "topology"
    channels: Literal["all", "topology", "none"] | list[Channel] = "all"
    rules: list[str] = Field(default_factory=list)
    allow_abstain: bool = False
    self_chosen_roles: bool = False
    leadership_rule: str = "fixed"
    election_every: int | None = Field(default=None, ge=1)
    leadership_every: int | None = Field(default=None, ge=1)
    batch_size: int | None = Field(default=None, ge=1)
    min_agents: int = Field(default=1, ge=1)
    mission: str = ""
    governance: Governance = Field(default_factory=Governance)
    instruction: str = ""

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, value: str) -> str:
        if value not in PROTOCOLS:
            raise ValueError(
                f"unknown protocol {value!r}.{did_you_mean(value, PROTOCOLS)} "
                f"Known: {', '.join(PROTOCOLS)}"
            )
        return value

    @field_validator("leadership_rule")
    @classmethod
    def _known_rule(cls, value: str) -> str:
        if value not in LEADERSHIP_RULES:
            raise ValueError(
                f"unknown leadership rule {value!r}.{did_you_mean(value, LEADERSHIP_RULES)} "
                f"Known: {', '.join(LEADERSHIP_RULES)}"
            )
        return value

    @field_validator("instruction")
    @classmethod
    def _parses(cls, value: str) -> str:
        compile_template(value)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Organization:
        if self.roles == SELF_CHOSEN:
            self.self_chosen_roles = True
        if self.protocol == "batched_sequential" and self.batch_size is None:
            raise ValueError("protocol 'batched_sequential' needs batch_size (agents per group)")
        if self.leadership_rule == "election" and self.election_every is None:
            raise ValueError("leadership_rule 'election' needs election_every (rounds)")
        if self.leadership_rule in ("round_robin", "most_progress"):
            if self.leadership_every is None:
                raise ValueError(f"leadership_rule {self.leadership_rule!r} needs leadership_every")
        needs_leader = self.protocol in ("leader_first", "coordinator")
        if (needs_leader or self.leadership_rule != "fixed") and self.topology.kind != "tiers":
            raise ValueError(
                f"protocol {self.protocol!r} with leadership_rule {self.leadership_rule!r} "
                "needs a leader: use topology kind 'tiers'"
            )
        return self

    # ----------------------------------------------------------------- resolve
    def resolve(self, team: list[str], leaders: list[str] | None = None) -> ResolvedOrganization:
        """Fix leaders, roles, channels and instructions for an actual team.

        Args:
            team: Agent ids in speaking order, normally ``agent_0 ... agent_{n-1}``.
            leaders: Agents that replace the first tier (an elected or rotated leader).

        Raises:
            ValueError: The team is smaller than ``min_agents``, has duplicates, or
                ``leaders`` / explicit tier agents are not in it.
        """
        return ResolvedOrganization.build(self, team, leaders)

    # ------------------------------------------------------------- YAML + diff
    @classmethod
    def from_yaml(cls, path_or_text: str | Path) -> Organization:
        """Load from a ``.yaml`` path or YAML text; errors name the file and field.

        Raises:
            ValueError: e.g. ``"leader.yaml: field 'protocol': unknown protocol
                'sequental'. Did you mean 'sequential'? Known: ..."``.
        """
        source = "<text>"
        text = str(path_or_text)
        if isinstance(path_or_text, Path) or (
            "\n" not in text and text.endswith((".yaml", ".yml"))
        ):
            path = Path(path_or_text)
            if not path.is_file():
                raise ValueError(f"{path}: no such organization file")
            source, text = str(path), path.read_text(encoding="utf-8")
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"{source}: invalid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(
                f"{source}: expected a mapping of organization fields, got {type(data).__name__}"
            )
        return cls.from_dict(data, source=source)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<dict>") -> Organization:
        """Validate a mapping, turning pydantic errors into one ValueError naming fields."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ValueError(f"{source}: {_explain(exc)}") from None

    def to_yaml(self) -> str:
        """YAML text that :meth:`from_yaml` reads back to an equal organization."""
        data = self.model_dump(mode="json", by_alias=True)
        return yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100)

    def updated(self, **changes: Any) -> Organization:
        """A validated copy with ``changes`` (``model_copy(update=...)`` skips validation).

        Raises:
            ValueError: A change is invalid, e.g. ``"organization 'leader': field
                'protocol': unknown protocol ..."``.
        """
        data = {**self.model_dump(mode="json", by_alias=True), **changes}
        return Organization.from_dict(data, source=f"organization {self.name!r}")

    def diff(self, other: Organization) -> dict[str, tuple[Any, Any]]:
        """Changed top-level fields as ``{field: (self_value, other_value)}`` (JSON values)."""
        mine, theirs = self.model_dump(mode="json"), other.model_dump(mode="json")
        return {k: (mine[k], theirs[k]) for k in mine if mine[k] != theirs[k]}

    def governance_violations(self, proposed: Organization, *, approved: bool = False) -> list[str]:
        """Fields ``proposed`` changes that governance forbids (needs_approval unless approved)."""
        changed = self.diff(proposed)
        bad = [f for f in changed if f in self.governance.human_only]
        if not approved:
            bad += [f for f in changed if f in self.governance.needs_approval and f not in bad]
        return bad


def _explain(exc: ValidationError) -> str:
    """One line per error: ``field 'a.b': message`` with a hint for unknown fields."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            parent = err["loc"][:-1]
            known = Organization.model_fields if not parent else ()
            msg = f"unknown field.{did_you_mean(str(err['loc'][-1]), known)}"
        lines.append(f"field '{loc}': {msg}" if loc else msg)
    return "; ".join(dict.fromkeys(lines))


class _BlockDumper(yaml.SafeDumper):
    """Write multi-line strings (instructions) as ``|`` blocks so they stay editable."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value and not any(c in value for c in "\r\t") else None
    if style and value != value.rstrip(" "):
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_representer)


def share_count(share: Share, left: int) -> int:
    """Size of a :class:`Share` tier given ``left`` unplaced agents (never more than left)."""
    k = max(share.min, math.floor(share.fraction * left))
    if share.max is not None:
        k = min(k, share.max)
    return min(k, left)


_AGENT_ID = re.compile(r"agent_(\d+)")


def compile_template(text: str) -> Any:
    """Compile an instruction with Jinja2 ``StrictUndefined``; syntax errors -> ValueError."""
    try:
        import jinja2
    except ImportError:  # pragma: no cover - jinja2 ships with the llm extra
        raise ValueError("instructions need Jinja2: pip install 'orgteams[llm]'") from None
    env = jinja2.Environment(
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, autoescape=False
    )
    try:
        return env.from_string(text)
    except jinja2.TemplateSyntaxError as exc:
        raise ValueError(f"template syntax error at line {exc.lineno}: {exc.message}") from None


def _fragments() -> dict[str, str]:
    from orgteams.envs._util import asset_dir

    return yaml.safe_load(asset_dir("organizations", "_fragments.yaml").read_text("utf-8"))


@dataclass(frozen=True)
class ResolvedOrganization:
    """An organization fixed for one team: leaders, roles, channels, graph, instructions.

    Attributes:
        organization: The spec it came from.
        team: Agent ids in speaking order.
        tiers: ``(role, agents)`` per topology tier, top first (empty unless kind 'tiers').
        leaders: Agents of every tier but the last, top first.
        roles: Role of every agent (``"self-chosen"`` when agents choose their own).
        reports_to: Each agent's direct leader, or ``None``.
        graph: Leader -> member edges (chain: agent_i -> agent_{i+1}); do not mutate.
    """

    organization: Organization
    team: tuple[str, ...]
    tiers: tuple[tuple[str, tuple[str, ...]], ...]
    leaders: tuple[str, ...]
    roles: dict[str, str]
    reports_to: dict[str, str | None]
    graph: nx.DiGraph = field(repr=False)

    @classmethod
    def build(
        cls, org: Organization, team: list[str], leaders: list[str] | None = None
    ) -> ResolvedOrganization:
        """Resolve ``org`` for ``team``; see :meth:`Organization.resolve`."""
        team = list(team)
        if len(set(team)) != len(team):
            raise ValueError(f"organization {org.name!r}: team has duplicate agents: {team}")
        if len(team) < org.min_agents:
            raise ValueError(
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
            for role, agents in tiers:
                roles.update(dict.fromkeys(agents, role))
                if above:
                    for boss, member in _equal_shares(above, agents):
                        reports_to[member] = boss
                        graph.add_edge(boss, member)
                above = agents or above
        elif leaders:
            raise ValueError(f"organization {org.name!r} has no leader tier to replace")
        elif org.topology.kind == "chain":
            nx.add_path(graph, team)
        if isinstance(org.roles, dict):
            roles.update({a: r for a, r in org.roles.items() if a in roles})
        elif org.roles == SELF_CHOSEN:
            roles = dict.fromkeys(team, SELF_CHOSEN)
        top = tuple(a for _, agents in tiers[:-1] for a in agents)
        return cls(org, tuple(team), tuple(tiers), top, roles, reports_to, graph)

    # ------------------------------------------------------------------ queries
    def role_of(self, agent: str) -> str:
        """The role of ``agent`` (``"self-chosen"`` when agents pick their own)."""
        return self.roles[self._known(agent)]

    def display_name(self, agent: str) -> str:
        """``agent_2`` -> ``Charlie``; ids that are not ``agent_<i>`` are their own label."""
        match = _AGENT_ID.fullmatch(agent)
        return display_names(int(match.group(1)) + 1)[-1] if match else agent

    def members_of(self, leader: str) -> list[str]:
        """Agents that report directly to ``leader``, in team order."""
        self._known(leader)
        return [a for a in self.team if self.reports_to[a] == leader]

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

    def can_message(self, sender: str, receiver: str) -> bool:
        """Whether ``sender`` may message ``receiver`` under the organization's channels."""
        return (self._known(sender), self._known(receiver)) in self._allowed

    def instruction_for(self, agent: str) -> str:
        """The organization prompt for ``agent``: the rendered template, rules, abstention."""
        import jinja2

        org = self.organization
        try:
            text = compile_template(org.instruction).render(**self._context(agent)).strip()
        except jinja2.UndefinedError as exc:
            raise ValueError(
                f"organization {org.name!r}: field 'instruction': {exc.message}"
            ) from None
        parts = [text] if text else []
        frag = _fragments()
        if org.rules:
            parts.append("\n".join([frag["rules_header"], *(f"- {r}" for r in org.rules)]))
        if org.allow_abstain:
            parts.append(frag["abstain"])
        return "\n\n".join(parts)

    def with_leaders(self, leaders: list[str]) -> ResolvedOrganization:
        """The same team with ``leaders`` in the top tier (after an election or hand-over)."""
        return self.build(self.organization, list(self.team), leaders)

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
        if _AGENT_ID.fullmatch(name):
            return [name] if name in self.reports_to else []
        declared = {t.role for t in self.organization.topology.tiers}
        declared |= {self.organization.topology.member_role, *self.roles.values()}
        if name not in declared:
            raise ValueError(
                f"organization {self.organization.name!r}: field 'channels': unknown role or "
                f"agent {name!r}.{did_you_mean(name, declared)}"
            )
        return [a for a in self.team if self.roles[a] == name]

    def _context(self, agent: str) -> dict[str, Any]:
        org, name = self.organization, self.display_name
        boss = self.reports_to[self._known(agent)]
        i = self.team.index(agent)
        chain = [self.team[j] for j in (i - 1, i + 1) if 0 <= j < len(self.team)]
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
            "neighbours": [name(a) for a in chain] if org.topology.kind == "chain" else [],
            "mission": org.mission,
            "rules": org.rules,
            "allow_abstain": org.allow_abstain,
            "batch_size": org.batch_size,
            "election_every": org.election_every,
            "leadership_every": org.leadership_every,
        }


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
                raise ValueError(
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
