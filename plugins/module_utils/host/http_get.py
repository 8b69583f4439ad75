# -*- coding: utf-8 -*-
# Copyright: ckptio.nfs contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one HTTP reader (issue 48: the Prometheus HTTP API), GET only, on the controller.

Bounded like file_read: an answer larger than `limit` bytes is refused, not cut; a timeout on every request;
http and https only; a redirect is followed only to the same scheme, host and port (a proxy or load balancer
that moves the API path), never to another host, which would get the query. The caller words the message with
its option names: every failure is an HttpRefused naming the URL and why.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request

DEFAULT_TIMEOUT = 30.0
DEFAULT_LIMIT = 64 * 1024 * 1024
SCHEMES = ("http", "https")


class HttpRefused(OSError):
    """A request that was not made or whose answer was not read; the message names the URL."""


def check_url(url):
    """(scheme, netloc) of an http(s) URL with a host; HttpRefused otherwise (nothing is sent)."""
    parts = urllib.parse.urlsplit(str(url))
    if parts.scheme not in SCHEMES:
        raise HttpRefused("%s: only http and https URLs are read, not %r" % (url, parts.scheme or "no scheme"))
    if not parts.hostname:
        raise HttpRefused("%s: the URL names no host" % url)
    if parts.username or parts.password:
        raise HttpRefused("%s: credentials in the URL are not sent (they would be logged with the query)" % url)
    return parts.scheme, parts.netloc


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to the first URL's scheme, host and port."""

    def __init__(self, origin):
        self.origin = origin

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        parts = urllib.parse.urlsplit(newurl)
        if (parts.scheme, parts.netloc) != self.origin:
            raise HttpRefused("%s: redirected to %s, another host: not followed" % (req.full_url, newurl))
        return urllib.request.HTTPRedirectHandler.redirect_request(self, req, fp, code, msg, headers, newurl)


def get(url, params=None, timeout=DEFAULT_TIMEOUT, limit=DEFAULT_LIMIT):
    """(status, body text) of GET url?params; HttpRefused naming the URL for a refused URL, a network error, a
    timeout, or a body over limit. An HTTP error status returns its body too (Prometheus explains a bad query there)."""
    origin = check_url(url)
    full = url + ("?" + urllib.parse.urlencode(params) if params else "")
    opener = urllib.request.build_opener(_SameOrigin(origin))
    request = urllib.request.Request(full, method="GET", headers={"Accept": "application/json"})
    try:
        response = opener.open(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        response = exc
    except HttpRefused:
        raise
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise HttpRefused("%s: %s" % (url, getattr(exc, "reason", None) or exc))
    try:
        body = response.read(limit + 1)
    except OSError as exc:
        raise HttpRefused("%s: reading the answer failed: %s" % (url, exc))
    finally:
        response.close()
    if len(body) > limit:
        raise HttpRefused("%s: the answer is larger than %d bytes: not read" % (url, limit))
    return response.getcode() if hasattr(response, "getcode") else response.code, body.decode("utf-8", "replace")
