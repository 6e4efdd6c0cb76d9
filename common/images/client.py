"""A Glance v2 client: what agents (and the conductor) use to read and
write images, from Tristate's own image API or from a real Glance.

Only the calls Tristate needs: ``show``, ``download``, ``upload``,
``create``, ``update`` (JSON patch), ``delete`` and ``list``. Transfers
stream: a download is an iterator of chunks, an upload reads a file object
or an iterator chunk by chunk, so an image is never held in memory.

Credentials, one of:

* a grant (:mod:`common.images.grants`), the capability the conductor
  issues with a task for one image, sent as the header
  ``X-Tristate-Image-Grant``;
* a keystoneauth session, for a Glance behind Keystone
  (:func:`session_from_conf` builds it from the ``[image]`` group's
  keystoneauth options);
* a user's token (``token``), sent as ``X-Auth-Token``: the ``tristate``
  command line's (a Keystone token, or ``USER:PROJECT`` with noauth);
* nothing (a Glance without authentication, tests).

Errors: 404 is :class:`ImageNotFound`, 401 and 403 are
:class:`ImageForbidden` (the message says which), anything else that is not
a success is :class:`ImageServiceError` with the status and Glance's own
message; a connection that fails or times out is an
:class:`ImageServiceError` too (status None).
"""

import html
import json
import logging
import re

import requests

from common import exception

LOG = logging.getLogger(__name__)

GRANT_HEADER = 'X-Tristate-Image-Grant'
PATCH_TYPE = 'application/openstack-images-v2.1-json-patch'
DEFAULT_CHUNK = 1024 * 1024
DEFAULT_TIMEOUT = 60.0
_TAG = re.compile(r'<[^<>]*>')


class ImageNotFound(exception.NotFound):
    msg_fmt = 'Image %(image)s could not be found: %(reason)s'


class ImageForbidden(exception.Forbidden):
    msg_fmt = 'Image %(image)s: %(reason)s'


class ImageServiceError(exception.TristateError):
    msg_fmt = 'Image service error (%(status)s) on %(what)s: %(reason)s'
    code = 502


def session_from_conf(conf):
    """A keystoneauth session from the ``[image]`` group's keystoneauth
    options when ``auth_type`` is set there, else None (no
    authentication). Needs keystoneauth1 (the keystone extra) only when
    set."""
    group = conf.image
    if not getattr(group, 'auth_type', None):
        return None
    from keystoneauth1 import loading
    auth = loading.load_auth_from_conf_options(conf, 'image')
    return loading.load_session_from_conf_options(conf, 'image', auth=auth)


def _message(response):
    """Glance's explanation of an error answer, short."""
    try:
        body = response.json()
    except ValueError:
        text = (response.text or '').strip()
        if 'html' in response.headers.get('Content-Type', '') or (
                text[:6].lower() == '<html>'):
            text = _html_text(text)
        return text[:500] or response.reason or 'no message'
    if isinstance(body, dict):
        for key in ('message', 'detail', 'title'):
            if body.get(key):
                return str(body[key])[:500]
        for value in body.values():      # {"badRequest": {"message": ...}}
            if isinstance(value, dict) and value.get('message'):
                return str(value['message'])[:500]
    return json.dumps(body)[:500]


def _html_text(text):
    """The message of Glance's (webob's) HTML error page: the text after
    its ``<h1>`` title, without tags, on one line."""
    body = text.split('</h1>', 1)[-1]
    return ' '.join(html.unescape(_TAG.sub(' ', body)).split())


def _iter_file(fileobj, chunk_size):
    while True:
        chunk = fileobj.read(chunk_size)
        if not chunk:
            return
        yield chunk


class _Sized:
    """An iterator of bytes whose total is known: requests then sends it
    with a Content-Length instead of chunked."""

    def __init__(self, chunks, size):
        self._chunks = chunks
        self._size = size

    def __iter__(self):
        return iter(self._chunks)

    def __len__(self):
        return self._size


class GlanceClient:
    """Glance v2 at ``base_url`` (e.g. ``http://host:8774/image`` or
    ``http://glance:9292``; ``/v2/...`` is appended).

    ``timeout``: seconds to connect, and seconds any read may wait for a
    byte (a transfer that moves stays alive however long it takes).
    """

    def __init__(self, base_url, *, grant=None, session=None, token=None,
                 timeout=DEFAULT_TIMEOUT, chunk_size=DEFAULT_CHUNK):
        self.base_url = base_url.rstrip('/')
        self.grant = grant
        self.token = token
        self.session = session
        self.timeout = timeout
        self.chunk_size = chunk_size
        self._http = requests.Session() if session is None else None

    # --- plumbing -----------------------------------------------------------------

    def _url(self, *parts):
        return '/'.join((self.base_url, 'v2', *parts))

    def _request(self, method, url, *, what, image=None, headers=None,
                 transfer=False, **kwargs):
        """``transfer``: the body or the answer is image data (never
        logged by keystoneauth)."""
        headers = dict(headers or {})
        if self.grant:
            headers[GRANT_HEADER] = self.grant
        if self.token:
            headers['X-Auth-Token'] = self.token
        kwargs.setdefault('timeout', self.timeout)
        try:
            if self.session is not None:
                response = self.session.request(
                    url, method, headers=headers, raise_exc=False,
                    log=not transfer, **kwargs)
            else:
                response = self._http.request(method, url, headers=headers,
                                              **kwargs)
        except (requests.RequestException, OSError) as err:
            raise ImageServiceError(status=None, what=what,
                                    reason=str(err)) from None
        except Exception as err:        # keystoneauth's own errors
            if type(err).__module__.startswith('keystoneauth1'):
                raise ImageServiceError(status=None, what=what,
                                        reason=str(err)) from None
            raise
        if response.status_code >= 400:
            self._raise(response, what, image)
        return response

    @staticmethod
    def _raise(response, what, image):
        status = response.status_code
        message = _message(response)
        response.close()
        if status == 404:
            raise ImageNotFound(image=image or what, reason=message)
        if status in (401, 403):
            kind = ('unauthenticated (401: no valid credentials)'
                    if status == 401 else 'forbidden (403)')
            raise ImageForbidden(image=image or what,
                                 reason='%s on %s: %s' % (kind, what, message))
        raise ImageServiceError(status=status, what=what, reason=message)

    # --- the calls ------------------------------------------------------------------

    def show(self, image_id):
        """The image's record (a dict, as Glance answers it)."""
        return self._request('GET', self._url('images', image_id),
                             what='GET image %s' % image_id,
                             image=image_id).json()

    def download(self, image_id):
        """``(chunks, headers)``: an iterator of the image's bytes, and the
        answer's headers (``Content-MD5``, ``Content-Length``). The
        iterator raises :class:`ImageServiceError` if the connection
        breaks; closing it early closes the connection."""
        what = 'GET image %s data' % image_id
        response = self._request('GET', self._url('images', image_id, 'file'),
                                 what=what, image=image_id, stream=True,
                                 transfer=True)
        if response.status_code == 204:
            response.close()
            raise ImageServiceError(status=204, what=what,
                                    reason='the image has no data')
        return self._chunks(response, what), response.headers

    def _chunks(self, response, what):
        try:
            yield from response.iter_content(self.chunk_size)
        except (requests.RequestException, OSError) as err:
            raise ImageServiceError(status=None, what=what,
                                    reason='transfer broken: %s' % err) from None
        finally:
            response.close()

    def upload(self, image_id, data, size=None):
        """Upload the image's data: a binary file object or an iterator of
        bytes, streamed (chunked unless ``size`` is given)."""
        if hasattr(data, 'read'):
            data = _iter_file(data, self.chunk_size)
        if size is not None:
            data = _Sized(data, size)       # sent with Content-Length
        headers = {'Content-Type': 'application/octet-stream'}
        self._request('PUT', self._url('images', image_id, 'file'),
                      what='PUT image %s data' % image_id, image=image_id,
                      headers=headers, data=data, transfer=True).close()

    def create(self, **fields):
        """Create a (queued) image record; its record."""
        return self._request('POST', self._url('images'),
                             what='POST image', json=fields).json()

    def update(self, image_id, changes):
        """Apply a JSON patch (a list of ``{"op", "path", "value"}``)."""
        return self._request(
            'PATCH', self._url('images', image_id),
            what='PATCH image %s' % image_id, image=image_id,
            headers={'Content-Type': PATCH_TYPE},
            data=json.dumps(changes)).json()

    def delete(self, image_id):
        self._request('DELETE', self._url('images', image_id),
                      what='DELETE image %s' % image_id,
                      image=image_id).close()

    def list(self, **filters):
        """Every image matching Glance's ``filters`` (``name``, ``status``,
        ``visibility``, ``owner``, ``sort``...), following ``next`` links
        (``limit`` is the page size)."""
        url = self._url('images')
        params = filters
        images = []
        while url:
            body = self._request('GET', url, what='GET images',
                                 params=params).json()
            images.extend(body.get('images', []))
            following = body.get('next')
            if not following:
                break
            # "next" is a path with its query (/v2/images?marker=...).
            url = self.base_url + following[following.index('/v2/'):] \
                if '/v2/' in following else self.base_url + following
            params = None
        return images
