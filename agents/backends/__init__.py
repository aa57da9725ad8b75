"""Chat-model backends: one interface, several implementations (DESIGN.md, "LLM backends")."""

from orgteams.agents.backends.base import (
    BackendConfigError,
    BackendError,
    ChatBackend,
    Completion,
    Message,
    Usage,
    parse_json_reply,
)
from orgteams.agents.backends.openai_backend import OpenAIBackend

__all__ = [
    "BackendConfigError",
    "BackendError",
    "ChatBackend",
    "Completion",
    "Message",
    "OpenAIBackend",
    "Usage",
    "parse_json_reply",
]
