"""The real servers that the tests and the benchmarks run on: throw-away
databases on PostgreSQL and MariaDB (``databases``), a ``cyquota-api``
process (``api_server``), the cloud's Placement from PyPI
(``placement_server``, in a virtualenv of ``cached_venv``) and the OpenStack
test bed (``openstack_bed``: Keystone, Placement, Nova, Cyborg).

Both ``tests`` and ``benchmarks`` import these; this package imports
neither of them, and neither of them imports the other. It is no part of
the shipped ``cyquota`` package.
"""
