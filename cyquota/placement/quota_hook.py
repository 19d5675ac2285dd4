"""The device hook the quota ledger is given at start-up
(``cyquota.service.connect_hooks``).

The ledger claims and frees devices through these few calls and imports
nothing of Placement; device selection imports nothing of the ledger.
"""

from cyquota.placement import allocations
from cyquota.placement import claim_steps
from cyquota.placement import request as request_mod


class DeviceHook:
    """Devices for reservations that name them, chosen by Placement's
    rules (``member_of``, lease pools)."""

    #: The SQL steps of a claim that the ledger runs inside its own
    #: statement (``claim_steps``), for the requests ``in_statement``
    #: accepts.
    steps = claim_steps

    @staticmethod
    def in_statement(request):
        """``(resource class, amount)`` of a request the ``steps`` can
        claim, or None (``claim`` claims it)."""
        return claim_steps.for_request(request)

    @staticmethod
    def parse(params):
        """A device request from Placement-style parameters (``{"resources":
        "FPGA:2", "member_of": "in:<agg>,<agg>", ...}``); its ``totals()``
        are ``{resource class: amount}``. Raises InvalidQuery."""
        return request_mod.from_params(params)

    @staticmethod
    def claim(context, consumer_id, project_id, request, user_id=None):
        """Allocate devices for ``request`` to ``consumer_id``; joins the
        caller's transaction (a lost race raises a deadlock, so that the
        caller's whole transaction is retried)."""
        return allocations.claim(context, consumer_id, project_id, request,
                                 user_id=user_id)

    @staticmethod
    def free(context, consumer_id):
        """Give back every device of ``consumer_id``."""
        return allocations.free(context, consumer_id)

    @staticmethod
    def holds(context, consumer_id):
        """Whether ``consumer_id`` holds any device."""
        return allocations.holds_any(context, consumer_id)

    @staticmethod
    def allocations(context, consumer_id):
        """``{"allocations", "project_id", "user_id"}`` of
        ``consumer_id``, in Placement's shape."""
        return allocations.get_for_consumer(context, consumer_id)
