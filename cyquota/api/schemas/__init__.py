"""JSON schemas of the API's request bodies."""
