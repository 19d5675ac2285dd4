"""The cost of cyquota's bind filter on one bind ``PATCH`` of Cyborg's
API, for the ``openstack`` benchmark.

The same bind is sent, taking turns, through the bed's cyborg-api (with
the filter) and a second cyborg-api without it (same database, same
conductor): ARQs created for a device profile, bound with the JSON patch
Nova's ``nova/accelerator/cyborg.py`` sends (``hostname``,
``device_rp_uuid``, ``instance_uuid``, ``op: add``), then unbound and
deleted with ``DELETE ?arqs=``. Only the ``PATCH`` and the ``DELETE`` are
timed, each from the client.

Where the filter's time goes: per ARQ it reads the ARQ from Cyborg before
and after the bind and the device profile once, and posts a reservation
and its commit to cyquota. The calls to cyquota are timed by cyquota's
request log (inside cyquota, after its authtoken); the reads of Cyborg
are timed here, against the API without the filter.
"""

import re
import statistics
import time

from keystoneauth1 import service_token
from keystoneauth1 import session as ks_session

from servers import api_server
from servers.openstack_bed import processes

#: cyquota's request log line of a call the filter makes.
_QUOTA_CALL = re.compile(
    r'POST (/v1/reservations(?:/commit)?) (\d{3}) \S+ ([0-9.]+)s')
#: nova-api's request log line of the event Cyborg sends at each bind.
_NOVA_EVENT = re.compile(
    r'"POST /v2.1/os-server-external-events" status: \d+ .* time: ([0-9.]+)')
#: The process of the cyborg-api without the filter.
PLAIN_API = 'cyborg-api-plain'


def percentile(values, fraction):
    """The ``fraction`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class BindTimer:
    """Binds of one ARQ of ``device_profile`` to ``instance`` on
    ``host`` (its device provider ``device_rp``) through the cyborg-api
    of ``url``, as Nova sends them: the user's token (the admin's) with
    Nova's service token (Cyborg binds only with one)."""

    def __init__(self, bed, device_profile, instance, host, device_rp):
        self.session = ks_session.Session(
            auth=service_token.ServiceTokenAuthWrapper(
                bed.admin.auth, bed.service('nova').auth))
        self.device_profile = device_profile
        self.instance = instance
        self.host = host
        self.device_rp = device_rp

    def _request(self, url, method, path, body=None):
        started = time.perf_counter()
        response = self.session.request(url + path, method, json=body,
                                        raise_exc=False)
        elapsed = time.perf_counter() - started
        assert response.status_code < 300, (method, path, url,
                                            response.status_code,
                                            response.text)
        return response, elapsed

    def once(self, url):
        """Create, bind, wait Bound, unbind and delete one ARQ through
        ``url``; returns ``(PATCH seconds, DELETE seconds, ARQ state
        right after the PATCH)``."""
        arq = self._request(url, 'POST', '/accelerator_requests', {
            'device_profile_name': self.device_profile})[0].json()['arqs'][0]
        binding = {'hostname': self.host, 'device_rp_uuid': self.device_rp,
                   'instance_uuid': self.instance}
        # As Nova's bind_arqs: one RFC 6902 patch per ARQ uuid.
        patch = {arq['uuid']: [{'path': '/' + field, 'op': 'add',
                                'value': value}
                               for field, value in binding.items()]}
        bind = self._request(url, 'PATCH', '/accelerator_requests',
                             patch)[1]
        state = self._state(url, arq['uuid'])
        processes.wait_for('ARQ %s bound' % arq['uuid'],
                           lambda: self._state(url, arq['uuid']) in (
                               'Bound', 'BindFailed'), 60, interval=0.05)
        delete = self._request(url, 'DELETE', '/accelerator_requests?arqs='
                               + arq['uuid'])[1]
        return bind, delete, state

    def _state(self, url, arq_uuid):
        return self._request(url, 'GET', '/accelerator_requests/'
                             + arq_uuid)[0].json()['state']

    def reads(self, url, rounds):
        """Median seconds of the two reads the filter makes of Cyborg:
        ``(GET an ARQ, GET a device profile by name)``."""
        arq = self._request(url, 'POST', '/accelerator_requests', {
            'device_profile_name': self.device_profile})[0].json()['arqs'][0]
        try:
            return tuple(statistics.median(
                self._request(url, 'GET', path)[1] for _ in range(rounds))
                for path in ('/accelerator_requests/' + arq['uuid'],
                             '/device_profiles?name=' + self.device_profile))
        finally:
            self._request(url, 'DELETE', '/accelerator_requests?arqs='
                          + arq['uuid'])


def quota_calls(log_text):
    """``{path: [seconds]}`` of the filter's calls in cyquota's log."""
    calls = {}
    for path, status, seconds in _QUOTA_CALL.findall(log_text):
        calls.setdefault(path, []).append(float(seconds))
    return calls


def measure(bed, device_profile, rounds, progress):
    """``(rows, rss)``: the rows of the bind ``PATCH`` with and without
    the filter and of where the filter's time goes; ``{process: bytes}``
    of the bed's processes with both cyborg-apis warm."""
    host = bed.hosts[0]
    device_rp = bed.device_provider(host)['uuid']
    # Cyborg tells Nova of each bind (an external event) and fails the
    # bind when Nova does not know the instance; a server that no host
    # can take stays in cell0 without a host, as one being built is when
    # Nova binds its ARQs, and Nova answers such an event 422, which
    # Cyborg expects.
    instance = bed.boot(flavor=bed.flavor(vcpus=100000))
    assert instance['status'] == 'ERROR', instance
    timer = BindTimer(bed, device_profile, instance['id'], host, device_rp)
    plain = bed.cyborg.start_api(PLAIN_API, api_server.free_port(),
                                 cyquota_filter=False)
    try:
        bed.cyborg.wait_for_api(PLAIN_API, plain)
        apis = {'filter': bed.cyborg.url, 'plain': plain}
        progress.step('openstack: bind PATCH: warming both cyborg-apis')
        for _ in range(3):
            for url in apis.values():
                timer.once(url)
        logs = {name: len(bed.log(name))
                for name in ('cyquota-api', 'nova-api')}
        times = {kind: {'bind': [], 'delete': [], 'states': []}
                 for kind in apis}
        for number in range(rounds):
            if number % 10 == 0:
                progress.step('openstack: bind PATCH: round %d of %d'
                              % (number + 1, rounds))
            order = list(apis.items())[::1 - 2 * (number % 2)]
            for kind, url in order:
                bind, delete, state = timer.once(url)
                times[kind]['bind'].append(bind)
                times[kind]['delete'].append(delete)
                times[kind]['states'].append(state)
        calls = quota_calls(bed.log('cyquota-api')[logs['cyquota-api']:])
        calls['nova'] = [float(seconds) for seconds in _NOVA_EVENT.findall(
            bed.log('nova-api')[logs['nova-api']:])]
        progress.step('openstack: bind PATCH: the reads of Cyborg')
        get_arq, get_profile = timer.reads(plain, rounds)
        rss = bed.rss_by_process()
    finally:
        bed.procs.stop(PLAIN_API)
        bed.delete_server(instance['id'])
    return _rows(times, calls, get_arq, get_profile, rounds), rss


def _rows(times, calls, get_arq, get_profile, rounds):
    rows = []
    for name, key in (('bind PATCH, 1 ARQ', 'bind'),
                      ('unbind+delete DELETE ?arqs=, 1 ARQ', 'delete')):
        for label, statistic in (('median', statistics.median),
                                 ('p90', lambda v: percentile(v, 0.9))):
            with_filter = statistic(times['filter'][key]) * 1000
            without = statistic(times['plain'][key]) * 1000
            rows.append(dict(part='bind PATCH', what='%s, %s of %d' % (
                name, label, rounds), unit='ms', value=with_filter,
                plain=without, ratio=with_filter / without))
    bound = {kind: sum(state == 'Bound' for state in times[kind]['states'])
             for kind in times}
    rows.append(dict(part='bind PATCH',
                     what='ARQs Bound when the PATCH answered',
                     unit='count', value=bound['filter'],
                     plain=bound['plain']))
    overhead = (statistics.median(times['filter']['bind'])
                - statistics.median(times['plain']['bind'])) * 1000
    rows.append(dict(part='filter profile',
                     what="filter's added time on the PATCH (median)",
                     unit='ms', value=overhead))
    events = calls.pop('nova')
    rows.append(dict(part='PATCH profile', what=(
        "Cyborg's event to Nova at each bind (in nova-api), median"),
        unit='ms', value=statistics.median(events) * 1000 if events
        else None, count=len(events) / (2 * rounds)))
    estimate = 2 * get_arq + get_profile
    for path, label in (('/v1/reservations', 'reserve'),
                        ('/v1/reservations/commit', 'commit')):
        seconds = calls.get(path, [])
        rows.append(dict(part='filter profile', what=(
            'cyquota POST %s per bind (in cyquota), median' % label),
            unit='ms', value=statistics.median(seconds) * 1000
            if seconds else None, count=len(seconds) / rounds))
        estimate += statistics.median(seconds) if seconds else 0
    rows.append(dict(part='filter profile',
                     what='Cyborg GET an ARQ (x2 per bind), median',
                     unit='ms', value=get_arq * 1000, count=2))
    rows.append(dict(part='filter profile',
                     what='Cyborg GET a device profile (x1), median',
                     unit='ms', value=get_profile * 1000, count=1))
    rows.append(dict(part='filter profile',
                     what="sum of the filter's 5 calls", unit='ms',
                     value=estimate * 1000))
    for row in rows:
        if 'count' in row:
            row['what'] += ' [%g per bind]' % row.pop('count')
    return rows
