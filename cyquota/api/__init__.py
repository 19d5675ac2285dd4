"""cyquota's REST API: one pecan application, bodies and errors in JSON.

Layout:

* ``app.setup_app()`` builds the WSGI app: pecan, wrapped in
  oslo.middleware's RequestId (every request gets ``req-<uuid>``, returned
  in ``X-Openstack-Request-Id``).
* ``config.app_config()`` is the pecan configuration: root controller and
  hooks. Authentication middleware (keystonemiddleware, for ``[api]
  auth_strategy = keystone``) belongs in ``app.setup_app``, around the pecan
  app: it sets the same identity headers that noauth trusts.
* ``hooks``: ``ContextHook`` puts a cyquota ``RequestContext`` on
  ``pecan.request.context`` (identity from ``X-Project-Id``, ``X-User-Id``,
  ``X-Roles``; the request id); ``MediaTypeHook`` refuses form bodies and
  other media types; ``ErrorHook`` renders every error through
  ``errors.response_for``. ``bodylimit.BodyLimit`` refuses bodies over
  ``[api] max_request_body_size`` with 413 before any route, in
  ``app.setup_app``.
* ``errors``: the one place errors become the API's ``{"errors": [...]}``
  document. Raise a ``cyquota.exception.CyquotaException`` subclass (its
  ``code``, ``kind``, ``title`` and message become the error); never build
  an error response in a controller.
* ``validation.json_body(schema)``: the request's JSON body, checked against
  a JSON schema kept in ``schemas/`` (415 for another media type, 400 naming
  the field for malformed or wrong input); the schema is the request's only
  description (shape, JSON types, bounds), and the controller reads the
  checked data as parsed.
* ``types/``: the WSME types of the answers, one module per resource;
  a controller builds its answer as one and returns ``to_json()``.
* ``controllers/root.py`` (``GET /``) and ``controllers/v1/`` (one module
  per resource).

Adding a controller, e.g. ``/v1/quota_usages``:

1. Write ``controllers/v1/quota_usages.py`` with a class whose ``index``
   is ``@pecan.expose('json', generic=True)`` (it answers GET) and whose
   other methods are ``@index.when(method='POST', template='json')`` and so
   on; other methods get a 405 by themselves. For ``/v1/things/{id}``, give
   the collection controller ``@pecan.expose() def _lookup(self, id,
   *remainder): return ThingController(id), remainder``.
2. Read input only through ``validation.json_body`` and ``query.values``
   (the GET's query parameters, declared once in ``schemas/``); call the
   engine with ``pecan.request.context``; return the answer's type's
   ``to_json()`` (set ``pecan.response.status`` for 201, return
   ``webob.Response(status=204)`` for no content).
3. Attach it in ``controllers/v1/__init__.py``:
   ``quota_usages = quota_usages.QuotaUsagesController()``.
4. Policy checks go where the context is used, before the engine call.
"""
