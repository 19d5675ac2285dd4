"""Usage enforcement (Blazar's filter chain): filters consulted on lease
create, update and end.

:func:`load_chain` builds the :class:`FilterChain` of ``[enforcement]
enabled_filters``; :func:`context_payload` and :func:`lease_payload` build
the documents it takes; :func:`check_config` is called by every service at
start-up. Filters: :class:`BaseFilter` subclasses registered in the entry
point group ``cyquota.enforcement.filters``.
"""

from cyquota.enforcement.base import BaseFilter
from cyquota.enforcement.base import ConfigError
from cyquota.enforcement.base import current_lease_id
from cyquota.enforcement.chain import check_config
from cyquota.enforcement.chain import FilterChain
from cyquota.enforcement.chain import load_chain
from cyquota.enforcement.chain import load_filters
from cyquota.enforcement.chain import UnknownFilter
from cyquota.enforcement.payload import context_payload
from cyquota.enforcement.payload import lease_payload

__all__ = ['BaseFilter', 'ConfigError', 'FilterChain', 'UnknownFilter',
           'check_config', 'context_payload', 'current_lease_id',
           'lease_payload', 'load_chain', 'load_filters']
