"""The ``tristate`` command line: a cliff application over the REST API."""
