"""Scripted window events for headless tests: real pygame events, posted at chosen reads."""

from __future__ import annotations

import pygame

from orgteams.envs.render.renderer import PygameRenderer


def key(k):
    return pygame.event.Event(pygame.KEYDOWN, key=k, mod=0, unicode="")


class Script:
    """Posts ``plan[k]`` events at the k-th event read; notes frames drawn at each read.

    ``when_holding`` events are posted once the renderer has held the last frame for
    ``hold_reads`` reads (the end banner is up); ``then`` at the next hold, if any.
    ``when_asked`` events are posted, one per read, while a question box is up."""

    def __init__(self, monkeypatch, plan=None, when_holding=(), hold_reads=5,
                 when_asked=(), then=()):
        self.plan, self.hold_reads = dict(plan or {}), hold_reads
        self.holds = [list(when_holding), list(then)]
        self.when_asked = list(when_asked)
        self.reads = 0
        self.held = 0  # reads in the current hold
        self.frames: list[int] = []  # renderer.frames at each read
        self.banners: list[list[str]] = []
        self.window_sizes: list[tuple[int, int]] = []
        self.renderer = None
        original = PygameRenderer.pump

        def pump(renderer):
            self.renderer = renderer
            self.reads += 1
            self.frames.append(renderer.frames)
            for event in self.plan.pop(self.reads, []):
                pygame.event.post(event)
            if renderer.banner:
                self.banners.append(list(renderer.banner))
                surface = pygame.display.get_surface()
                self.window_sizes.append(surface.get_size() if surface else (0, 0))
                self.held += 1
                if self.held == self.hold_reads:
                    for event in (self.holds.pop(0) if self.holds else []):
                        pygame.event.post(event)
            else:
                self.held = 0
            if renderer.entry is not None and self.when_asked:
                pygame.event.post(self.when_asked.pop(0))
            original(renderer)

        monkeypatch.setattr(PygameRenderer, "pump", pump)
