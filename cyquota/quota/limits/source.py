"""The limit-source hook interface.

A limit source answers what the operator set; it does not decide what a
project may take (that is the enforcement model's job). Sources: the local
embedded store, and Keystone unified limits through oslo.limit.
"""

import abc


class LimitSource(abc.ABC):
    """Raw limits: registered defaults and explicit project limits."""

    #: The source's name in ``[quota] limit_source``.
    name = None

    @abc.abstractmethod
    def get_registered_limits(self, context, resources):
        """``{resource: default_limit}`` for resources that have one."""

    @abc.abstractmethod
    def get_project_limits(self, context, project_id, resources):
        """``{resource: limit}`` set explicitly for ``project_id``."""

    def get_limits(self, context, project_id, resources):
        """Both of the above, as ``(registered, project)``.

        Sources that can answer both in one round trip override this.
        """
        return (self.get_registered_limits(context, resources),
                self.get_project_limits(context, project_id, resources))
