"""The LLM team member: prompts, the structured-call loop, reply schemas and
validation, quoting of model text, and the one message-token counter.
"""
