"""``within_budget``: the per-round message budget every member without a model keeps."""

from __future__ import annotations

import random

from orgteams.agents.member_rules import MemberRules, within_budget


def _plain(items, rules, tokens, spent=(0, 0)):
    """The budget as it was first written: every item counted."""
    kept, dropped = [], []
    sent, used = spent
    for item in items:
        n = tokens(item)
        if (rules.max_messages is not None and sent + len(kept) >= rules.max_messages) or (
                rules.max_tokens is not None and used + n > rules.max_tokens):
            dropped.append(item)
        else:
            kept.append(item)
            used += n
    return kept, dropped


def test_the_budget_splits_as_counting_every_item_does_and_counts_only_under_a_token_budget():
    rng = random.Random(0)
    for _ in range(500):
        items = [f"m{i} " * rng.randint(1, 9) for i in range(rng.randint(0, 8))]
        rules = MemberRules(max_messages=rng.choice([None, 0, 1, 3, 6]),
                            max_tokens=rng.choice([None, 0, 5, 20, 60]))
        spent = (rng.randint(0, 3), rng.randint(0, 30))
        asked = []

        def tokens(text, asked=asked):
            asked.append(text)
            return len(text.split())

        assert within_budget(items, rules, tokens, spent) == _plain(
            items, rules, lambda t: len(t.split()), spent)
        # a count can change what is kept only under a token budget: asked then only
        assert asked == (items if rules.max_tokens is not None else [])


def test_without_a_budget_everything_is_kept_in_order_in_a_new_list():
    items = ("claim", "status", "found")
    kept, dropped = within_budget(items, MemberRules(), lambda m: 1 / 0)
    assert kept == ["claim", "status", "found"] and dropped == []
