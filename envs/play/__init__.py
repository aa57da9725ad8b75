"""A person at the keyboard: playing one agent of the household while a policy
drives the others, and the player's message box.
"""
