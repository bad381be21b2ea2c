"""A PostgreSQL location as it may be shown: the connection parameters as libpq reads
them, with every password taken out.

Redaction works on the parsed parameters, never on the text: ``?pass%77ord=SECRET`` is a
``password`` parameter to libpq (names are percent-decoded), and a pattern over the text
missed it (issue 25: ``store.location`` and ``hivemem doctor`` printed SECRET). The shown
location is built again from the parsed parameters, so nothing of the given text that was
not understood can leak through. The parse is libpq's own (``psycopg.conninfo``) where the
driver is installed, else the URL's (``urllib``, names and values decoded).
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, quote, unquote, urlsplit


def is_secret(name: str) -> bool:
    """Whether the (decoded) parameter ``name`` holds a secret: libpq's ``password``, the
    SSL key's ``sslpassword``, and whatever else says password in any case."""
    return "password" in name.lower()


_IN_AUTHORITY = ("user", "password", "host", "port", "dbname")
_KEYWORD = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']*)")
UNREADABLE = "postgresql://(a connection string that cannot be read; not shown)"


def parameters(location: str) -> dict[str, str] | None:
    """The connection parameters of ``location`` (a ``postgresql://`` URL or a libpq
    ``key=value`` string), names decoded; None when it cannot be read at all."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:  # no driver: the URL's own parse
        return _parsed(location)
    try:
        return {k: str(v) for k, v in conninfo_to_dict(location).items() if v is not None}
    except Exception:  # psycopg.ProgrammingError: a parameter libpq does not know, …
        return _parsed(location)


def redact(location: str) -> str:
    """``location`` as every message, log line and ``store.location`` shows it: a URL
    built from its parsed parameters, each password ``***``."""
    params = parameters(location)
    if params is None:
        return UNREADABLE
    scheme = "postgres" if location.lower().startswith("postgres://") else "postgresql"
    user = params.get("user", "")
    auth = quote(user, safe="") + (":***" if params.get("password") else "")
    hosts = params.get("host", "")
    in_query = {k: v for k, v in params.items() if k not in _IN_AUTHORITY}
    netloc = auth + "@" if auth else ""
    if "/" in hosts:  # a socket folder: a parameter, not a host
        front = {k: params[k] for k in ("host", "port") if params.get(k)}
        in_query = {**front, **in_query}
    else:
        ports = params.get("port", "").split(",")
        pieces = []
        for i, host in enumerate(hosts.split(",") if hosts else []):
            shown = f"[{host}]" if ":" in host else quote(host, safe=".-_~")
            port = ports[i] if i < len(ports) else ports[-1]
            pieces.append(f"{shown}:{quote(port, safe='')}" if port else shown)
        if not pieces and params.get("port"):
            pieces.append(f":{quote(params['port'], safe='')}")
        netloc += ",".join(pieces)
    path = "/" + quote(params["dbname"], safe="") if params.get("dbname") else "/"
    query = "&".join(
        f"{quote(k, safe='')}={'***' if is_secret(k) else quote(v, safe='/:,')}"
        for k, v in in_query.items()
    )
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def secrets_of(location: str) -> list[str]:
    """Every password ``location`` holds (libpq's, and one it would ignore, e.g. the
    authority's when a parameter names another), decoded and as written, and the
    environment's ``PGPASSWORD``: to scrub from any server message that echoes one."""
    found: set[str] = set()
    for params in (parameters(location), _parsed(location)):
        found |= {v for k, v in (params or {}).items() if is_secret(k) and v}
    try:
        parts = urlsplit(location)
        if parts.password:
            found |= {parts.password, unquote(parts.password)}
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if is_secret(name) and value:
                found.add(value)
    except ValueError:
        pass
    found |= {quote(s, safe="") for s in found}
    if os.environ.get("PGPASSWORD"):
        found.add(os.environ["PGPASSWORD"])
    return sorted((s for s in found if s), key=lambda s: (-len(s), s))


def _parsed(location: str) -> dict[str, str] | None:
    """The parameters as the URL (or ``key=value`` string) reads without libpq: names
    and values percent-decoded; None when it is neither."""
    if "://" not in location:
        found = {k: _unquoted(v) for k, v in _KEYWORD.findall(location)}
        return found or None
    try:
        parts = urlsplit(location)
        out: dict[str, str] = {}
        auth, _, hosts = parts.netloc.rpartition("@")
        user, has_password, password = auth.partition(":")
        if user:
            out["user"] = unquote(user)
        if has_password and password:
            out["password"] = unquote(password)
        host_list, port_list = [], []
        for piece in hosts.split(",") if hosts else []:
            host, port = piece, ""
            if ":" in piece and not piece.endswith("]"):
                host, _, port = piece.rpartition(":")
            host_list.append(unquote(host.strip("[]")))
            port_list.append(port)
        if any(host_list):
            out["host"] = ",".join(host_list)
        if any(port_list):
            out["port"] = ",".join(port_list)
        if parts.path.strip("/"):
            out["dbname"] = unquote(parts.path.lstrip("/"))
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            out[name] = value
        return out
    except ValueError:
        return None


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value
