"""The personas every rule is built from.

* admin (role ``admin``): reads everything, writes limits;
* service (role ``service``, e.g. Cyborg's service user): reserves,
  commits and rolls back quota for any project;
* project reader (role ``reader`` or ``member`` in the project): reads its
  own project. ``member`` is named too because ``noauth`` callers send
  their roles as they are, without Keystone's implied roles.
"""

from oslo_policy import policy

ADMIN = 'rule:admin_api'
SERVICE_OR_ADMIN = 'rule:service_api or rule:admin_api'
PROJECT_READER_OR_ADMIN = 'rule:project_reader or rule:admin_api'
ANYONE = ''

rules = [
    policy.RuleDefault(
        'admin_api', 'role:admin',
        description='Cloud administrators.'),
    policy.RuleDefault(
        'service_api', 'role:service',
        description='Services acting for any project, such as the '
                    'accelerator agent or Cyborg.'),
    policy.RuleDefault(
        'project_reader',
        '(role:reader or role:member) and project_id:%(project_id)s',
        description='Readers and members of the project the request is '
                    'about.'),
]


def list_rules():
    return rules
