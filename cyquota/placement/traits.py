"""Provider traits. cyquota reads one of them: MISC_SHARES_VIA_AGGREGATE
marks a sharing provider, whose inventory serves every tree whose providers
share an aggregate with it."""

import re

import os_traits
import sqlalchemy as sa

from cyquota.db import placement_models
from cyquota.placement import device_errors
from cyquota.placement import providers

SHARING = os_traits.MISC_SHARES_VIA_AGGREGATE

_CUSTOM = re.compile(r'CUSTOM_[A-Z0-9_]+')

_traits = placement_models.ProviderTrait.__table__


def check(names):
    """Refuse names that are neither standard (os-traits) nor
    ``CUSTOM_[A-Z0-9_]+``.

    :raises TraitNotFound: (400)
    """
    standard = os_traits.get_traits()
    unknown = sorted(name for name in names if name not in standard
                     and not _CUSTOM.fullmatch(name))
    if unknown:
        raise device_errors.TraitNotFound(names=', '.join(unknown))


def _of_provider(session, provider_id):
    return sorted(session.execute(
        sa.select(_traits.c.trait)
        .where(_traits.c.resource_provider_id == provider_id)).scalars())


def get_for_provider(context, uuid):
    """``(generation, [traits])`` of provider ``uuid``."""
    return providers.read(context, uuid, _of_provider)


def set_for_provider(context, uuid, generation, names):
    """Give provider ``uuid`` exactly the traits ``names``.

    :returns: ``(new generation, [traits])``.
    :raises ConcurrentUpdate: (409) stale ``generation``.
    :raises TraitNotFound: (400)
    """
    check(names)

    def replace(session, provider_id):
        session.execute(_traits.delete().where(
            _traits.c.resource_provider_id == provider_id))
        for name in sorted(set(names)):
            session.execute(_traits.insert().values(
                resource_provider_id=provider_id, trait=name))

    return providers.write(context, uuid, generation, replace, _of_provider)


def of_providers(session, provider_ids):
    """``{provider_id: [traits]}`` of the given providers."""
    result = {}
    rows = session.execute(
        sa.select(_traits.c.resource_provider_id, _traits.c.trait)
        .where(_traits.c.resource_provider_id.in_(sorted(set(provider_ids))))
        .order_by(_traits.c.trait))
    for provider_id, name in rows:
        result.setdefault(provider_id, []).append(name)
    return result


def sharing_providers(session):
    """Ids of every sharing provider."""
    return set(session.execute(
        sa.select(_traits.c.resource_provider_id)
        .where(_traits.c.trait == SHARING)).scalars())
