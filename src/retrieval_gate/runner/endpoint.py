"""An HTTP endpoint as a target: ``--retriever http://host:port/path`` (or ``https://``).

**The request.** One ``POST`` per query to the URL, with ``Content-Type: application/json``
and the body ``{"id": ..., "text": ..., ...}`` — every field of the query's line, as
:attr:`~retrieval_gate.runner.target.RunnerQuery.fields` gives them. Credentials in the URL
(``https://user:secret@host/search``) are sent as HTTP basic authentication, not in the
request line; the query string is sent as given. ``--header "Name: value"`` (repeatable) adds
a header to every request — an API key, a bearer token — (see :func:`parse_headers`); only
the headers' names are recorded, never their values. Redirects are not followed (a ``POST`` that
is redirected would arrive as a ``GET``): a 3xx answer is a failure like any other status that
is not 2xx. Proxies are those of the environment (``https_proxy``, ``no_proxy``), as for
every client built on ``urllib``.

**The hits** are read from the response's JSON body (UTF-8): the body itself when it is a
list; else, with a hits path (``--hits-path a.b.c``), the value its dotted keys lead to (a
list of hits, or a dict of named stages); else the first of ``hits``, ``results`` and
``documents`` that is a list. They are checked by the hit rules of
:mod:`retrieval_gate.runner.hits`, as the result of a Python function is.

**Failures** of a call — retried by ``--retries``, then handled by ``--on-error`` as an
exception of a Python target is — each with one line that says what happened, the server's
words escaped and cut short (a response is untrusted):

- ``HTTP 503: <the start of the body>`` for a status that is not 2xx;
- ``URLError: <reason>`` when no answer came (connection refused, name not resolved, TLS);
- ``TimeoutError: ...`` (and the runner's own ``timed out`` under ``--timeout``);
- ``invalid JSON: ...``, ``not UTF-8: ...``, a body larger than :data:`MAX_BODY_BYTES`, and a
  body where no hits list is found (its kind and first keys named).

The target's identity — what the journal binds to and the manifest records — is the URL
without its credentials, query string and fragment: ``scheme://host:port/path``.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_gate.core.errors import InputError
from retrieval_gate.core.untrusted import capped, visible
from retrieval_gate.formats.jsonfmt import loads
from retrieval_gate.runner.target import RunnerQuery, TargetFailure

SCHEMES = ("http://", "https://")
MAX_BODY_BYTES = 64 << 20  # 64 MiB: the most of a response that is read
MAX_IDENTITY = 1000  # characters of scheme://host:port/path (the manifest's limit)
HIT_KEYS = ("hits", "results", "documents")  # where hits are looked for, in order
SOCKET_SLACK = 1.0  # seconds the socket waits beyond --timeout (the runner's deadline is first)
_EXCERPT = 200  # characters of a server's words quoted in a failure


def is_endpoint(retriever: object) -> bool:
    """Whether ``retriever`` names an HTTP endpoint: a string starting ``http://`` or
    ``https://`` (the scheme in any case)."""
    return isinstance(retriever, str) and retriever[:8].lower().startswith(SCHEMES)


def hits_path_keys(hits_path: str) -> tuple[str, ...]:
    """The keys of a dotted hits path (``data.hits`` → ``("data", "hits")``); InputError naming
    ``--hits-path`` for an empty key or a path longer than 200 characters."""
    keys = tuple(hits_path.split("."))
    if len(hits_path) > 200 or not all(keys):
        raise InputError("--hits-path", f"'{visible(capped(hits_path, 60))}' is not dotted "
                         "keys", "name the keys that lead to the hits list in the response, "
                         "e.g. --hits-path data.hits")
    return keys


@dataclass(frozen=True)
class EndpointTarget:
    """A :class:`~retrieval_gate.runner.target.Target` that posts each query to ``url`` (see
    the module docstring): ``identity`` the URL without credentials or query string,
    ``headers`` sent with every request, ``hits_path`` the keys to the hits (empty: the
    default places), ``timeout`` the socket's timeout in seconds (None: none)."""

    identity: str
    url: str
    headers: tuple[tuple[str, str], ...]
    hits_path: tuple[str, ...]
    timeout: float | None
    batch_size: None = None
    is_async: bool = False
    package: None = None
    library: None = None

    def call(self, queries: Sequence[RunnerQuery]) -> list[Any]:
        return [self.post(queries[0])]

    def post(self, query: RunnerQuery) -> Any:
        """The hits the endpoint returns for ``query`` (a list, or a dict of stages);
        :class:`TargetFailure` (or the network's own ``OSError``) when there are none."""
        body = json.dumps(query.fields, ensure_ascii=False, allow_nan=False).encode("utf-8")
        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers=dict(self.headers))
        try:
            with _OPENER.open(request, timeout=self.timeout) as response:
                data = _body(response)
        except urllib.error.HTTPError as exc:
            raise TargetFailure(f"HTTP {exc.code}: {_excerpt(_error_body(exc))}") from None
        except urllib.error.URLError as exc:
            raise TargetFailure(f"URLError: {_excerpt(str(exc.reason))}") from None
        return self._hits(_document(data))

    def _hits(self, document: Any) -> Any:
        """The hits of a parsed response (see the module docstring)."""
        if isinstance(document, list):
            return document
        if self.hits_path:
            value = document
            for depth, key in enumerate(self.hits_path):
                if not isinstance(value, dict) or key not in value:
                    where = ".".join(self.hits_path[:depth]) or "the response"
                    raise TargetFailure(f"no hits at {'.'.join(self.hits_path)}: {where} is "
                                        f"{_kind(value)} (--hits-path)")
                value = value[key]
            if not isinstance(value, (list, dict)):
                raise TargetFailure(f"no hits at {'.'.join(self.hits_path)}: it is "
                                    f"{_kind(value)}, not a list (--hits-path)")
            return value
        if isinstance(document, dict):
            for key in HIT_KEYS:
                if isinstance(document.get(key), list):
                    return document[key]
        raise TargetFailure(f"no hits list in the response: it is {_kind(document)}, "
                            f"with no list at {', '.join(HIT_KEYS)} (give --hits-path)")


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")  # an HTTP field name (RFC 9110)
_FIXED = ("content-type", "content-length", "host", "transfer-encoding")  # set by the request


def parse_headers(given: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``--header`` values, each ``Name: value``, as (name, value) pairs in the order given.
    The name is an HTTP field name; the value is printable ASCII or Latin-1 (white space
    around it dropped; no control character: a line break would start a header of its own).
    Refused (InputError naming ``--header``, its value never quoted — it may be a secret): a
    value without a colon, a name that is not a field name, ``Content-Type``,
    ``Content-Length``, ``Host`` and ``Transfer-Encoding`` (the request sets them), and a name
    given twice."""
    pairs: list[tuple[str, str]] = []
    for text in given:
        name, colon, value = text.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not _TOKEN.fullmatch(name):
            raise InputError("--header", f"value {len(pairs) + 1} is not Name: value (a field "
                             "name — letters, digits, - — then a colon)", "write --header "
                             "'Authorization: Bearer TOKEN'")
        if name.lower() in _FIXED:
            raise InputError("--header", f"{name} is set by gate run (a JSON POST)",
                             "leave it out")
        if any(ord(c) < 32 and c != "\t" or 127 <= ord(c) < 160 or ord(c) > 255
               for c in value):
            raise InputError("--header", f"the value of {name} holds a control character or "
                             "a character beyond Latin-1", "give the value as it is sent, "
                             "on one line")
        if any(name.lower() == seen.lower() for seen, _ in pairs):
            raise InputError("--header", f"{name} is given twice", "give each header once")
        pairs.append((name, value))
    return tuple(pairs)


def endpoint_target(url: str, hits_path: str | None, timeout: float | None,
                    batch_size: int | None,
                    extra_headers: Sequence[tuple[str, str]] = (),
                    option: str = "--retriever") -> EndpointTarget:
    """The target for ``url`` (see the module docstring), sending ``extra_headers`` too (from
    :func:`parse_headers`; they replace the default ``Accept`` and the URL's basic
    authentication when they name them); InputError naming the option at fault (``option``
    gave the URL) for a URL that is not ``http(s)://host[:port]/path`` in printable ASCII, or
    a batch size (an endpoint is called once per query)."""
    shown = visible(capped(url, 200))
    if batch_size is not None:
        raise InputError("--batch-size", "an HTTP endpoint is called with one query per "
                         "request", "leave out --batch-size (use --concurrency for requests "
                         "at once)")
    if not url.isascii() or any(c <= " " or c == "\x7f" for c in url):
        raise InputError(option, f"the URL {shown} holds white space, a control "
                         "character or a character beyond ASCII", "percent-encode them "
                         "(a space is %20)")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 — raises ValueError for a port that is not a number
    except ValueError as exc:
        raise InputError(option, f"the URL {shown} cannot be read ({capped(str(exc), 80)})",
                         "give http://host:port/path") from None
    host = parts.netloc.rpartition("@")[2]
    if not parts.hostname:
        raise InputError(option, f"the URL {shown} names no host",
                         "give http://host:port/path")
    path = parts.path or "/"
    identity = f"{parts.scheme.lower()}://{host}{path}"
    if len(identity) > MAX_IDENTITY:
        raise InputError(option, f"the URL {shown} is longer than {MAX_IDENTITY} "
                         "characters", "give the endpoint a shorter path")
    headers = [("Content-Type", "application/json"), ("Accept", "application/json")]
    if parts.username is not None:
        secret = (f"{urllib.parse.unquote(parts.username)}:"
                  f"{urllib.parse.unquote(parts.password or '')}")
        headers.append(("Authorization", "Basic " + base64.b64encode(
            secret.encode("utf-8")).decode("ascii")))
    named = {name.lower() for name, _ in extra_headers}
    headers = [h for h in headers if h[0].lower() not in named] + list(extra_headers)
    request_url = urllib.parse.urlunsplit((parts.scheme, host, path, parts.query, ""))
    return EndpointTarget(identity, request_url, tuple(headers),
                          () if hits_path is None else hits_path_keys(hits_path),
                          None if timeout is None else timeout + SOCKET_SLACK)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are not followed: the 3xx answer is raised as an HTTPError."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


def _body(response: http.client.HTTPResponse) -> bytes:
    """The response's body, at most :data:`MAX_BODY_BYTES` (TargetFailure beyond, before
    reading it when its ``Content-Length`` says so)."""
    length = response.headers.get("Content-Length", "")
    if length.isdigit() and int(length) > MAX_BODY_BYTES:
        raise TargetFailure(f"the response is {int(length):,} bytes, more than the "
                            f"{MAX_BODY_BYTES >> 20} MiB gate run reads")
    data = response.read(MAX_BODY_BYTES + 1)
    if len(data) > MAX_BODY_BYTES:
        raise TargetFailure(f"the response is more than the {MAX_BODY_BYTES >> 20} MiB gate "
                            "run reads")
    return data


def _document(data: bytes) -> Any:
    """The JSON value of a response body (strictly parsed: see
    :func:`retrieval_gate.formats.jsonfmt.loads`); TargetFailure for one that is not."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TargetFailure(f"not UTF-8: byte {exc.start} of the response") from None
    try:
        return loads(text, "the response")
    except InputError as exc:
        said = exc.problem if exc.problem.startswith("invalid JSON") else (
            f"invalid JSON: {exc.problem}")
        raise TargetFailure(said + (f" at line {exc.where}" if exc.where else "")
                            + f"; the response starts {_excerpt(text)}") from None


def _error_body(exc: urllib.error.HTTPError) -> str:
    """The start of an error response's body, as text."""
    try:
        return exc.read(4 * _EXCERPT).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return ""
    finally:
        exc.close()


def _excerpt(text: str) -> str:
    """The server's words for a failure's line: the first :data:`_EXCERPT` characters, every
    control character escaped."""
    return visible(capped(text.strip(), _EXCERPT)) or "(empty)"


def _kind(value: Any) -> str:
    """What a JSON value is, for a failure's line: an object's first keys named."""
    if isinstance(value, dict):
        keys = ", ".join(repr(visible(capped(k, 40))) for k in list(value)[:5])
        return f"an object with keys {keys}" if keys else "an empty object"
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")
