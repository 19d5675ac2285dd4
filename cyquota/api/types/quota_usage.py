"""Bodies of ``/v1/quota_usages``: one project's usage, and usage rows of
every project."""

from wsme import types as wtypes

from cyquota.api.types import base
from cyquota.api.types import link


class Counts(base.APIBase):
    """The counts of one resource (a limit of -1 is unlimited); each
    subclass places them among its own keys (``_wsme_attr_order``: WSME
    would put a base class's attributes last)."""

    limit = base.Field(int, schema=base.LIMIT)
    used = base.Field(int, schema=base.COUNT)
    reserved = base.Field(int, schema=base.COUNT)
    leased = base.Field(int, schema=base.COUNT)
    promised = base.Field(int, schema=base.COUNT)
    available = base.Field(int, schema=base.LIMIT)


#: The keys of ``Counts``, in their order.
COUNTS = ('limit', 'used', 'reserved', 'leased', 'promised', 'available')


class TreeUsage(Counts):
    """A whole project tree's counts of one resource under
    strict-two-level: its root's limit, every member's usage;
    ``remaining_hours`` only where the root's budget covers the tree
    (microversion 1.8 and later)."""

    _wsme_attr_order = ('root_id',) + COUNTS + ('remaining_hours',)
    root_id = wtypes.text
    remaining_hours = base.Field(
        float, optional=True,
        description="The balance now of the root's budget of the "
                    'resource, which the whole tree spends, in '
                    'accelerator-hours (below zero when running attaches '
                    'overspent it).')


class ResourceUsage(Counts):
    """A project's counts of one resource; a ``limit`` and ``available``
    of -1 mean unlimited. ``leased``: held by active leases, part of
    ``used``; ``promised``: the peak of pending leases from now on, kept
    free (``available = limit - used - reserved - promised``). ``tree``
    only under strict-two-level; ``remaining_hours`` only where a budget
    is set (microversion 1.8 and later)."""

    _wsme_attr_order = COUNTS + ('tree', 'remaining_hours')
    tree = base.Field(TreeUsage, optional=True)
    remaining_hours = base.Field(
        float, optional=True,
        description="The balance now of the project's budget of the "
                    'resource, in accelerator-hours (below zero when '
                    'running attaches overspent it).')


class QuotaUsage(base.APIBase):
    """A project's usage of every counted resource; ``parent_id`` is null
    for a root (or a project the limit source does not place)."""

    project_id = wtypes.text
    parent_id = base.Field(
        wtypes.text, nullable=True,
        description="The project's parent in the limit source (Keystone's "
                    'domain for a top-level project).')
    resources = {wtypes.text: ResourceUsage}


class QuotaUsageResponse(base.APIBase):
    """Answer of ``GET /v1/quota_usages/{project_id}``."""

    quota_usage = QuotaUsage


class UsageRow(Counts):
    """One project's counts of one resource, in a listing."""

    _wsme_attr_order = ('project_id', 'resource') + COUNTS
    project_id = wtypes.text
    resource = wtypes.text


class QuotaUsagesResponse(base.APIBase):
    """Answer of ``GET /v1/quota_usages``: a page of rows, and a ``next``
    link in ``quota_usages_links`` when the page is full."""

    quota_usages = [UsageRow]
    quota_usages_links = base.Field([link.Link], optional=True)
