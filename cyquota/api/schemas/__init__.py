"""What the API reads: the JSON schemas of its request bodies and the
query parameters of its GETs (``cyquota.api.query.Parameter``), each
described once."""
