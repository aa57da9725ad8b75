"""Rule edits a Coordinator may propose: part of the organization's ``rules`` block.

A proposal's ``rules`` (:class:`RulesEdit`) names only the rules it changes; the rest
are kept from the organization it edits (:func:`merged_rules`). A list is the older
form: free-text notes that replace the notes. Proposals are untrusted model output:
the edit is a closed schema (unknown keys, out-of-range budgets and unknown values
are refused), notes are bounded, and the merged rules are validated again with the
organization (:class:`~orgteams.organizations.spec.rules.Rules`, strict).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from orgteams.organizations.spec.rules import (
    MAX_MESSAGES_PER_ROUND,
    MAX_NOTES,
    MAX_TOKENS_PER_ROUND,
    Rules,
)

__all__ = ["BudgetEdit", "ElectionEdit", "RulesEdit", "merged_rules", "slug_of"]


class BudgetEdit(BaseModel):
    """New caps per member per round (None: keep the current cap)."""

    model_config = ConfigDict(extra="forbid")
    messages: int | None = Field(default=None, ge=0, le=MAX_MESSAGES_PER_ROUND)
    tokens: int | None = Field(default=None, ge=0, le=MAX_TOKENS_PER_ROUND)


class ElectionEdit(BaseModel):
    """A new voting rule or re-election time (None: keep)."""

    model_config = ConfigDict(extra="forbid")
    vote: Literal["progress", "round_robin", "lowest_id", "random", "self"] | None = None
    reelect: Literal["every", "once"] | None = None


class RulesEdit(BaseModel):
    """The rules a proposal changes (None: keep the current value)."""

    model_config = ConfigDict(extra="forbid")
    assign_work: Literal["leader", "self", "claim"] | None = Field(
        default=None, description="who assigns work: leader, self or claim")
    report_when: Literal["every_round", "on_completion", "on_new_information", "never"] | None \
        = None
    report_to: Literal["leader", "neighbours", "everyone"] | None = None
    budget: BudgetEdit | None = None
    corrections: bool | None = Field(default=None,
                                     description="members may correct the leader")
    election: ElectionEdit | None = None
    succession: Literal["next", "elect", "none"] | None = Field(
        default=None, description="who takes a removed leader's seat: next, elect or none")
    notes: list[str] | None = Field(default=None, max_length=MAX_NOTES)


def merged_rules(current: Rules, edit: RulesEdit | list[str]) -> dict[str, Any]:
    """``current`` with ``edit`` applied, as JSON data for validation with the organization."""
    data = current.model_dump(mode="json")
    if isinstance(edit, list):
        return {**data, "notes": list(edit)}
    for key, value in edit.model_dump(exclude_none=True).items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    return data


def slug_of(edit: dict[str, Any]) -> str:
    """A short name for an edit, nested keys flattened: ``rules_budget_messages_1``."""
    parts: list[str] = []
    for key, value in edit.items():
        if isinstance(value, dict):
            parts.append(f"{key}_{slug_of(value)}")
        else:
            parts.append(f"{key}_{value}")
    return "_".join(parts).lower()
