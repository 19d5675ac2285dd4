"""The limit-source hook interface.

A limit source answers what the operator set: registered defaults,
explicit project limits and where a project sits in its tree. It does not
decide what a project may take; that is the enforcement model's job.
Sources: the local embedded store, and Keystone unified limits through
oslo.limit. A source reads its backend every time; the shared limit cache,
when configured, is put in front of whichever source is loaded
(``cached_source``).
"""

import abc
import dataclasses

from cyquota.conf import CONF
from cyquota import exception


@dataclasses.dataclass(frozen=True)
class TreeLimits:
    """The raw limits that decide what a project of a tree may take.

    ``registered``, ``own`` and ``parent_own`` map resources to limits and
    hold only what is set. ``grandparent_id`` is set when the parent has a
    parent of its own (a tree deeper than two levels). ``known`` is False
    when the source keeps a project registry of its own and the project
    was not in it when read (a project the embedded store meets first).
    """

    project_id: str
    parent_id: str | None
    grandparent_id: str | None
    registered: dict[str, int]
    own: dict[str, int]
    parent_own: dict[str, int]
    known: bool = True


class LimitSource(abc.ABC):
    """Raw limits and the project hierarchy, read for the models.

    The write methods are the embedded store's API, each judged by the
    ``rules`` it is given (the enforcement model; None: not judged); a
    source whose limits live elsewhere (Keystone) refuses them with
    ``LimitSourceReadOnly``.
    """

    #: The source's name in ``[quota] limit_source``.
    name: str

    #: Whether the write API stores limits (else it refuses them).
    writable = False

    def model_name(self):
        """``flat`` or ``strict-two-level``: the model to enforce."""
        return CONF.quota.enforcement_model

    @property
    def unregistered_limit(self):
        """The limit of a resource with no project or registered limit."""
        return CONF.quota.default_limit

    @abc.abstractmethod
    def get_registered_limits(self, context, resources):
        """``{resource: default_limit}`` for resources that have one."""

    @abc.abstractmethod
    def get_project_limits(self, context, project_id, resources):
        """``{resource: limit}`` set explicitly for ``project_id``."""

    def get_parent(self, context, project_id):
        """The id of ``project_id``'s parent, or None for a root."""
        return None

    def project_names(self, context, project_id):
        """``{"name@domain"}`` of ``project_id`` (none by default)."""
        return set()

    def get_children(self, context, project_id):
        """The ids of ``project_id``'s children."""
        return []

    def get_limits(self, context, project_id, resources):
        """Registered and own limits, as ``(registered, own)``.

        Sources that can answer both in one round trip override this.
        """
        return (self.get_registered_limits(context, resources),
                self.get_project_limits(context, project_id, resources))

    def sql_limits(self):
        """``(own, registered)``: a project's own and the registered limit
        of one resource as SQL scalar subqueries over the bind parameters
        ``_project_id`` and ``_resource`` (NULL where unset), for a source
        whose limits are in cyquota's database; None for any other. A
        statement can then check a limit without reading it first.
        """
        return None

    def sql_parent(self):
        """A project's parent id as a SQL scalar subquery over the bind
        parameter ``_project_id`` (NULL for a root), for a source whose
        projects are in cyquota's database; None for any other."""
        return None

    def get_tree_limits(self, context, project_id, resources,
                        register=False):
        """A ``TreeLimits`` for ``project_id``.

        ``register``: a source that keeps its own project registry records
        an unknown project as a root first, so that the project cannot be
        placed under a parent while it is being charged as a root.
        """
        parent_id = self.get_parent(context, project_id)
        registered, own = self.get_limits(context, project_id, resources)
        grandparent_id = parent_own = None
        if parent_id is not None:
            grandparent_id = self.get_parent(context, parent_id)
            parent_own = self.get_project_limits(context, parent_id,
                                                 resources)
        return TreeLimits(project_id, parent_id, grandparent_id, registered,
                          own, parent_own or {})

    # -- the embedded store's write API ---------------------------------

    def _read_only(self):
        raise exception.LimitSourceReadOnly(source=self.name)

    def set_registered_limit(self, context, resource, default_limit):
        """Set the default limit of ``resource`` for every project."""
        self._read_only()

    def set_project_limit(self, context, project_id, resource,
                          resource_limit, rules=None):
        """Set ``project_id``'s own limit of ``resource``."""
        self._read_only()

    def delete_project_limit(self, context, project_id, resource,
                             rules=None):
        """Remove ``project_id``'s own limit of ``resource``."""
        self._read_only()

    def set_project(self, context, project_id, parent_id=None, name=None,
                    rules=None):
        """Register ``project_id`` (under ``parent_id``) or rename it."""
        self._read_only()

    def list_project_limits(self, context, project_id=None):
        """Explicit limits of every project (the embedded store's alone)."""
        self._read_only()
