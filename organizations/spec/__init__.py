"""What an organization is: the spec (YAML, pydantic), its rules and topology,
safe templates, the named library, its resolution for one team, and succession.
"""
