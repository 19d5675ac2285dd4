"""Client side of the conductor RPC API: what accelerator agents import.

Every method is a call (it waits for the conductor's answer) and takes the
caller's request context first: the conductor checks it with the REST
API's policy rules, so an agent's context carries the ``service`` role
(``PolicyNotAuthorized`` otherwise). A quota error is raised as the same
``cyquota.exception`` class the conductor raised, with its keyword details
(``error.kwargs``; ``error.overs`` for ``OverQuota``); ``error.message`` is
the message alone, ``str(error)`` adds the conductor's traceback.
``oslo_messaging.MessagingTimeout`` means no answer came: ``reserve`` with a
``request_id``, ``commit`` and ``rollback`` may then be sent again safely.
"""

from cyquota.conductor import rpc


class ConductorAPI:
    """Client side of the conductor RPC API.

    API version history:

    * 1.0 - reserve, commit, rollback, release, get_usage,
      report_allocations

    :param timeout: seconds to wait for each answer (default
                    ``[DEFAULT] rpc_response_timeout``).
    """

    def __init__(self, timeout=None):
        self._client = rpc.get_client(timeout=timeout)

    def reserve(self, ctxt, project_id, deltas, expire=None, request_id=None,
                consumer_id=None):
        """Reserve ``deltas`` ({resource: non-zero int}); returns the
        reservation uuids.

        ``expire``: seconds from now, an aware datetime or an ISO 8601
        string with a UTC offset; None takes ``[quota] reservation_expire``.
        The same ``request_id`` again returns the same uuids. Raises
        ``OverQuota`` when a positive delta does not fit.
        """
        return self._client.call(
            ctxt, 'reserve', project_id=project_id, deltas=deltas,
            expire=expire, request_id=request_id, consumer_id=consumer_id)

    def commit(self, ctxt, project_id, reservations):
        """Move the reservations' counts from reserved to used (after a
        successful attach)."""
        self._client.call(ctxt, 'commit', project_id=project_id,
                          reservations=reservations)

    def rollback(self, ctxt, project_id, reservations):
        """Give the reservations' reserved counts back (after a failed
        attach)."""
        self._client.call(ctxt, 'rollback', project_id=project_id,
                          reservations=reservations)

    def release(self, ctxt, project_id, deltas, consumer_id=None):
        """Take positive ``deltas`` off ``used`` (a detach); returns the
        uuids of the release rows."""
        return self._client.call(ctxt, 'release', project_id=project_id,
                                 deltas=deltas, consumer_id=consumer_id)

    def get_usage(self, ctxt, project_id):
        """``{resource: {"limit", "used", "reserved", "available"}}``; -1
        means unlimited. A resource with a budget also has
        ``"remaining_hours"``: its balance now, in accelerator-hours;
        under strict-two-level ``"tree"`` has the tree's counts, and its
        ``"remaining_hours"`` where the root's budget covers the tree."""
        return self._client.call(ctxt, 'get_usage', project_id=project_id)

    def report_allocations(self, ctxt, host, allocations):
        """Report everything really attached on ``host``: a list of
        ``{"project_id", "resource", "consumer_id", "amount"}``. It replaces
        the host's previous report. ``host`` is the sender's own: the
        context's ``host`` (``ReportNotFromHost`` otherwise)."""
        self._client.call(ctxt, 'report_allocations', host=host,
                          allocations=allocations)
