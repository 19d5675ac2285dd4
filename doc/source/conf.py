"""Sphinx configuration of cyquota's documentation site.

Built from the repository's root (``tox -e docs``, the docs test): the
configuration and policy references name their generator files
(``etc/cyquota/*-generator.conf``) by paths relative to the working
directory, the only ones oslo.config's directive resolves.
"""

project = 'cyquota'
copyright = 'cyquota contributors'
extensions = [
    'oslo_config.sphinxext',
    'oslo_policy.sphinxext',
    'reno.sphinxext',
    'sphinxcontrib.openapi',
]
# The renderer that shows request and response bodies from their schemas
# (the default, "httpdomain:old", leaves request bodies out).
openapi_default_renderer = 'httpdomain'
