"""What an episode measured: headline formulas over the log's records, and the
structure of the realised communication graph.
"""
