"""A real OpenStack on 127.0.0.1 that the tests start: Keystone,
Placement, Nova (fake virt driver), Cyborg (fake accelerator driver),
stand-ins for Glance and Neutron, and cyquota, each on free ports, private
databases and a private RabbitMQ vhost, all gone once it stops.

``bed.Bed`` starts and stops it; ``python -m servers.openstack_bed
--keep`` brings one up for a person to try.
"""
