"""The API's routes, one blueprint per resource, all under ``/v2.1``."""
