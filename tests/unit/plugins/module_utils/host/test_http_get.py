# -*- coding: utf-8 -*-
"""host/http_get: GET only, bounded, http(s) only, redirects only to the same origin (issue 48)."""

from __future__ import annotations

import http.server
import threading

import pytest

from ansible_collections.ckptio.nfs.plugins.module_utils.host import http_get


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 pylint: disable=invalid-name
        if self.path.startswith("/elsewhere"):
            self._redirect("http://example.invalid:9090/api/v1/query_range")
        elif self.path.startswith("/moved"):
            self._redirect("http://%s:%d/answer?x=1" % self.server.server_address)
        elif self.path.startswith("/big"):
            self._send(200, b"x" * 5000)
        elif self.path.startswith("/bad"):
            self._send(400, b'{"status":"error","errorType":"bad_data"}')
        elif self.path.startswith("/slow"):
            threading.Event().wait(2)
            self._send(200, b"late")
        else:
            self._send(200, ("%s %s" % (self.command, self.path)).encode())

    def do_POST(self):  # noqa: N802 pylint: disable=invalid-name
        self._send(405, b"no")

    def _redirect(self, where):
        self.send_response(302)
        self.send_header("Location", where)
        self.end_headers()

    def _send(self, code, body):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


@pytest.fixture(scope="module")
def base():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_get_with_its_parameters(base):
    assert http_get.get(base + "/api/v1/query_range", {"query": 'a{b="c"}', "step": "15"}) == (
        200, "GET /api/v1/query_range?query=a%7Bb%3D%22c%22%7D&step=15")


def test_an_error_status_returns_its_body(base):
    assert http_get.get(base + "/bad") == (400, '{"status":"error","errorType":"bad_data"}')


def test_a_redirect_to_the_same_origin_is_followed_and_to_another_host_refused(base):
    assert http_get.get(base + "/moved") == (200, "GET /answer?x=1")
    with pytest.raises(http_get.HttpRefused, match="redirected to http://example.invalid:9090/api/v1/query_range, another host"):
        http_get.get(base + "/elsewhere")


def test_an_answer_over_the_bound_is_refused_not_cut(base):
    with pytest.raises(http_get.HttpRefused, match="larger than 4096 bytes"):
        http_get.get(base + "/big", limit=4096)
    assert len(http_get.get(base + "/big", limit=5000)[1]) == 5000


def test_a_timeout_is_an_error_naming_the_url(base):
    with pytest.raises(http_get.HttpRefused, match="/slow"):
        http_get.get(base + "/slow", timeout=0.3)


@pytest.mark.parametrize("url, why", [
    ("file:///etc/passwd", "only http and https URLs are read, not 'file'"),
    ("ftp://host/x", "not 'ftp'"),
    ("prometheus:9090", "only http and https"),
    ("http:///api", "names no host"),
    ("http://user:secret@host:9090", "credentials in the URL are not sent"),
])
def test_only_http_urls_with_a_host_and_no_credentials(url, why):
    with pytest.raises(http_get.HttpRefused, match=why.replace("(", r"\(")):
        http_get.get(url)


def test_a_closed_port_is_an_error_naming_the_url():
    with pytest.raises(http_get.HttpRefused, match="http://127.0.0.1:1"):
        http_get.get("http://127.0.0.1:1/api", timeout=2)
