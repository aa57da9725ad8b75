"""The organization spec: a pydantic model loaded from YAML, and its YAML round trip.

An :class:`Organization` is data. Its ``topology`` says who leads whom with *tiers*
that resolve for any team size; ``protocol`` names the turn-taking of the communicate
phase (see :mod:`orgteams.organizations.protocols.schedule`); ``instruction`` is a person's Jinja2
template (``StrictUndefined``, rendered in a limited sandbox:
:mod:`orgteams.templates`) or, with ``instruction_format: plain`` (what a
Coordinator model writes), plain text with ``{me}``-style names, never a template.
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

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from orgteams.agents.team import Team
from orgteams.envs.core.user_files import load_yaml, plain_name, read_text
from orgteams.errors import UserError, did_you_mean, validation_line
from orgteams.organizations.protocols.facts import PROTOCOL_FACTS, PROTOCOLS
from orgteams.organizations.spec.rules import Rules
from orgteams.organizations.spec.topology import Topology
from orgteams.templates import MAX_INSTRUCTION_CHARS, compile_template

if TYPE_CHECKING:
    from orgteams.organizations.spec.resolved import ResolvedOrganization

LEADERSHIP_RULES: tuple[str, ...] = ("fixed", "election", "round_robin", "most_progress")
_NAMED_FIELDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "protocol": ("protocol", PROTOCOLS), "leadership_rule": ("leadership rule", LEADERSHIP_RULES)}
"""The fields that name one of a known set: (what the error calls it, the known names)."""
SELF_CHOSEN = "self-chosen"
INSTRUCTION_VARIABLES: tuple[str, ...] = (
    "me", "agent", "role", "names", "n", "leader", "leaders", "top_leaders", "boss", "reports",
    "tiers", "neighbours", "mission", "rules", "allow_abstain", "batch_size", "election_every",
    "leadership_every",
)  # fmt: skip
"""The variables an instruction may use (``{{ me }}`` in a template, ``{me}`` in plain text)."""


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
        rules: Machine-readable rules every member kind honours (who assigns work,
            reports, budget, corrections, election; :mod:`~orgteams.organizations.spec.rules`),
            rendered after the instruction for LLM members; a list is free-text notes.
        allow_abstain: Whether an agent may abstain (it stays in the env and waits).
        self_chosen_roles: Agents pick their own role each round (set by ``roles: self-chosen``).
        leadership_rule: ``fixed``, ``election``, ``round_robin`` or ``most_progress``.
        election_every: Rounds between elections (``leadership_rule: election``).
        leadership_every: Rounds between leadership hand-overs (round_robin, most_progress).
        batch_size: Group size K of ``batched_sequential``.
        min_agents: Smallest team this organization resolves for (smaller: refused).
        recommended_agents: Smallest team it is meant for; a smaller one (at least
            ``min_agents``) runs with a one-line warning, recorded as a ``small_team``
            event (e.g. a 3-agent pyramid has one vice leader and one member).
        mission: The team's mission statement (human-only by default).
        governance: What the Criticize-Reflect Coordinator may change.
        instruction_format: ``jinja`` (a person's template, rendered in a limited sandbox,
            see :mod:`orgteams.templates`) or ``plain`` (text where only
            ``{me}``-style variable names are replaced; never a template). Instructions a
            Coordinator model writes are ``plain``, also when their saved file is reused.
        instruction: The organization prompt (see ``instruction_format``); empty = none.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    source: Literal["organized-teams", "self-organizing", "user"] = "user"
    protocol: str = "free"
    topology: Topology = Field(default_factory=Topology)
    roles: Literal["topology", "self-chosen"] | dict[str, str] = "topology"
    channels: Literal["all", "topology", "none"] | list[Channel] = "all"
    rules: Rules = Field(default_factory=Rules)
    allow_abstain: bool = False
    self_chosen_roles: bool = False
    leadership_rule: str = "fixed"
    election_every: int | None = Field(default=None, ge=1)
    leadership_every: int | None = Field(default=None, ge=1)
    batch_size: int | None = Field(default=None, ge=1)
    min_agents: int = Field(default=1, ge=1)
    recommended_agents: int | None = Field(default=None, ge=1)
    mission: str = ""
    governance: Governance = Field(default_factory=Governance)
    instruction_format: Literal["jinja", "plain"] = "jinja"
    instruction: str = ""
    _source: str = PrivateAttr(default="")

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        return plain_name(value)  # printed, and part of a run's default log folder

    @field_validator("protocol", "leadership_rule")
    @classmethod
    def _known_name(cls, value: str, info: ValidationInfo) -> str:
        what, known = _NAMED_FIELDS[info.field_name]
        if value not in known:
            raise ValueError(
                f"unknown {what} {value!r}.{did_you_mean(value, known)} Known: {', '.join(known)}"
            )
        return value

    @field_validator("instruction")
    @classmethod
    def _parses(cls, value: str, info: ValidationInfo) -> str:
        if info.data.get("instruction_format", "jinja") == "jinja":
            compile_template(value)
        elif len(value) > MAX_INSTRUCTION_CHARS:
            raise ValueError(f"the instruction is longer than {MAX_INSTRUCTION_CHARS} characters")
        return value

    def __eq__(self, other: object) -> bool:
        # Equal fields are equal organizations, wherever each was loaded from (_source).
        if not isinstance(other, Organization):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment] - mutable model, as pydantic's default

    @property
    def origin(self) -> str:
        """Where it came from, for error messages: its file, else ``organization 'name'``."""
        return self._source or f"organization {self.name!r}"

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
        needs_leader = PROTOCOL_FACTS[self.protocol].needs_leader
        if (needs_leader or self.leadership_rule != "fixed") and self.topology.kind != "tiers":
            raise ValueError(
                f"protocol {self.protocol!r} with leadership_rule {self.leadership_rule!r} "
                "needs a leader: use topology kind 'tiers'"
            )
        if self.rules.succession == "elect" and self.topology.kind != "tiers":
            raise ValueError("field 'rules.succession': 'elect' needs a leader to elect: use "
                             "topology kind 'tiers'")
        return self

    # ----------------------------------------------------------------- resolve
    def size_warning(self, n: int) -> str | None:
        """One line when ``n`` agents are fewer than ``recommended_agents``, else None."""
        if self.recommended_agents is None or n >= self.recommended_agents:
            return None
        return (f"organization {self.name!r} is meant for at least {self.recommended_agents} "
                f"agents; with {n} it runs degenerate")

    def resolve(self, team: Team | list[str], leaders: list[str] | None = None,
                removed: tuple[str, ...] = ()) -> ResolvedOrganization:
        """Fix leaders, roles, channels and instructions for an actual team.

        Args:
            team: The :class:`~orgteams.agents.team.Team` (ids and display names), or agent
                ids in speaking order (default names: ``agent_2`` is Charlie).
            leaders: Agents that replace the first tier (an elected or rotated leader).
            removed: Members shocks removed, in order; the rules' ``succession`` gives
                their seats to others (:mod:`~orgteams.organizations.spec.succession`).

        Raises:
            ValueError: The team is smaller than ``min_agents``, has duplicates, or
                ``leaders`` / explicit tier agents are not in it.
        """
        from orgteams.organizations.spec.resolved import ResolvedOrganization

        return ResolvedOrganization.build(self, team, leaders, removed)

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
            if not path.exists():
                raise UserError(f"{path}: no such organization file")
            source, text = str(path), read_text(path, "an organization file")
        data = load_yaml(text, source)
        if not isinstance(data, dict):
            raise UserError(
                f"{source}: expected a mapping of organization fields, got {type(data).__name__}"
            )
        org = cls.from_dict(data, source=source)
        if source != "<text>":
            org._source = source
        return org

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<dict>") -> Organization:
        """Validate a mapping, turning pydantic errors into one ValueError naming fields."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            line = validation_line(exc, Organization.model_fields)
            raise UserError(f"{source}: {line}") from None

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


class _BlockDumper(yaml.SafeDumper):
    """Write multi-line strings (instructions) as ``|`` blocks so they stay editable."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value and not any(c in value for c in "\r\t") else None
    if style and value != value.rstrip(" "):
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_representer)


def _fragments() -> dict[str, str]:
    from orgteams.assets import asset_dir

    return yaml.safe_load(asset_dir("organizations", "_fragments.yaml").read_text("utf-8"))
