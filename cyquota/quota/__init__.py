"""Accelerator quotas: ``QUOTAS`` is the QuotaEngine."""

from cyquota.quota.engine import QuotaEngine

QUOTAS = QuotaEngine()
