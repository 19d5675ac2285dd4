"""The API's controllers: ``root`` (``GET /``) and ``v1``."""
