"""What the conductor trusts, checked the same way on every transport (the
unit tests' in-process one and the functional tests' RabbitMQ): a caller
without the service role changes nothing, a report is taken only from its
own host, and the policy file governs RPC as it governs REST."""

import logging

import pytest

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota import exception
from cyquota import policy
from cyquota import quota
from cyquota.quota import attachments

#: Callers the conductor must refuse: a project of its own and no role,
#: and a member of the victim project (the REST API lets neither reserve).
UNTRUSTED = {
    'no-role': dict(user_id='mallory', project_id='attacker', roles=[]),
    'victim-member': dict(user_id='mallory', project_id='victim',
                          roles=['member', 'reader']),
}


def agent_context(host):
    """An agent's context: the service role, sent from ``host``."""
    return cyquota_context.RequestContext(user_id='agent', roles=['service'],
                                          host=host)


def _books(ctx):
    usage = quota.QUOTAS.get_project_usage(ctx, 'victim')['FPGA']
    return (usage['used'], usage['reserved'],
            attachments.reported_consumer_usage(ctx))


def _refused(call, *args, **kwargs):
    with pytest.raises(exception.PolicyNotAuthorized) as caught:
        call(*args, **kwargs)
    return caught.value


def check_an_untrusted_caller_changes_nothing(api, ctx, caller, caplog):
    """Every call of ``caller`` (a key of UNTRUSTED) is refused with the
    rule that refuses it, and the victim's books stay as they were."""
    caplog.set_level(logging.WARNING, 'cyquota.conductor.manager')
    agent = agent_context('host-1')
    api.report_allocations(agent, 'host-1', [{
        'project_id': 'victim', 'resource': 'FPGA', 'consumer_id': 'vm1',
        'amount': 1}])
    pending = api.reserve(agent, 'victim', {'FPGA': 2})
    held = api.reserve(agent, 'victim', {'FPGA': 1})
    api.commit(agent, 'victim', held)
    before = _books(ctx)
    assert before[:2] == (1, 2)
    mallory = cyquota_context.RequestContext(**UNTRUSTED[caller])
    for method, args, rule in [
            ('reserve', ({'FPGA': 5},), 'cyquota:reservations:create'),
            ('commit', (pending,), 'cyquota:reservations:commit'),
            ('rollback', (pending,), 'cyquota:reservations:rollback'),
            ('release', ({'FPGA': 1},), 'cyquota:conductor:release'),
            ('get_usage', (), 'cyquota:conductor:get_usage')]:
        error = _refused(getattr(api, method), mallory, 'victim', *args)
        assert (error.code, error.kind, error.message) == (
            403, 'forbidden',
            'Policy does not allow %s to be performed.' % rule)
    error = _refused(api.report_allocations, mallory, 'host-1', [])
    assert error.message == ('Policy does not allow cyquota:conductor:'
                             'report_allocations to be performed.')
    assert _books(ctx) == before
    assert "Refused RPC cyquota:reservations:create from user 'mallory'" in (
        caplog.text)


def check_a_report_about_another_host_is_refused(api, ctx, caplog):
    """A service context of host-2, or of no host, cannot replace host-1's
    report: refused as ReportNotFromHost (a PolicyNotAuthorized), logged."""
    caplog.set_level(logging.WARNING, 'cyquota.conductor.manager')
    real = [{'project_id': 'victim', 'resource': 'FPGA',
             'consumer_id': 'vm1', 'amount': 2}]
    api.report_allocations(agent_context('host-1'), 'host-1', real)
    for sender, named in (('host-2', 'host-2'), (None, 'no host')):
        with pytest.raises(exception.ReportNotFromHost) as caught:
            api.report_allocations(agent_context(sender), 'host-1', [])
        error = caught.value
        assert isinstance(error, exception.PolicyNotAuthorized)
        assert (error.code, error.kwargs) == (
            403, {'host': 'host-1', 'sender': named})
        assert error.message == (
            'A report of the allocations on host host-1 must come from '
            'that host; this one came from %s.' % named)
    assert attachments.reported_consumer_usage(ctx) == {
        ('victim', 'FPGA', 'vm1'): 2}
    assert ("Refused a report of the allocations on host 'host-1' from "
            "user 'agent', project None, roles ['service'], host 'host-2'"
            in caplog.text)
    # host-2 still reports its own.
    api.report_allocations(agent_context('host-2'), 'host-2', [])
    assert set(attachments.host_reports(ctx)) == {'host-1', 'host-2'}


def check_the_policy_file_governs_rpc(api, ctx, tmp_path):
    """An operator's policy file changes what the conductor allows, as it
    does for the REST API."""
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('"cyquota:reservations:create": "!"\n'
                           '"cyquota:conductor:get_usage": "role:reader"\n')
    CONF.set_override('policy_file', str(policy_file), 'oslo_policy')
    policy.reset()
    try:
        agent = agent_context('host-1')
        error = _refused(api.reserve, agent, 'victim', {'FPGA': 1})
        assert error.message == ('Policy does not allow cyquota:'
                                 'reservations:create to be performed.')
        _refused(api.get_usage, agent, 'victim')
        reader = cyquota_context.RequestContext(roles=['reader'])
        assert api.get_usage(reader, 'victim')['FPGA']['used'] == 0
        # The rules the file leaves alone keep their defaults.
        uuids = quota.QUOTAS.reserve(ctx, 'victim', {'FPGA': 1})
        api.commit(agent, 'victim', uuids)
        assert api.get_usage(reader, 'victim')['FPGA']['used'] == 1
    finally:
        CONF.clear_override('policy_file', 'oslo_policy')
        policy.reset()
