"""Options of the ``[oslo_middleware]`` group that the API reads: oslo.middleware's
own ``enable_proxy_headers_parsing`` (HTTPProxyToWSGI, see ``api/middleware.py``).

They are the library's options, registered here so that the group exists from
the start (config checks, tests); the sample config lists them through the
generator's ``oslo.middleware.http_proxy_to_wsgi`` namespace, with the
library's help. The request body limit is ``[api] max_request_body_size``,
not the library's option of the same name.
"""

from oslo_middleware import http_proxy_to_wsgi


def register_opts(conf):
    conf.register_opts(http_proxy_to_wsgi.OPTS, group='oslo_middleware')


def list_opts():
    return {}       # listed by the oslo.middleware.http_proxy_to_wsgi namespace
