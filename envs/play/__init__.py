"""A person at the keyboard: playing one agent of the household while a policy
drives the others, and the player's message box.
"""

from orgteams.lazy import lazy_exports

__all__ = ["ChatLine", "PlaySession", "Teammates", "parse_chat", "play"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "ChatLine": "orgteams.envs.play.chat",
    "PlaySession": "orgteams.envs.play.keyboard",
    "Teammates": "orgteams.envs.play.keyboard",
    "parse_chat": "orgteams.envs.play.chat",
    "play": "orgteams.envs.play.keyboard",
})
