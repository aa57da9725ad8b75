"""The LLM team member: prompts, the structured-call loop, reply schemas and
validation, quoting of model text, and the one message-token counter.

>>> from orgteams.agents.llm import LLMAgent
"""

from orgteams.agents.llm.llm_agent import LLMAgent
from orgteams.agents.llm.prompts import PromptError, PromptTemplates, default_templates
from orgteams.agents.llm.schemas import ReplyError, ReplySpec, act_spec, communicate_spec
from orgteams.agents.llm.structured import astructured_call, structured_call
from orgteams.agents.llm.tokens import Tokenizer, count_tokens

__all__ = ["LLMAgent", "PromptError", "PromptTemplates", "ReplyError", "ReplySpec",
           "Tokenizer", "act_spec", "astructured_call", "communicate_spec", "count_tokens",
           "default_templates", "structured_call"]
