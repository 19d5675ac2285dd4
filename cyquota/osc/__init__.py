"""The OpenStack client plugin: ``openstack accelerator quota usage``,
``accelerator reservation``, ``accelerator lease`` and ``accelerator
limit`` commands over cyquota's REST API (``doc/source/osc.rst``).

``plugin`` is the module python-openstackclient loads; ``client`` talks
to the API through the shell's keystoneauth session; each other module is
one command group.
"""
