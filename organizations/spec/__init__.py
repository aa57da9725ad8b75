"""What an organization is: the spec (YAML, pydantic), its rules and topology,
the named library, its resolution for one team, and succession.

>>> from orgteams.organizations.spec import load_organization
"""

from orgteams.organizations.spec.library import (
    list_organizations,
    load_organization,
    organization_path,
)
from orgteams.organizations.spec.organization import SELF_CHOSEN, Organization
from orgteams.organizations.spec.resolved import ResolvedOrganization
from orgteams.organizations.spec.rules import Rules
from orgteams.organizations.spec.topology import Topology

__all__ = ["SELF_CHOSEN", "Organization", "ResolvedOrganization", "Rules", "Topology",
           "list_organizations", "load_organization", "organization_path"]
