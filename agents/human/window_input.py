"""Ask a person in the env's pygame window: the input for :class:`HumanAgent`.

While ``orgteams run --render human --backend human,...`` runs, each question is
drawn over the map as a :class:`~orgteams.envs.render.renderer.TextEntry` (compact: the
lettered actions, or the latest messages and the message prompt) and the person
types the answer in the window: letters, Backspace, Enter; Escape answers ``wait``
to the act question and silence (an empty line) to the others. The full situation
(what the agent sees and knows) is also printed to the terminal (``echo``).

``ask`` is ``async``: it redraws the window and reads its events every frame on
the event loop (pygame wants its events on the thread that opened the window), so
the window stays responsive and LLM teammates keep thinking meanwhile. Several
human members share one window by taking turns. pygame is only touched through
the env's renderer, so importing this module does not import pygame::

    window = WindowInput(env)            # env renders in human mode
    member = HumanAgent("agent_0", window.ask, window.show)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from orgteams.agents.human.human_agent import ACT_PROMPT
from orgteams.envs.render.renderer import TextEntry, window_renderer

__all__ = ["WindowInput"]


class WindowInput:
    """``show`` / ``ask`` for a :class:`HumanAgent` in the env's human window.

    Args:
        env: a :class:`~orgteams.envs.highlevel.highlevel_env.HighLevelEnv` (or household env)
            with ``render_mode="human"``.
        echo: also shows the full situation text (default :func:`print`); None: no echo.
        fps: frames per second while waiting for the answer.
    """

    def __init__(self, env: Any, echo: Callable[[str], object] | None = print,
                 fps: int = 30) -> None:
        if getattr(env, "render_mode", None) != "human":
            raise ValueError("WindowInput needs an env with render_mode='human', got "
                             f"{getattr(env, 'render_mode', None)!r}")
        self.env, self.echo, self.fps = env, echo, fps
        self.title, self.lines, self.note, self.sees = "", [], "", ""

    def show(self, text: str) -> None:
        """Keep the compact part of a situation (or a one-line note) for the next question."""
        if self.echo is not None:
            self.echo(text)
        if not text.startswith("==="):  # an error or remark between questions
            self.note = text
            return
        rows = text.splitlines()
        self.title, self.note = rows[0].strip("= "), ""
        self.sees = next((r for r in rows if r.startswith("You see: ")), "")
        if "Actions:" in rows:
            self.lines = [r.strip() for r in rows[rows.index("Actions:") + 1:]]
        else:  # communicate: the latest messages and what was said this round
            self.lines = [r.strip() for r in rows[1:]
                          if r.startswith("  ") or r.startswith("This round")]

    async def ask(self, prompt: str) -> str:
        """Wait for a line typed in the window; EOFError when the window was closed."""
        renderer = window_renderer(self.env)
        entry = TextEntry(self.title, prompt, list(self.lines),
                          "wait" if prompt == ACT_PROMPT else "", self.note, sees=self.sees)
        while renderer.entry is not None and not renderer.closed:  # another human's turn
            await asyncio.sleep(1 / self.fps)
        renderer.entry = entry
        renderer.pg.key.start_text_input()
        try:
            while entry.answer is None:
                self.env.render()  # reads the window's events: typing goes to the entry
                if renderer.closed:
                    raise EOFError("the window was closed")
                await asyncio.sleep(1 / self.fps)
        finally:
            renderer.entry = None
        self.note = ""
        return entry.answer
