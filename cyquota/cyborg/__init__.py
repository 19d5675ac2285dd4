"""cyquota inside OpenStack's Cyborg: binds of accelerator requests (ARQs)
move cyquota's books (SPEC 3.7).

* ``bind_filter``: the WSGI filter of Cyborg's API pipeline (paste
  ``cyquota.cyborg.bind_filter:filter_factory``), which reserves a unit per
  ARQ at a bind, commits or rolls it back by the bind's outcome, and
  releases what an unbind or a delete frees;
* ``bind_patch``: what a ``PATCH /v2/accelerator_requests`` asks for;
* ``arq_reader``: ARQs and device profiles read through Cyborg's public
  REST API, and what an ARQ's state means for its reservation (shared with
  cyquota's conductor, which resolves asynchronous binds);
* ``quota_client``: cyquota's reservation REST API reached as a service;
* ``filter_opts``: the ``[cyquota_filter]`` options.

Import rule: the filter runs in Cyborg's process, so the modules here
import only what Cyborg's virtualenv has (webob, oslo.config, oslo.log,
keystoneauth1, os-resource-classes) and, of cyquota, only
``cyquota.resource_classes`` and ``cyquota.service_client_opts``; never
``cyquota.conf``, whose import registers cyquota's options on the host
service's global configuration.
"""
