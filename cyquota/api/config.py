"""The pecan application configuration of the cyquota API."""

from cyquota.api import hooks


def app_config():
    """Keyword arguments for ``pecan.make_app``."""
    return {
        'root': 'cyquota.api.controllers.root.RootController',
        'hooks': [hooks.MediaTypeHook(),
                  hooks.ContextHook(),
                  hooks.ErrorHook()],
        # No redirects to a trailing slash, no ".json" suffix handling: the
        # paths are exactly the documented ones.
        'force_canonical': False,
        'guess_content_type_from_ext': False,
        'debug': False,
    }
