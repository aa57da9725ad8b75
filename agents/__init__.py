"""Team members and their chat-model backends: the member protocol, team, messages and
view (here), LLM members (``llm/``), planners (``planner/``), people (``human/``), backends.

Importing this package is light: it does not import ``openai``, ``xllamacpp``,
``jinja2`` or ``pygame`` (each is imported when first used).

>>> from orgteams.agents import LLMAgent, ScriptedBackend
>>> agent = LLMAgent("agent_0", ScriptedBackend())
"""

from orgteams.agents.backends import (
    BackendConfigError,
    BackendError,
    BackendPool,
    ChatBackend,
    Completion,
    ScriptedBackend,
    Usage,
    make_backend,
)
from orgteams.agents.human.human_agent import HumanAgent
from orgteams.agents.llm.llm_agent import LLMAgent, safe_action
from orgteams.agents.llm.prompts import PromptError, PromptTemplates, default_templates, letters
from orgteams.agents.llm.schemas import ReplyError, ReplySpec, act_spec, communicate_spec
from orgteams.agents.llm.structured import astructured_call, structured_call
from orgteams.agents.member import (
    ActContext,
    ActDecision,
    CommunicateContext,
    CommunicateDecision,
    DecisionRecord,
    DialogueLog,
    TeamMember,
    TeamMessage,
)
from orgteams.agents.planner.planner import PlannerAgent
from orgteams.agents.records import ActionLine, MessageLine, StepRecord
from orgteams.agents.team import Team
from orgteams.agents.view import MemberView

__all__ = [
    "ActContext",
    "ActDecision",
    "ActionLine",
    "BackendConfigError",
    "BackendError",
    "BackendPool",
    "ChatBackend",
    "CommunicateContext",
    "CommunicateDecision",
    "Completion",
    "DecisionRecord",
    "DialogueLog",
    "HumanAgent",
    "LLMAgent",
    "MemberView",
    "MessageLine",
    "PlannerAgent",
    "PromptError",
    "PromptTemplates",
    "ReplyError",
    "ReplySpec",
    "ScriptedBackend",
    "StepRecord",
    "Team",
    "TeamMember",
    "TeamMessage",
    "Usage",
    "act_spec",
    "astructured_call",
    "communicate_spec",
    "default_templates",
    "letters",
    "make_backend",
    "safe_action",
    "structured_call",
]
