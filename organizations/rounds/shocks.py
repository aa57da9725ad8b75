"""Shocks (the self-organizing paper's ``w_t``) and recovery from them.

Four kinds, each applied at the start of a decision round (before leadership and the
communicate phase), recorded as a ``shock`` event and in the summary's ``shocks``:

* ``remove:<agent>@<round>``: the member leaves the team. Its body stays in the
  house, idle, and teammates may push it aside; what it holds is set down on the
  nearest surface, and everyone is told where
  (:func:`~orgteams.envs.highlevel.removal.remove_agent`).
  Its claims and assignments lapse for the others (``CommunicateContext.removed``), and
  its seat (a leader's, a chain link's) is taken under the rules' ``succession``
  (:mod:`~orgteams.organizations.spec.succession`; :func:`take_over`).
* ``substitute:<agent>=<member spec>@<round>``: another member (model) plays the agent.
* ``regulate:<field>=<value>@<round>``: a regulation change: one organization field
  (or one rule, ``rules.<rule>``) changes and the new organization is in force from
  this round on (re-resolved: its stages, channels, rules, instructions and leaders).
  ``<value>`` is YAML (``regulate:allow_abstain=true``), taken literally when valid;
  else, for ``topology``, ``channels``, ``roles`` and ``rules``, a library organization's
  name takes that organization's field (``regulate:topology=chain``).
* ``priority:<task>@<round>``: a priority shift: the goal becomes ``<task>``'s over the
  same objects (:func:`~orgteams.envs.highlevel.goal_shift.shift_goal`); the summary records the
  goal before and after.

A shock hits at its round, or (``@unit:<n>``, ``after_units``) at the start of the
first round from then on with at least ``n`` goal units done, so that it lands where
the team has a progress rate to recover (recipes schedule shocks so). Recovery is
defined in ``docs/shocks.md`` and computed by :func:`recovery_rounds` (in rounds) and
:func:`recovery_ticks` (the same point in ticks).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import yaml

from orgteams.envs.core.user_files import check_yaml
from orgteams.errors import UserError
from orgteams.organizations.rounds.episode import check_member

if TYPE_CHECKING:
    from orgteams.organizations.rounds.episode import EpisodeState
    from orgteams.organizations.rounds.episode_summary import EpisodeSummary

__all__ = ["KINDS", "REGULATED", "Shock", "apply_shock", "check_priority_shifts",
           "check_shocks", "pre_shock_rate", "recovery_rounds", "recovery_summary",
           "recovery_ticks", "regulated", "take_over"]

KINDS = ("remove", "substitute", "regulate", "priority")
# Organization fields a regulation change may set (the rest are identity or governance).
REGULATED = ("protocol", "topology", "instruction", "rules", "channels", "roles",
             "allow_abstain", "self_chosen_roles", "leadership_rule", "election_every",
             "leadership_every", "batch_size")
_FROM_LIBRARY = ("topology", "channels", "roles", "rules")
_SYNTAX = ("expected 'remove:<agent>@<round>', 'substitute:<agent>=<backend>@<round>', "
           "'regulate:<field>=<value>@<round>' or 'priority:<task>@<round>' (<round>: a "
           "round, or unit:<n>, the first round with n goal units done)")
WINDOW = 5  # rounds of the pre-shock rate (docs/shocks.md)


@dataclass(frozen=True)
class Shock:
    """One shock at the start of ``round`` (0-based).

    Attributes:
        round: The decision round it hits (with ``after_units``: the earliest).
        after_units: It hits at the first round from ``round`` on that starts with at
            least this many goal units done (0: at ``round``).
        kind: One of :data:`KINDS`.
        agent: The agent removed or substituted (None for the others).
        member: ``substitute``: a team member object or a spec string that the runner's
            ``member_factory(agent, spec)`` turns into one (e.g. ``"planner"``).
        field: ``regulate``: the organization field that changes.
        value: ``regulate``: its new value; ``priority``: the new task's name.
    """

    round: int
    kind: str
    agent: str | None = None
    member: Any = None
    field: str | None = None
    value: Any = None
    after_units: int = 0

    def due(self, round_: int, units_done: int) -> bool:
        """Whether it hits at the start of ``round_`` with ``units_done`` goal units done
        (asked each round until it has hit)."""
        return round_ >= self.round and units_done >= self.after_units

    def validate(self, team: list[str], factory) -> None:
        """Check it against the team before the episode (one line naming what is wrong)."""
        if self.kind not in KINDS:
            raise UserError(f"shock kind must be one of {KINDS}, got {self.kind!r}")
        if not isinstance(self.round, int) or self.round < 0:
            raise UserError(f"shock round must be an integer >= 0, got {self.round!r}")
        if not isinstance(self.after_units, int) or isinstance(self.after_units, bool) \
                or self.after_units < 0:
            raise UserError(f"shock after_units must be an integer >= 0, got "
                            f"{self.after_units!r}")
        if self.kind in ("remove", "substitute") and self.agent not in team:
            raise UserError(f"shock agent {self.agent!r} is not in the team {team}")
        if self.kind == "substitute":
            if self.member is None:
                raise UserError("a substitute shock needs a member (a member or a spec string)")
            if isinstance(self.member, str) and factory is None:
                raise ValueError("a substitute shock given as a spec string needs the "
                                 "runner's member_factory")
            if not isinstance(self.member, str):
                check_member(self.agent, self.member)
        if self.kind == "regulate" and self.field not in REGULATED and not (
                isinstance(self.field, str) and self.field.startswith("rules.")):
            raise UserError(f"regulate shock: field {self.field!r} cannot change mid-episode; "
                            f"fields: {', '.join(REGULATED)}")
        if self.kind == "priority":
            if not isinstance(self.value, str):
                raise UserError(f"priority shock: the new task must be a task name, got "
                                f"{self.value!r}")
            from orgteams.envs.core.tasks import load_task

            try:
                load_task(self.value)
            except (UserError, FileNotFoundError) as exc:
                raise UserError(f"priority shock: {exc}") from None

    def build(self, factory) -> Any:
        """The substitute member."""
        if isinstance(self.member, str):
            return factory(self.agent, self.member)
        return self.member

    def to_dict(self) -> dict:
        """The shock as plain JSON data, as the summary and the log hold it."""
        member = self.member if isinstance(self.member, str | None) else self.member.model
        out = {"round": self.round, "kind": self.kind, "agent": self.agent, "member": member,
               "field": self.field, "value": self.value}
        return {**out, "after_units": self.after_units} if self.after_units else out

    def text(self) -> str:
        """The CLI form (``parse(shock.text()) == shock`` for spec-string members)."""
        head = {"remove": lambda: self.agent,
                "substitute": lambda: f"{self.agent}={self.member}",
                "regulate": lambda: f"{self.field}={_yaml_text(self.value)}",
                "priority": lambda: self.value}[self.kind]()
        at = f"unit:{self.after_units}" if self.after_units and not self.round else self.round
        return f"{self.kind}:{head}@{at}"

    @classmethod
    def parse(cls, text: str) -> Shock:
        """``"remove:agent_1@5"``, ``"substitute:agent_1=planner@5"``,
        ``"regulate:protocol=shared@5"`` or ``"priority:put_fridge@5"`` (CLI syntax);
        ``@unit:1`` instead of a round: at the first round with 1 goal unit done."""
        if not isinstance(text, str):
            raise UserError(f"malformed shock {text!r}: {_SYNTAX}")
        try:
            head, at = text.rsplit("@", 1)
            kind, rest = head.split(":", 1)
            units = int(at[len("unit:"):]) if at.startswith("unit:") else 0
            rnd = 0 if at.startswith("unit:") else int(at)
        except ValueError:
            raise UserError(f"malformed shock {text!r}: {_SYNTAX}") from None
        if units < 0:
            raise UserError(f"malformed shock {text!r}: {_SYNTAX}")
        shock = cls._parsed(text, kind, rest, rnd)
        return replace(shock, after_units=units) if units else shock

    @classmethod
    def _parsed(cls, text: str, kind: str, rest: str, rnd: int) -> Shock:
        if kind not in KINDS:
            raise UserError(f"malformed shock {text!r}: unknown kind {kind!r}; {_SYNTAX}")
        left, eq, right = rest.partition("=")
        if kind == "remove":
            return cls(rnd, kind, agent=rest)
        if kind == "substitute":
            return cls(rnd, kind, agent=left, member=right or None)
        if kind == "priority":
            return cls(rnd, kind, value=rest)
        if not eq:
            raise UserError(f"malformed shock {text!r}: {_SYNTAX}")
        try:
            check_yaml(right, f"shock {text[:60]!r}")  # a value nested 50,000 deep: one line
            value = yaml.safe_load(right)
        except yaml.YAMLError:
            value = right
        return cls(rnd, kind, field=left, value=value if value is not None else right)

    @classmethod
    def from_spec(cls, item: Any, where: str) -> Shock:
        """A shock from a sweep or experiment spec: a CLI string or a mapping with
        ``kind``, ``round`` and ``agent`` / ``member`` / ``field`` / ``value``.

        Raises:
            UserError: One line starting with ``where``.
        """
        try:
            if isinstance(item, str):
                return cls.parse(item)
            if not isinstance(item, dict):
                raise UserError(f"a shock is a string like 'remove:agent_1@5' or a mapping, "
                                f"got {item!r}")
            unknown = sorted(set(item) - {"kind", "round", "agent", "member", "field", "value",
                                          "after_units"})
            if unknown:
                raise UserError(f"unknown shock field {unknown[0]!r}")
            if "kind" not in item or ("round" not in item and "after_units" not in item):
                raise UserError("a shock mapping needs 'kind' and 'round' or 'after_units'")
            return cls(item.get("round", 0), item["kind"], item.get("agent"),
                       item.get("member"), item.get("field"), item.get("value"),
                       item.get("after_units", 0))
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None


def _yaml_text(value: Any) -> str:
    return value if isinstance(value, str) else yaml.safe_dump(
        value, default_flow_style=True).strip()


def regulated(organization, field: str, value: Any):
    """``organization`` with ``field`` set to ``value`` (validated).

    For :data:`_FROM_LIBRARY` fields a string that is not itself a valid value but names
    a library organization takes that organization's field (``channels=none`` means no
    channels; ``channels=chain`` the ``chain`` organization's).

    Raises:
        UserError: The value is invalid for the field (one line naming it).
    """
    from orgteams.organizations.spec.library import list_organizations, load_organization

    name, new = field, value
    if field.startswith("rules."):  # one rule of the rules block, the others kept
        rules = organization.model_dump(mode="json", by_alias=True)["rules"]
        name, new = "rules", {**rules, field[len("rules."):]: value}
    try:
        try:
            return organization.updated(**{name: new})
        except UserError:
            if not (name in _FROM_LIBRARY and isinstance(new, str)
                    and new in list_organizations()):
                raise
        taken = load_organization(new).model_dump(mode="json", by_alias=True)[name]
        return organization.updated(**{name: taken})
    except UserError as exc:
        raise UserError(f"regulate shock {field}={value!r}: {exc}") from None


def check_shocks(shocks: list[Shock], team: list[str], factory, organization, roster) -> None:
    """Validate every shock before the episode; regulation changes are applied in round
    order to a copy of ``organization`` and resolved for the team, so a bad value is one
    line now, not an error mid-episode.

    Raises:
        UserError: The first bad shock, in one line.
    """
    org = organization
    for shock in sorted(shocks, key=lambda s: s.round):
        shock.validate(team, factory)
        if shock.kind == "regulate":
            org = regulated(org, shock.field, shock.value)
            try:
                org.resolve(roster)
            except ValueError as exc:
                raise UserError(f"regulate shock {shock.field}={shock.value!r}: {exc}") from None


def check_priority_shifts(shocks: list[Shock], env) -> None:
    """Each priority shift can turn this episode's goal into its task's (checked right
    after ``reset``, before any round; shifts compose in round order).

    Raises:
        UserError: A task shares no object class with the goal, or the layout lacks
            its target.
    """
    from orgteams.envs.highlevel.goal_shift import shifted_goal

    scene = env.world.scene
    goal, types = scene.goal, {f.type for f in scene.layout.furniture}
    for shock in sorted(shocks, key=lambda s: s.round):
        if shock.kind == "priority":
            goal = shifted_goal(goal, shock.value, types)


def apply_shock(state: EpisodeState, shock: Shock, factory=None) -> dict[str, Any]:
    """Apply ``shock`` to the running episode; returns what the ``shock`` event records
    (besides kind and agent): what changed, and ``units_after`` (goal units done right
    after it, under the goal then in force), the baseline of recovery. A removed or
    substituted member's seat is taken afterwards, by :func:`take_over`."""
    from orgteams.envs.highlevel.goal_shift import shift_goal
    from orgteams.envs.highlevel.removal import remove_agent

    env = state.env
    data: dict[str, Any] = {}
    if shock.kind == "remove":
        data["set_down"] = [list(p) for p in remove_agent(env, shock.agent)]
        env.overlay.markers[shock.agent] = "idle"
    elif shock.kind == "substitute":
        member = shock.build(factory)
        state.substitute(shock.agent, member)
        data["member"] = member.model or None
    elif shock.kind == "regulate":
        old = state.organization
        new = regulated(old, shock.field, shock.value)
        state.switch(new)  # resolved once (check_shocks tried it before the episode)
        top = shock.field.partition(".")[0]  # rules.<rule>: the whole rules block
        data.update(field=shock.field, before=old.model_dump(mode="json")[top],
                    after=new.model_dump(mode="json")[top])
    else:
        old_task = env.world.scene.task
        before, after = shift_goal(env, shock.value)
        data.update(from_task=old_task, to_task=env.world.scene.task,
                    goal_before=[str(p) for p in before], goal_after=[str(p) for p in after])
    data["units_after"] = sum(env.world.progress)
    return data


def take_over(state: EpisodeState, shock: Shock) -> None:
    """After the ``shock`` event: a removed or substituted member's seat is taken under
    the rules' ``succession`` (a ``succession`` event, or a vote this round)."""
    if shock.kind == "remove":
        state.remove(shock.agent)
    elif shock.kind == "substitute":
        state.succeed_substitute(shock.agent)


def pre_shock_rate(units_by_round: list[int], shock_round: int,
                   window: int = WINDOW) -> float:
    """Goal units per round over the ``window`` rounds before ``shock_round`` (fewer at
    the start); 0.0 when the shock hit at round 0 or nothing was done before it.

    ``units_by_round[r]`` is the goal units done before round ``r`` (index 0: the start).
    """
    s = shock_round
    if s >= len(units_by_round):
        return 0.0
    lo = max(0, s - window)
    return (units_by_round[s] - units_by_round[lo]) / (s - lo) if s > lo else 0.0


def recovery_rounds(units_by_round: list[int], shock_round: int, *, success: bool,
                    baseline: int | None, window: int = WINDOW) -> int | None:
    """Rounds after ``shock_round`` until the progress rate is back to its pre-shock level.

    ``units_by_round[r]`` is the goal units done before round ``r`` (index 0 is the
    start); ``baseline`` the units done right after the shock, under the goal then in
    force (``units_by_round[shock_round]`` except after a priority shift), or None when
    the shock never happened (the episode ended first). The pre-shock rate is
    :func:`pre_shock_rate`; the rate ``k`` rounds after the shock is
    ``(units_by_round[shock_round + k] - baseline) / k``.

    Returns:
        The first ``k >= 1`` whose rate reaches the pre-shock rate; None when the
        episode failed, the shock never happened, the rate never came back, or there
        was no pre-shock rate to recover (shock at round 0, or no progress before it:
        recovery is undefined then, counted as "no baseline", never as 0).
    """
    s = shock_round
    if not success or baseline is None or s >= len(units_by_round):
        return None
    before = pre_shock_rate(units_by_round, s, window)
    if before <= 0:
        return None
    for k in range(1, len(units_by_round) - s):
        if (units_by_round[s + k] - baseline) / k >= before:
            return k
    return None


def recovery_ticks(ticks_by_round: list[int], shock_round: int,
                   rounds: int | None) -> int | None:
    """:func:`recovery_rounds`' point in ticks: the ticks from the shock (the start of
    ``shock_round``) to the end of the round where the rate was back; None when
    ``rounds`` is None. ``ticks_by_round[r]`` is the env ticks before round ``r``
    (rounds last different numbers of ticks under different protocols)."""
    if rounds is None or shock_round + rounds >= len(ticks_by_round):
        return None
    return ticks_by_round[shock_round + rounds] - ticks_by_round[shock_round]


def recovery_summary(summaries: list[EpisodeSummary]) -> dict[str, Any] | None:
    """Recovery over episode summaries' ``shocks``: counts and the recovered ones' rounds
    and ticks.

    A shock with no pre-shock rate (``pre_shock_rate`` 0: it hit at round 0 or before
    any goal progress) is counted in ``no_baseline``: its recovery is undefined. Any
    other ``recovery_rounds`` of None (failed episode, shock never hit, rate never
    back) is counted in ``not_recovered``; neither is averaged (None is not 0). None
    when no episode had a shock.

    Returns:
        ``{"shocks", "applied", "recovered", "not_recovered", "no_baseline",
        "successions", "rounds", "mean_rounds", "ticks", "mean_ticks"}``,
        ``successions`` the seats taken over (the summaries' ``successions``),
        ``rounds`` and ``ticks`` the recovered shocks' values, ``mean_rounds`` and
        ``mean_ticks`` their means (None when none recovered).
    """
    shocks = [s for e in summaries for s in e.shocks or []]
    if not shocks:
        return None
    applied = [s for s in shocks if s.get("applied", True)]
    no_baseline = [s for s in applied if s.get("pre_shock_rate", 1.0) in (0, 0.0)]
    recovered = [s for s in applied if isinstance(s.get("recovery_rounds"), int)
                 and not isinstance(s["recovery_rounds"], bool)]
    rounds = [s["recovery_rounds"] for s in recovered]
    ticks = [s["recovery_ticks"] for s in recovered
             if isinstance(s.get("recovery_ticks"), int)]
    return {"shocks": len(shocks), "applied": len(applied), "recovered": len(rounds),
            "not_recovered": len(applied) - len(rounds) - len(no_baseline),
            "no_baseline": len(no_baseline),
            "successions": sum(len(e.successions or ()) for e in summaries),
            "rounds": rounds,
            "mean_rounds": sum(rounds) / len(rounds) if rounds else None,
            "ticks": ticks,
            "mean_ticks": sum(ticks) / len(ticks) if ticks else None}
