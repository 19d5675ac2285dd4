"""The books as gauges: used, reserved, limit and promised per project and
resource, read through the QuotaEngine at each scrape of ``GET /metrics``
(``metrics_page``).

A scrape reads every usage row, a page at a time, then exports the
``[metrics] usage_projects`` projects that hold the most one by one and
sums the others (a summed limit is -1 when any of them is unlimited), so a
scrape's series stay bounded. The sums are series of another label set,
``{projects="others", resource}`` without ``project_id``: a project id can
be any string, so no ``project_id`` value could be kept for them.
"""

from prometheus_client import core
from prometheus_client import samples

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota import quota

#: The label that marks the series of the summed projects, and its value.
OTHERS = ('projects', 'others')
_PAGE = 1000
_FIELDS = ('used', 'reserved', 'limit', 'promised')
_HELP = {
    'used': 'Accelerators in use, per project and resource.',
    'reserved': 'Accelerators reserved and not yet committed, per project '
                'and resource.',
    'limit': 'The limit in force (-1: unlimited), per project and '
             'resource.',
    'promised': 'Accelerators promised to pending leases (the peak), per '
                'project and resource.',
}


def _rows(context):
    marker = None
    while True:
        page = quota.QUOTAS.list_usages(context, limit=_PAGE, marker=marker)
        yield from page
        if len(page) < _PAGE:
            return
        marker = (page[-1]['project_id'], page[-1]['resource'])


def _summed(rows):
    total = {}
    for row in rows:
        into = total.setdefault(row['resource'], dict.fromkeys(_FIELDS, 0))
        for field in ('used', 'reserved', 'promised'):
            into[field] += row[field]
        if into['limit'] >= 0:
            into['limit'] = -1 if row['limit'] < 0 else (
                into['limit'] + row['limit'])
    return total


def books(context, cap):
    """``(shown, others)``: ``shown`` is ``{(project_id, resource): {used,
    reserved, limit, promised}}`` of the ``cap`` projects holding the most,
    ``others`` is ``{resource: {...}}`` summed over the rest."""
    by_project = {}
    for row in _rows(context):
        by_project.setdefault(row['project_id'], []).append(row)

    def held(project_id):
        return sum(row['used'] + row['reserved'] + row['promised']
                   for row in by_project[project_id])
    ranked = sorted(by_project, key=lambda p: (-held(p), p))
    shown = {(project_id, row['resource']): {
        field: row[field] for field in _FIELDS}
        for project_id in ranked[:cap] for row in by_project[project_id]}
    rest = [row for project_id in ranked[cap:]
            for row in by_project[project_id]]
    return shown, _summed(rest)


class UsageCollector:
    """A prometheus_client collector of the ``cyquota_quota_*`` gauges."""

    def describe(self):
        # Nothing to read at registration: the rows come at scrape time.
        return []

    def collect(self):
        families = {field: core.GaugeMetricFamily(
            'cyquota_quota_%s' % field, _HELP[field],
            labels=['project_id', 'resource']) for field in _FIELDS}
        shown, others = books(cyquota_context.get_admin_context(),
                              CONF.metrics.usage_projects)
        for (project_id, resource), row in sorted(shown.items()):
            for field in _FIELDS:
                families[field].add_metric([project_id, resource],
                                           row[field])
        label, value = OTHERS
        for resource, row in sorted(others.items()):
            for field, family in families.items():
                family.samples.append(samples.Sample(
                    family.name, {label: value, 'resource': resource},
                    row[field]))
        return list(families.values())
