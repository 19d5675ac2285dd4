"""Accelerator quotas: ``QUOTAS`` is the QuotaEngine."""

from cyquota.db.models import STATUSES as RESERVATION_STATUSES  # noqa: F401
from cyquota.quota.engine import QuotaEngine

QUOTAS = QuotaEngine()
