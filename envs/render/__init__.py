"""Pictures of the house: the pygame renderer and window, the world, side panel,
bubbles, boxes and style, the team overlay, ANSI text and video recording.
"""
