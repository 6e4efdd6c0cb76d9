"""The REST API tier: a Nova-compatible subset of the Compute API over the
conductor's RPC API (``tristate-api``), and the ``tristate`` command line.

* :mod:`api.wsgi`: the WSGI application (Flask), its middleware and routes.
* :mod:`api.status`: the server status and EC2 state maps, as data.
* :mod:`api.views`: the JSON bodies of servers, flavors, hosts, actions.
* :mod:`api.microversion`, :mod:`api.schemas`, :mod:`api.policy`,
  :mod:`api.auth`: what a request may ask and who may ask it.
* :mod:`api.server`: the HTTP server (cheroot) in a thread.
* :mod:`api.cli`: the ``tristate`` command line, an HTTP client of the API.

Nothing here imports at package import time: the compute agents may import
:mod:`common.sdnotify` without the API's dependencies installed.
"""
