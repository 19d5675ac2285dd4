"""The cloud's services cyquota talks to.

cyquota's own device model is ``cyquota.placement`` (resource providers in
cyquota's database, entered through its REST API). In a cloud the devices
already live in the cloud's Placement API; what reaches that service lives
here (cyquota resources become Placement's classes through
``cyquota.resource_classes.class_map``, ``[placement] class_map``):

* ``placement_errors``: what can go wrong talking to Placement;
* ``placement_client``: a keystoneauth client of Placement, built from the
  ``[placement]`` options;
* ``mirror``: the copy of Placement's providers into cyquota's device
  tables (``source = placement``), with ``mirror_read`` (what Placement
  has), ``mirror_diff`` (the pure comparison), ``mirror_store`` (cyquota's
  copy, read and written) and ``mirror_state`` (its shared state row);
* ``lease_writeback``: leases written to Placement as allocations while
  they run (``write_leases``), through ``lease_outbox`` (what Placement
  should hold for each lease written back);
* ``witness``: Placement's usage figures beside the ledger's (``quota
  check --against-placement``, ``quota sync --from-placement``).

Dependency rule: modules here may use ``cyquota.placement`` (the device
model they feed); ``cyquota.placement`` never imports from here.
"""
