"""Experiments: resumable sweeps, paper recipes, reports and statistics, Criticize-
Reflect runs and their held-out evaluation, demonstrations and behaviour labels.
"""
