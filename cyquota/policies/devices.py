"""Policies of the device endpoints (``/v1/resource_providers``,
``/v1/aggregates``, ``/v1/allocation_candidates``). As in Placement, the
device inventory is for the cloud's own services: admins and the service
role read it, admins change it."""

from oslo_policy import policy

from cyquota.policies import base

READ = 'cyquota:devices:read'
WRITE = 'cyquota:devices:write'

rules = [
    policy.DocumentedRuleDefault(
        name=READ, check_str=base.SERVICE_OR_ADMIN,
        description='Read resource providers, their inventories, usages, '
                    'aggregates, traits and allocations, aggregates, and '
                    'allocation candidates.',
        operations=[
            {'path': '/v1/resource_providers', 'method': 'GET'},
            {'path': '/v1/resource_providers/{uuid}', 'method': 'GET'},
            {'path': '/v1/resource_providers/{uuid}/inventories',
             'method': 'GET'},
            {'path': '/v1/resource_providers/{uuid}/aggregates',
             'method': 'GET'},
            {'path': '/v1/resource_providers/{uuid}/traits',
             'method': 'GET'},
            {'path': '/v1/resource_providers/{uuid}/usages',
             'method': 'GET'},
            {'path': '/v1/resource_providers/{uuid}/allocations',
             'method': 'GET'},
            {'path': '/v1/aggregates', 'method': 'GET'},
            {'path': '/v1/aggregates/{uuid}', 'method': 'GET'},
            {'path': '/v1/allocation_candidates', 'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=WRITE, check_str=base.ADMIN,
        description='Create, change and delete resource providers, their '
                    'inventories, aggregates and traits, and aggregates.',
        operations=[
            {'path': '/v1/resource_providers', 'method': 'POST'},
            {'path': '/v1/resource_providers/{uuid}', 'method': 'DELETE'},
            {'path': '/v1/resource_providers/{uuid}/inventories',
             'method': 'PUT'},
            {'path': '/v1/resource_providers/{uuid}/aggregates',
             'method': 'PUT'},
            {'path': '/v1/resource_providers/{uuid}/traits',
             'method': 'PUT'},
            {'path': '/v1/aggregates/{uuid}', 'method': 'PUT'},
            {'path': '/v1/aggregates/{uuid}', 'method': 'DELETE'}],
        scope_types=['project']),
]


def list_rules():
    return rules
