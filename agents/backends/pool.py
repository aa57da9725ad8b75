"""The pool of chat backends an episode, sweep worker, reflect run or play session owns.

:class:`BackendPool` makes each backend once per (member spec, cache) and owns what they
share (the embedded model server, the message tokenizer) until it is closed. Member
specs (``planner``, ``human``, ``local``, ``openai:<model>``, ``policy:<model.zip>``...)
are parsed here
(:func:`parse_member_spec`); the pool makes the backends of the LLM kinds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orgteams.agents.backends.redact import scrub_text
from orgteams.envs.core.limits import MAX_AGENTS, check_int
from orgteams.errors import UserError, unknown_name

__all__ = ["LLM_MEMBER_KINDS", "MEMBER_KINDS", "BackendPool", "backend_options",
           "parse_member_spec"]

MEMBER_KINDS = ("planner", "random", "human", "local", "scripted", "openai", "policy")
LLM_MEMBER_KINDS = ("local", "scripted", "openai")


_TAKES_MODEL = ("openai", "scripted", "policy")  # policy: the path of its model file


def parse_member_spec(spec: str) -> tuple[str, str | None]:
    """Split a member spec: ``"openai:gpt-4o-mini"`` -> ``("openai", "gpt-4o-mini")``.

    Raises:
        UserError: An unknown kind, a model name on a kind that takes none
            (``local:foo``: the embedded model is always SmolLM2), or a spec holding
            what looks like a secret (an API key pasted as the model name; the error
            shows it masked).
    """
    shown = scrub_text(spec.strip())
    if shown != spec.strip():
        # a key pasted where the model goes (openai:sk-...) would be written into every
        # log line's "model", the summary and a sweep's backend column, and echoed here
        raise UserError(f"member spec {shown!r}: it holds what looks like a secret (an API "
                        "key?); a key goes in $ORGTEAMS_API_KEY or $OPENAI_API_KEY, never in "
                        "the member spec")
    kind, sep, model = spec.strip().partition(":")
    if kind not in MEMBER_KINDS:
        raise unknown_name("member kind", kind, MEMBER_KINDS)
    if sep and kind not in _TAKES_MODEL:
        hint = (" (the embedded model is SmolLM2; another model is openai:<model> on any "
                "OpenAI-compatible server)" if kind == "local" else "")
        raise UserError(f"member spec {spec!r}: {kind} takes no model name{hint}")
    if sep and not model.strip():
        raise UserError(f"member spec {spec!r}: the model name after ':' is empty")
    if kind == "policy" and not sep:
        raise UserError(f"member spec {spec!r}: a policy member needs its model file: "
                        "policy:<path/to/model.zip>")
    return kind, (model.strip() or None) if sep else None


def backend_options(spec: str, cache: str | Path | None = None) -> dict[str, Any]:
    """``make_backend`` options for a spec (``local``, ``scripted``, ``openai:<model>``)."""
    kind, model = parse_member_spec(spec)
    return {"backend": kind, **({"model": model} if model else {}),
            **({"cache": str(cache)} if cache else {})}


class BackendPool:
    """Chat backends by (spec, cache), shared by the members built from it, and closed
    by whoever made the pool: an episode (:func:`~orgteams.run.run_episode` makes one
    unless given one), a sweep worker, a Criticize-Reflect run, a play session.

    The pool owns what its backends share: one embedded model server
    (:class:`~orgteams.agents.backends.local.LocalServer`, started when the first
    ``local`` backend is made) and one message tokenizer
    (:class:`~orgteams.agents.llm.tokens.Tokenizer`: its count cache). Closing stops the
    server, closes response caches and drops the tokenizer's counts.

    The server decodes the requests of agents that speak at once together, in parallel
    slots (``benchmarks/llm/local_slots.py``): by default one slot per ``local`` member of
    the largest team built with the pool (:func:`~orgteams.run.build_team` announces them through
    :meth:`expect_local_members` before the server starts), capped by
    :func:`~orgteams.agents.backends.local.default_slots`; ``ORGTEAMS_LOCAL_SLOTS`` or
    ``local_slots`` set it. A server already running keeps its slots (more members
    than slots wait their turn).

    With a :class:`~orgteams.agents.backends.spend.Spend` (``spend``), every backend the
    pool makes is metered: each reply is priced and charged to it (the run's budget).

    Args:
        local_slots: Parallel slots of the embedded server; None: as above.
        spend: What the pool's model calls are charged to; None: not metered.

    >>> from orgteams.run import build_member
    >>> with BackendPool() as pool:
    ...     member = build_member("agent_0", "scripted", pool=pool)
    """

    def __init__(self, local_slots: int | None = None, spend: Any = None) -> None:
        from orgteams.agents.llm.tokens import Tokenizer

        if local_slots is not None:
            check_int(local_slots, "local_slots", 1, MAX_AGENTS)
        self.local_slots = local_slots
        self._local_members = 0
        self._backends: dict[tuple[str, str | None], Any] = {}
        self._server: Any = None
        self.spend = spend
        """The :class:`~orgteams.agents.backends.spend.Spend` the calls are charged to, or
        None."""
        self.tokenizer = Tokenizer()
        """The episode's message tokenizer: the scripted backends' usage counts and, in
        :func:`~orgteams.run.run_episode`, every message token of the round loop and its metrics."""

    def get(self, spec: str, cache: str | Path | None = None):
        """The backend for ``spec`` (``local``, ``scripted``, ``openai:<model>``), made once."""
        key = (spec, str(cache) if cache else None)
        if key not in self._backends:
            from orgteams.agents.backends import make_backend

            options = backend_options(spec, cache)
            if options["backend"] == "local":
                options["server"] = self._local_server()
            elif options["backend"] == "scripted":
                options["tokenizer"] = self.tokenizer
            backend = make_backend(options)
            if self.spend is not None:
                from orgteams.agents.backends.spend import MeteredBackend

                backend = MeteredBackend(backend, self.spend, options["backend"])
            self._backends[key] = backend
        return self._backends[key]

    def expect_local_members(self, count: int) -> None:
        """Size the embedded server for ``count`` ``local`` members deciding at once (it
        takes effect when the server starts)."""
        self._local_members = max(self._local_members, count)

    def _local_server(self) -> Any:
        if self._server is None or not self._server.alive:
            from orgteams.agents.backends.local import LocalServer, default_slots

            slots = self.local_slots or default_slots(self._local_members)
            self._server = LocalServer(n_parallel=slots)
        return self._server

    @property
    def local_server(self) -> Any:
        """The pool's embedded model server, or None before a ``local`` backend was made."""
        return self._server

    def __len__(self) -> int:
        return len(self._backends)

    def close(self) -> None:
        """Close every backend made so far, the server and the tokenizer; the pool can
        be used again afterwards."""
        backends, self._backends = list(self._backends.values()), {}
        server, self._server = self._server, None
        try:
            for backend in backends:
                backend.close()
        finally:
            if server is not None:
                server.close()
            self.tokenizer.close()

    def __enter__(self) -> BackendPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
