"""A person as a team member: answering the two decisions in a terminal or in the
env's pygame window.
"""
