"""Bodies of ``/v1/quota_usages``: one project's usage, and usage rows of
every project."""

from wsme import types as wtypes

from cyquota.api.types import base
from cyquota.api.types import link


class TreeUsage(base.APIBase):
    """A whole project tree's counts of one resource under
    strict-two-level: its root's limit, every member's usage."""

    root_id = wtypes.text
    limit = int
    used = int
    reserved = int
    leased = int
    promised = int
    available = int


class ResourceUsage(base.APIBase):
    """A project's counts of one resource; a ``limit`` and ``available``
    of -1 mean unlimited. ``leased``: held by active leases, part of
    ``used``; ``promised``: the peak of pending leases from now on, kept
    free (``available = limit - used - reserved - promised``). ``tree``
    only under strict-two-level."""

    limit = int
    used = int
    reserved = int
    leased = int
    promised = int
    available = int
    tree = TreeUsage


class QuotaUsage(base.APIBase):
    """A project's usage of every counted resource; ``parent_id`` is null
    for a root (or a project the limit source does not place)."""

    project_id = wtypes.text
    parent_id = wtypes.text
    resources = {wtypes.text: ResourceUsage}


class QuotaUsageResponse(base.APIBase):
    """Answer of ``GET /v1/quota_usages/{project_id}``."""

    quota_usage = QuotaUsage


class UsageRow(base.APIBase):
    """One project's counts of one resource, in a listing."""

    project_id = wtypes.text
    resource = wtypes.text
    limit = int
    used = int
    reserved = int
    leased = int
    promised = int
    available = int


class QuotaUsagesResponse(base.APIBase):
    """Answer of ``GET /v1/quota_usages``: a page of rows, and a ``next``
    link in ``quota_usages_links`` when the page is full."""

    quota_usages = [UsageRow]
    quota_usages_links = [link.Link]
