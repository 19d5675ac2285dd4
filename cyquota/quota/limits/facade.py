"""``Limits``: the limits as the API and the commands see them.

Reads go to the limit source; writes go to the source judged by the
enforcement model, so a face never needs to know which source or model is
configured (``writable`` tells whether the source stores limits at all).
"""


class Limits:
    """The configured limit source and enforcement model, together.

    :param source: a ``source.LimitSource``.
    :param model: the enforcement model (see ``model``).
    """

    def __init__(self, source, model):
        self.source = source
        self.model = model

    @property
    def writable(self):
        """Whether limits and projects can be written here (the embedded
        store), rather than where the source reads them (Keystone)."""
        return self.source.writable

    # -- reads -------------------------------------------------------------

    def get_registered_limits(self, context, resources):
        """``{resource: default_limit}`` for resources that have one."""
        return self.source.get_registered_limits(context, resources)

    def get_project_limits(self, context, project_id, resources):
        """``{resource: limit}`` set explicitly for ``project_id``."""
        return self.source.get_project_limits(context, project_id, resources)

    def get_parent(self, context, project_id):
        """The id of ``project_id``'s parent, or None for a root."""
        return self.source.get_parent(context, project_id)

    def project_names(self, context, project_id):
        """``{"name@domain"}`` the project is known by (empty when the
        source knows no name)."""
        return self.source.project_names(context, project_id)

    def get_children(self, context, project_id):
        """The ids of ``project_id``'s children."""
        return self.source.get_children(context, project_id)

    def list_project_limits(self, context, project_id=None):
        """Explicit project limits as ``{project_id, resource,
        resource_limit}`` (every project's: the embedded store only)."""
        return self.source.list_project_limits(context, project_id)

    # -- writes, judged by the model ---------------------------------------

    def set_registered_limit(self, context, resource, default_limit):
        """Set the default limit of ``resource`` for every project."""
        self.source.set_registered_limit(context, resource, default_limit)

    def set_project_limit(self, context, project_id, resource,
                          resource_limit):
        """Set ``project_id``'s own limit of ``resource``."""
        self.source.set_project_limit(context, project_id, resource,
                                      resource_limit, rules=self.model)

    def delete_project_limit(self, context, project_id, resource):
        """Remove ``project_id``'s own limit of ``resource``."""
        self.source.delete_project_limit(context, project_id, resource,
                                         rules=self.model)

    def set_project(self, context, project_id, parent_id=None, name=None):
        """Register ``project_id`` under ``parent_id`` (None: a root), or
        rename it; returns ``{id, parent_id, name}``."""
        return self.source.set_project(context, project_id,
                                       parent_id=parent_id, name=name,
                                       rules=self.model)
