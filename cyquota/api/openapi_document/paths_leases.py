"""The paths of leases."""

from cyquota.api.openapi_document import operation as op
from cyquota.api.schemas import lease as lease_schemas
from cyquota.api.types import lease as lease_types

_REFUSED = op.error_document(
    'Over quota in the window (``cyquota.over_quota``, with ``overs``), '
    'denied by a usage-enforcement filter (``cyquota.enforcement_denied``), '
    'the project at ``[leases] max_leases_per_project`` '
    '(``cyquota.lease_limit``, on create) or refused by policy.')
_NOT_FOUND = op.error_document(
    'No such lease, or a lease the caller may not read: the same answer '
    '(``cyquota.lease_not_found``), so that no id is confirmed.')


def paths(components):
    """``{path: path item}`` of the lease calls; answers' types are added
    to ``components`` (a ``wsme_schema.Components``)."""
    lease = components.schema_of(lease_types.LeaseResponse)
    return {
        '/v1/leases': {
            'post': {
                'operationId': 'createLease',
                'summary': "Create a lease (a project's members; admins for "
                           'any project).',
                'description': '''\
Devices are chosen for the window, the usage-enforcement filters'
``check_create`` runs, then quota and device capacity are checked
at every instant of the window against the project's ordinary
holdings and every lease that overlaps it. A lease starting now is
``ACTIVE`` in the answer, a later one ``PENDING``. ``start_date``
and ``end_date`` are ISO 8601 with a UTC offset; ``start_date``
may be ``"now"``, null or absent (now), at most 60 s in the past;
``end_date`` must be after it, by ``[leases] min_duration`` to
``max_duration`` seconds; a ``member_of`` holds at most ``[leases]
max_member_of_entries`` values and ``max_member_of_bytes`` bytes.
A refusal: 403 ``cyquota.over_quota`` (with ``overs``), 409
``cyquota.no_valid_allocation``, 403 ``cyquota.enforcement_denied``
(the lease is kept in ``ERROR``, unless the policy service could
not decide: then nothing is stored), 403 ``cyquota.lease_limit``
(the project holds ``[leases] max_leases_per_project`` leases).''',
                'requestBody': op.body(lease_schemas.POST_LEASE, example={
                    'lease': {
                        'name': 'training', 'start_date': 'now',
                        'end_date': '2027-01-01T12:00:00+00:00',
                        'reservations': [{'resource_type': 'accelerator:FPGA',
                                          'amount': 2}]}}),
                'responses': op.answers(
                    {'201': op.answer('The lease.', lease)},
                    400, 409, 413, 415, 503, s403=_REFUSED)},
            'get': {
                'operationId': 'listLeases',
                'summary': "Leases, newest first, paged (a project's readers "
                           "and members see their own; admins every "
                           "project's).",
                'description': '''\
Without ``project_id`` a reader or member lists its own project's
leases and an admin every project's; naming another project is a
403 but for an admin. Leases come newest first (``created_at``,
then ``id``, descending), ``limit`` at a time. A full page has a
``leases_links`` ``next`` link; its ``marker`` is the id of the
page's last lease. A marker that names no lease of the listed
project (any project's, for an admin listing all) is a 400
``marker [<marker>] not found``.''',
                'parameters': op.query(lease_schemas.GET_LEASES),
                'responses': op.answers(
                    {'200': op.answer('One page of leases.',
                                      components.schema_of(
                                          lease_types.LeasesResponse))},
                    400, 403)}},
        '/v1/leases/{lease_id}': {
            'parameters': [{'name': 'lease_id', 'in': 'path',
                            'required': True, 'schema': {'type': 'string'}}],
            'get': {
                'operationId': 'showLease',
                'summary': "A lease (its project's readers and members; "
                           'admins).',
                'responses': op.answers(
                    {'200': op.answer('The lease.', lease)}, 403,
                    s404=_NOT_FOUND)},
            'put': {
                'operationId': 'updateLease',
                'summary': "Change a lease (its project's members; admins).",
                'description': '''\
Only what the body names changes: ``name``, ``end_date``,
``start_date`` (while ``PENDING``) and the ``amount`` of
reservations matched by ``id``. An ``ACTIVE`` lease may grow: it
keeps its devices and takes more for the rest of its window (quota
and capacity checked from now to its end); a smaller amount of an
``ACTIVE`` lease is a 409. A change of the window or an amount
carries the member keys with the caller's rights now (a key the
caller may not carry answers as one that does not exist). What else
GET shows of the lease and its reservations may be sent back
unchanged (a client may PUT what it read); a change to it is a 400
naming the field. The usage-enforcement filters' ``check_update``
runs and the window is checked again; a refusal changes nothing. An
``ENDED`` or ``ERROR`` lease is a 409.''',
                'requestBody': op.body(lease_schemas.PUT_LEASE, example={
                    'lease': {'end_date': '2027-01-01T18:00:00+00:00'}}),
                'responses': op.answers(
                    {'200': op.answer('The lease as changed.', lease)},
                    400, 409, 413, 415, 503, s403=_REFUSED,
                    s404=_NOT_FOUND)},
            'delete': {
                'operationId': 'deleteLease',
                'summary': "End a lease now (its project's members; "
                           'admins); it stays readable as ``ENDED``.',
                'description': 'Quota and devices are given back, then the '
                               "usage-enforcement filters' ``on_end`` is "
                               'called. An ``ACTIVE`` lease\'s ``end_date`` '
                               'becomes the moment it ended and its '
                               '``status_reason`` "ended early by DELETE; '
                               'scheduled end was <end_date>"; a '
                               "``PENDING`` lease keeps its dates, its "
                               '``status_reason`` "cancelled by DELETE '
                               'before its start". An ``ENDED`` or '
                               '``ERROR`` lease is a 409.',
                'responses': op.answers({'204': op.NO_CONTENT}, 403, 409,
                                        s404=_NOT_FOUND)}},
    }
