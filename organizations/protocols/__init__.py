"""How the communicate phase takes turns: the protocols' facts in one table, and one
round's stages, visibility, routing, claims and votes as pure data.
"""
