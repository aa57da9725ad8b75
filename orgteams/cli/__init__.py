"""The orgteams command line: the parser, what each subcommand does, option helpers
and the one progress bar (the ``orgteams`` entry point is ``orgteams.cli.main:main``).
"""
