"""The inspector on ``serve-http --workers 2``: real processes, a real socket. A browser
signs in once, then its requests, each on a new connection, land on both workers (the
kernel spreads connections over the workers' ``SO_REUSEPORT`` sockets; which worker
accepted each connection is read from ``/proc``), and every one of them, pages and
CSRF-protected actions alike, is served as that browser. A restart of the server keeps
the session; a sign-out through one worker ends it on both. On a SQLite file and on
PostgreSQL."""

from __future__ import annotations

import http.client
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest

import hivemem
from test_http_workers import _children, _start, _stop, _token

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc to tell the workers apart"
)

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            link = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[8:-1]))
    return inodes


def _accepted_by(workers: list[int], server_port: int, client_port: int) -> int:
    """The worker holding the server side of the connection from ``client_port``."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], int(fields[9])
        if int(local.split(":")[1], 16) == server_port and (
            int(remote.split(":")[1], 16) == client_port
        ):
            owners = [pid for pid in workers if inode in _socket_inodes(pid)]
            assert len(owners) == 1, (owners, workers)
            return owners[0]
    raise AssertionError(f"no connection from port {client_port}")


class Browser:
    """A browser that opens a new connection for every request and remembers cookies
    and which worker answered."""

    def __init__(self, base: str, workers: list[int]) -> None:
        self.port = int(base.rsplit(":", 1)[1])
        self.workers = workers
        self.cookies: dict[str, str] = {}
        self.served: list[tuple[str, int, int]] = []  # (request, worker, status)

    def request(self, method: str, path: str, form: dict[str, str] | None = None) -> tuple:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.connect()
            headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
            body = None
            if form is not None:
                body = urlencode(form)
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            text = response.read().decode()
            worker = _accepted_by(self.workers, self.port, conn.sock.getsockname()[1])
            for header, value in response.getheaders():
                if header.lower() == "set-cookie":
                    name, _, rest = value.partition("=")
                    cookie = rest.split(";")[0]
                    if cookie in ("", '""') or "max-age=0" in value.lower():
                        self.cookies.pop(name, None)
                    else:
                        self.cookies[name] = cookie
            self.served.append((f"{method} {path}", worker, response.status))
            return response.status, text, response.getheader("location")
        finally:
            conn.close()


@pytest.fixture(params=["sqlite", "postgres"])
def database(request, tmp_path):
    if request.param == "sqlite":
        return tmp_path / "m.db"
    return request.getfixturevalue("pg_url")


def test_the_inspector_on_two_workers_signs_in_once_for_both(database):
    auth = _token(database)  # write on scope "a"
    token = auth["Authorization"].split()[1]
    with hivemem.open(database, embedder="hash") as store:
        memory_id = store.scope("a").save("the lighthouse keeper logs the tide").id
    server, base = _start(database, "--workers", "2")
    try:
        workers = _children(server.pid)
        assert len(workers) == 2
        browser = Browser(base, workers)
        status, form, _ = browser.request("GET", "/ui/login")
        assert status == 200
        login = {"token": token, "csrf": CSRF.search(form)[1]}
        status, _, where = browser.request("POST", "/ui/login", login)
        assert (status, where) == (303, "/ui/"), browser.served
        page = f"/ui/scopes/a/memories/{memory_id}"
        # pages and CSRF-protected actions on new connections, until each worker has
        # served both (the kernel picks the worker by the connection's ports)
        done: set[tuple[int, str]] = set()
        for _ in range(60):
            status, text, _ = browser.request("GET", page)
            assert status == 200 and "the lighthouse keeper" in text, browser.served[-1]
            done.add((browser.served[-1][1], "page"))
            status, _, where = browser.request(
                "POST", f"{page}/confirm", {"csrf": CSRF.search(text)[1]}
            )
            assert status == 303 and where.endswith("?done=confirm"), browser.served[-1]
            done.add((browser.served[-1][1], "action"))
            if len(done) == 4:
                break
        assert done == {(w, kind) for w in workers for kind in ("page", "action")}, browser.served
    finally:
        assert _stop(server) == 0
    # a restart keeps the session; a sign-out through one worker ends it on both
    server, base = _start(database, "--workers", "2")
    try:
        workers = _children(server.pid)
        browser.workers, browser.port = workers, int(base.rsplit(":", 1)[1])
        status, text, _ = browser.request("GET", "/ui/")
        assert status == 200, browser.served[-1]
        held = browser.cookies["hivemem_ui"]
        status, _, _ = browser.request("POST", "/ui/logout", {"csrf": CSRF.search(text)[1]})
        assert status == 303 and "hivemem_ui" not in browser.cookies  # dropped by the server
        browser.cookies["hivemem_ui"] = held  # ... and sent again anyway
        refused: set[int] = set()
        for _ in range(60):
            status, _, where = browser.request("GET", "/ui/")
            assert (status, where) == (303, "/ui/login?next=/ui/"), browser.served[-1]
            refused.add(browser.served[-1][1])
            if refused == set(workers):
                break
        assert refused == set(workers), browser.served
    finally:
        assert _stop(server) == 0
