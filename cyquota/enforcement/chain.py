"""The usage-enforcement filter chain.

Filters are loaded by name through stevedore from the entry point group
``cyquota.enforcement.filters``, in the order of ``[enforcement]
enabled_filters``. On create and update they run in that order and the
first denial (``exception.EnforcementDenied``) stops the chain; on end every
filter is told and nothing it does can fail the end. Leases of projects
in ``[enforcement] exempted_projects`` skip every filter.

The chain runs no database transaction: callers run it outside theirs, so
that a slow filter (an external service) never holds a lock.
"""

import copy
import importlib.metadata

from oslo_log import log as logging
from stevedore import named

from cyquota.conf import CONF
from cyquota.enforcement import base
from cyquota.enforcement import payload
from cyquota import exception
from cyquota import metrics

LOG = logging.getLogger(__name__)

NAMESPACE = 'cyquota.enforcement.filters'

# Deprecated filter names already warned about in this process.
_warned_aliases = set()


class UnknownFilter(base.ConfigError):
    """A name in ``[enforcement] enabled_filters`` has no entry point."""

    def __init__(self, name):
        installed = sorted({entry_point.name for entry_point in
                            importlib.metadata.entry_points(group=NAMESPACE)})
        super().__init__(
            'Unknown usage enforcement filter %r in [enforcement] '
            'enabled_filters: no entry point of that name in the %s group '
            '(installed: %s)' % (name, NAMESPACE,
                                 ', '.join(installed) or 'none'))
        self.name = name


def no_project_names(context, project_id):
    """The default project-name lookup: no names, so only project ids in
    ``exempted_projects`` match."""
    return set()


def _load_failed(manager, entry_point, error):
    if isinstance(error, base.ConfigError):
        raise error
    raise base.ConfigError(
        'Usage enforcement filter %s (%s) cannot be loaded: %s'
        % (entry_point.name, entry_point.value, error)) from error


def load_filters(names, conf=None):
    """Instances of the filters registered under ``names``, in that order.

    :raises UnknownFilter: a name without an entry point (the first one).
    :raises base.ConfigError: a plugin cannot be imported, or refuses its
        options.
    """
    conf = CONF if conf is None else conf

    def missing(missing_names):
        raise UnknownFilter(next(name for name in names
                                 if name in missing_names))

    manager = named.NamedExtensionManager(
        NAMESPACE, names, name_order=True, invoke_on_load=True,
        invoke_args=(conf,), on_load_failure_callback=_load_failed,
        on_missing_entrypoints_callback=missing)
    filters = []
    for extension in manager.extensions:
        instance = extension.obj
        if instance.name is None:
            instance.name = extension.name
        elif (instance.name != extension.name
                and extension.name not in _warned_aliases):
            _warned_aliases.add(extension.name)
            LOG.warning('Usage enforcement filter name %s in [enforcement] '
                        'enabled_filters is deprecated: use %s',
                        extension.name, instance.name)
        filters.append(instance)
    return filters


class FilterChain:
    """Filters run in order on a lease's create, update and end.

    :param filters: filter instances (:class:`base.BaseFilter`), in order.
    :param exempted_projects: project ids, and names as ``name@domain``,
        exempt from every filter.
    :param project_names: ``project_names(context, project_id)`` -> the
        ``name@domain`` strings of a project; called only when some
        exempted entry is a name.
    :param conf: the configuration the payload context is built from.
    """

    def __init__(self, filters, exempted_projects=(), project_names=None,
                 conf=None):
        self.filters = list(filters)
        self.conf = CONF if conf is None else conf
        self._exempt_names = {entry for entry in exempted_projects
                              if '@' in entry}
        self._exempt_ids = set(exempted_projects) - self._exempt_names
        self._project_names = project_names or no_project_names

    @property
    def names(self):
        """The filters' names, in order."""
        return [enforcement_filter.name for enforcement_filter
                in self.filters]

    def check_create(self, context, lease, lease_id=None, project_id=None):
        """Run ``check_create`` of each filter on a new lease.

        :param context: the request context of the caller (an
            ``oslo_context`` RequestContext): its user is ``user_id``.
        :param lease: the lease document (``payload.lease_payload``).
        :param lease_id: the lease's id: the document's ``id`` and the
            log lines'.
        :param project_id: the lease's project: ``context.project_id`` of
            the documents and what ``exempted_projects`` is judged on (the
            caller's project when None, a lease of its own).
        :raises exception.EnforcementDenied: the first filter's denial.
        """
        self._check('check_create', context, lease_id, project_id, lease)

    def check_update(self, context, current_lease, lease, lease_id=None,
                     project_id=None):
        """Run ``check_update`` of each filter on a change of
        ``current_lease`` into ``lease`` (both lease documents) requested by
        the user of ``context``; ``lease_id`` and ``project_id`` as in
        :meth:`check_create`.

        :raises exception.EnforcementDenied: the first filter's denial.
        """
        self._check('check_update', context, lease_id, project_id,
                    current_lease, lease)

    def on_end(self, context, lease, lease_id=None, project_id=None):
        """Tell every filter that ``lease`` has ended (``context``: the
        user who ended it, or at a scheduled end the lease's creator;
        ``lease_id`` and ``project_id`` as in :meth:`check_create`). Never
        raises: a filter's error is logged and the next filter is told all
        the same.
        """
        try:
            project_id = self._project_of(context, project_id)
            if not self.filters or self._is_exempt(context, project_id):
                return
            context_document = payload.context_payload(context, self.conf,
                                                       project_id)
            lease = payload.with_lease_id(lease, lease_id)
        except Exception:
            LOG.exception('Lease %s: usage enforcement filters cannot be '
                          'told of its end', lease_id)
            return
        with base.checking_lease(lease_id):
            for enforcement_filter in self.filters:
                try:
                    with metrics.filter_call(enforcement_filter.name,
                                             'on_end'):
                        enforcement_filter.on_end(
                            *copy.deepcopy((context_document, lease)))
                except Exception:
                    LOG.exception('Lease %s: usage enforcement filter %s '
                                  'failed in on_end (the lease has ended '
                                  'all the same)', lease_id,
                                  enforcement_filter.name)

    def _check(self, call, context, lease_id, project_id, *leases):
        project_id = self._project_of(context, project_id)
        if not self.filters or self._is_exempt(context, project_id):
            return
        context_document = payload.context_payload(context, self.conf,
                                                   project_id)
        leases = tuple(payload.with_lease_id(lease, lease_id)
                       for lease in leases)
        with base.checking_lease(lease_id):
            for enforcement_filter in self.filters:
                self._run(enforcement_filter, call, lease_id,
                          context_document, leases)

    @staticmethod
    def _project_of(context, project_id):
        return context.project_id if project_id is None else project_id

    @staticmethod
    def _run(enforcement_filter, call, lease_id, context_document, leases):
        # Each filter gets its own copies: one cannot change what the next
        # one sees.
        arguments = copy.deepcopy((context_document,) + leases)
        try:
            with metrics.filter_call(enforcement_filter.name, call):
                getattr(enforcement_filter, call)(*arguments)
        except exception.EnforcementDenied as denied:
            LOG.info('Lease %s: usage enforcement filter %s refused %s: %s',
                     lease_id, enforcement_filter.name, call, denied.message)
            raise
        except Exception:
            # Fail closed: a filter that cannot decide does not allow.
            LOG.exception('Lease %s: usage enforcement filter %s failed in '
                          '%s; the request is refused', lease_id,
                          enforcement_filter.name, call)
            raise exception.EnforcementDenied(
                filter=enforcement_filter.name,
                reason='The usage enforcement filter %s failed; the request '
                       'is refused.' % enforcement_filter.name) from None

    def _is_exempt(self, context, project_id):
        # The lease's project, never the caller's: an admin of an exempted
        # project acting for another one is not exempt.
        if project_id in self._exempt_ids:
            return True
        if not self._exempt_names or project_id is None:
            return False
        try:
            names = self._project_names(context, project_id)
        except Exception:
            LOG.exception('Cannot resolve the name of project %s; it is not '
                          'exempted from usage enforcement', project_id)
            return False
        return not self._exempt_names.isdisjoint(names)


def load_chain(conf=None, project_names=None):
    """The chain ``[enforcement] enabled_filters`` names, filters loaded.

    :param project_names: see :class:`FilterChain`.
    :raises UnknownFilter: a name without an entry point.
    :raises base.ConfigError: a filter refuses its options.
    """
    conf = CONF if conf is None else conf
    filters = load_filters(conf.enforcement.enabled_filters, conf)
    return FilterChain(filters, conf.enforcement.exempted_projects,
                       project_names, conf)


def check_config(conf=None):
    """Load the configured chain once, so that a service refuses to start
    on a configuration it cannot enforce.

    :raises base.ConfigError: with a one-line message naming the fault.
    """
    chain = load_chain(conf)
    LOG.info('Usage enforcement filters: %s',
             ', '.join(chain.names) or 'none')
