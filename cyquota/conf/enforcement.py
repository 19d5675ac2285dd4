"""[enforcement] and [enforcement_external] options: the usage-enforcement
filter chain consulted on lease create, update and end (Blazar's design).
"""

from oslo_config import cfg

enforcement_group = cfg.OptGroup(
    'enforcement', title='Usage enforcement options',
    help='An ordered chain of filters consulted when a lease is created, '
         'updated and ended. Any filter can refuse a create or an update; '
         'the first refusal stops the chain and its message is the answer '
         'of the API.')

enforcement_opts = [
    cfg.ListOpt(
        'enabled_filters', default=[],
        help='Filters to run, in this order, by their entry point name in '
             'the cyquota.enforcement.filters group: MaxLeaseDurationFilter, '
             'ExternalServiceFilter, or an installed plugin. Empty (the '
             'default): no filter, every lease is allowed. A name without '
             'an entry point stops every cyquota service at start-up.'),
    cfg.ListOpt(
        'exempted_projects', default=[],
        help='Projects no filter applies to: project ids, or project names '
             'with their domain name as name@domain (for example '
             'my-project@Default), resolved through the limit source.'),
    cfg.StrOpt(
        'auth_url', default=None,
        help='Identity endpoint sent to filters as context.auth_url, so that '
             'an external service knows which cloud asks. Unset: null.'),
    cfg.StrOpt(
        'region_name', default=None,
        help='Region sent to filters as context.region_name. Unset: null.'),
    cfg.IntOpt(
        'max_lease_duration', default=-1, min=-1,
        help='MaxLeaseDurationFilter: the longest lease allowed, in seconds '
             'from its start_date to its end_date (a lease exactly this '
             'long is allowed). An update is measured from the start_date '
             'of the updated lease, so an active lease cannot be stretched '
             'past the maximum from its original start. -1: no limit.'),
    cfg.ListOpt(
        'max_lease_duration_exempt_project_ids', default=[],
        help='MaxLeaseDurationFilter: project ids whose leases may be of any '
             'duration.'),
    cfg.IntOpt(
        'reservation_max_length', default=0, min=0,
        deprecated_for_removal=True,
        deprecated_reason='The usage-enforcement specification named the '
                          'duration limit reservation_max_length; what '
                          'shipped is max_lease_duration.',
        help='Maximum lease duration in seconds, used by '
             'MaxLeaseDurationFilter only while max_lease_duration is -1. '
             '0: no limit.'),
]

external_group = cfg.OptGroup(
    'enforcement_external', title='ExternalServiceFilter options',
    help='ExternalServiceFilter delegates each decision to an HTTP service: '
         'it POSTs a JSON document to check-create, check-update and on-end. '
         'The service answers 204 to allow, or 403 with a JSON body '
         '{"message": "..."} to refuse.')

external_opts = [
    cfg.URIOpt(
        'endpoint_url', default=None, schemes=['http', 'https'],
        deprecated_opts=[cfg.DeprecatedOpt(
            'external_service_base_endpoint', group='enforcement')],
        help='Base URL of the service: requests go to '
             '{endpoint_url}/check-create, {endpoint_url}/check-update and '
             '{endpoint_url}/on-end. A path in the base is kept '
             '(https://policy.example.com/v1 posts to '
             'https://policy.example.com/v1/check-create).'),
    cfg.URIOpt(
        'check_create_endpoint', default=None, schemes=['http', 'https'],
        deprecated_opts=[cfg.DeprecatedOpt(
            'external_service_check_create_endpoint', group='enforcement')],
        help='Full URL for check-create, instead of the one derived from '
             'endpoint_url. With neither set, lease creation is not sent '
             'to the service.'),
    cfg.URIOpt(
        'check_update_endpoint', default=None, schemes=['http', 'https'],
        deprecated_opts=[cfg.DeprecatedOpt(
            'external_service_check_update_endpoint', group='enforcement')],
        help='Full URL for check-update, instead of the one derived from '
             'endpoint_url. With neither set, lease updates are not sent to '
             'the service.'),
    cfg.URIOpt(
        'on_end_endpoint', default=None, schemes=['http', 'https'],
        deprecated_opts=[cfg.DeprecatedOpt(
            'external_service_on_end_endpoint', group='enforcement')],
        help='Full URL for on-end, instead of the one derived from '
             'endpoint_url. With neither set, lease ends are not sent to the '
             'service.'),
    cfg.StrOpt(
        'token', default=None, secret=True,
        deprecated_opts=[cfg.DeprecatedOpt(
            'external_service_token', group='enforcement')],
        help='Static token sent in the X-Auth-Token header of every request, '
             'so that the service can tell cyquota from anyone else. Never '
             'logged.'),
    cfg.FloatOpt(
        'timeout', default=5.0, min=0.001,
        help='Seconds to wait for the service, both to connect and for each '
             'read of its answer. A service that does not answer in time '
             'counts as an error (see allow_on_error).'),
    cfg.BoolOpt(
        'allow_on_error', default=False,
        help='Allow the request when the service cannot decide: a transport '
             'error (connection refused, timeout, TLS failure) or an answer '
             'other than 204 and 403. False (the default): such errors '
             'refuse the request. An explicit 403 always refuses.'),
    cfg.StrOpt(
        'ca_file', default=None,
        help='CA bundle (PEM) that verifies the TLS certificate of an https '
             'service. Unset: the system CAs.'),
]


def register_opts(conf):
    conf.register_group(enforcement_group)
    conf.register_opts(enforcement_opts, group=enforcement_group)
    conf.register_group(external_group)
    conf.register_opts(external_opts, group=external_group)


def list_opts():
    return {enforcement_group: enforcement_opts,
            external_group: external_opts}
