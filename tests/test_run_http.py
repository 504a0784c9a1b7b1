"""``gate run --retriever http://...``: the gate posts each frozen query to an HTTP endpoint.
Every test runs the command line against a real server on this machine (the standard
library's threading HTTP server on a free port), serving the rankings of
``tests/test_run.py``'s retriever over its snapshot, with latency, errors and odd bodies
injected by the path asked."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import gate
from tests.test_run import QUERIES, RANKED, lines, module, run, without_latency, world

Reply = tuple[int, bytes]  # (status, body)


def _hits(qid: str) -> list[dict]:
    return [{"id": d, "score": 10.0 - i} for i, d in enumerate(RANKED[qid])]


def _json(value: object) -> Reply:
    return 200, json.dumps(value).encode()


class Server:
    """The endpoint: what it was sent, and how each path answers a query (see ``ROUTES``)."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict, dict]] = []  # (path, headers, body)
        self.calls: dict[tuple[str, str], int] = {}
        self.lock = threading.Lock()

    def answer(self, path: str, query: dict) -> Reply:
        with self.lock:
            seen = self.calls.get((path, query["id"]), 0)
            self.calls[path, query["id"]] = seen + 1
        return ROUTES[path.partition("?")[0]](query, seen)


def _sleepy(query: dict, _: int) -> Reply:
    time.sleep(5 if query["id"] == "q3" else 0)
    return _json(_hits(query["id"]))


LATE = {"q1": 0.06, "q2": 0.0, "u1": 0.04, "q3": 0.02, "q4": 0.0}  # seconds


def _late(query: dict, _: int) -> Reply:
    time.sleep(LATE[query["id"]])  # the answers come out of order at --concurrency
    return _json({"hits": _hits(query["id"]), "took_ms": 3})


ROUTES: dict[str, Callable[[dict, int], Reply]] = {
    "/search": lambda q, _: _json(_hits(q["id"])),
    "/late": _late,
    "/results": lambda q, _: _json({"count": 3, "hits": "none", "results": _hits(q["id"]),
                                    "documents": []}),
    "/nested": lambda q, _: _json({"data": {"page": {"rows": _hits(q["id"])}}}),
    "/stages": lambda q, _: _json({"out": {"candidates": _hits(q["id"]),
                                           "context": _hits(q["id"])[:2]}}),
    "/flaky": lambda q, seen: ((503, b"overloaded\n\x1b[31mretry later")
                               if q["id"] == "q2" and seen < 2 else _json(_hits(q["id"]))),
    "/sleepy": _sleepy,
    "/invalid": lambda q, _: (200, b"<html>\x1b[2J oops") if q["id"] == "q2"
    else _json(_hits(q["id"])),
    "/nohits": lambda q, _: _json({"answer": "42", "ids": "d1"}) if q["id"] == "q2"
    else _json(_hits(q["id"])),
    "/unknown": lambda q, _: _json([{"id": "nope", "score": 1}]),
    "/huge": lambda q, _: (200, b"[" + b" " * (64 << 20) + b"]"),
    "/large": lambda q, _: (200, b"[" + b" " * (64 << 20) + b"]"),
}


@pytest.fixture
def endpoint() -> Iterator[tuple[str, Server]]:
    """A server on a free port of this machine: its base URL and its record of requests."""
    state = Server()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.received.append((self.path, dict(self.headers), body))
            status, data = state.answer(self.path, body)
            self.send_response(status)
            if not self.path.startswith("/huge"):  # a body whose end is the connection's
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", state
    server.shutdown()
    server.server_close()


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    world(tmp_path)
    return tmp_path


def post(folder: Path, url: str, *args: str, output: str = "run.jsonl"
         ) -> tuple[int, str, str]:
    return gate("run", "--snapshot", folder / "snapshot.json", "--retriever", url,
                "-o", folder / output, "--commit", "none", *args)


def runner_of(run_file: Path) -> dict:
    manifest = json.loads(Path(f"{run_file}.manifest.json").read_text())
    return manifest["provenance"]["runner"]


def test_each_query_is_posted_and_the_run_is_the_python_function_s(
        here: Path, endpoint: tuple[str, Server]) -> None:
    """The endpoint that returns what tests/test_run.py's function returns gives the same run
    file, byte for byte but the latencies; gate check judges it."""
    url, server = endpoint
    code, out, err = post(here, f"{url}/search")
    assert code == 0, err
    assert "run.jsonl: run of 5 queries" in out
    assert run(here, "search", output="python.jsonl")[0] == 0
    assert without_latency(here / "run.jsonl") == without_latency(here / "python.jsonl")
    sent = sorted(server.received, key=lambda r: r[2]["id"])
    assert [body["id"] for _, _, body in sent] == sorted(q for q, _, _ in QUERIES)
    path, headers, body = sent[0]
    assert path == "/search" and headers["Content-Type"] == "application/json"
    assert body == {"id": "q1", "text": "alpha", "tags": ["t"], "answerable": True,
                    "facts": None, "scope": None, "as_of": None, "custom": {"k": "q1"}}
    assert runner_of(here / "run.jsonl")["target"] == f"{url}/search"
    assert "package" not in runner_of(here / "run.jsonl")
    code, out, err = gate("check", "--snapshot", here / "snapshot.json", "--baseline",
                          here / "python.jsonl", "--candidate", here / "run.jsonl",
                          "--no-config", "--gate", "Recall@3=0.1")
    assert code == 0, out + err


def test_concurrent_requests_give_the_same_run(here: Path,
                                               endpoint: tuple[str, Server]) -> None:
    url, _ = endpoint
    texts = []
    for options in ((), ("--concurrency", "4"), ("--concurrency", "4", "--timeout", "30")):
        code, _, err = post(here, f"{url}/late", *options)
        assert code == 0, err
        texts.append(without_latency(here / "run.jsonl"))
    assert len(set(texts)) == 1
    latencies = {w["query_id"]: w["latency_ms"] for w in lines(here / "run.jsonl")}
    assert latencies["q1"] >= 60 and latencies["u1"] >= 40  # the server's time is the call's


def test_hits_are_read_from_results_or_where_the_hits_path_points(
        here: Path, endpoint: tuple[str, Server]) -> None:
    url, _ = endpoint
    assert post(here, f"{url}/search", output="plain.jsonl")[0] == 0
    assert post(here, f"{url}/results")[0] == 0  # "hits" is no list: "results" is
    assert without_latency(here / "run.jsonl") == without_latency(here / "plain.jsonl")
    code, _, err = post(here, f"{url}/nested", "--hits-path", "data.page.rows")
    assert code == 0, err
    assert without_latency(here / "run.jsonl") == without_latency(here / "plain.jsonl")
    assert runner_of(here / "run.jsonl")["settings"]["hits_path"] == "data.page.rows"
    code, _, err = post(here, f"{url}/nested", "--hits-path", "data.rows")
    assert code == 2
    assert ("query 'q1' failed: no hits at data.rows: data is an object with keys 'page' "
            "(--hits-path)") in err
    code, _, err = post(here, f"{url}/nested")
    assert code == 2 and ("query 'q1' failed: no hits list in the response: it is an object "
                          "with keys 'data', with no list at hits, results, documents (give "
                          "--hits-path)") in err


def test_a_hits_path_may_lead_to_named_stages(here: Path, endpoint: tuple[str, Server]
                                              ) -> None:
    url, _ = endpoint
    code, _, err = post(here, f"{url}/stages", "--hits-path", "out")
    assert code == 0, err
    assert (here / "run.candidates.jsonl").exists()
    assert lines(here / "run.jsonl")[0]["items"] == _hits("q1")[:2]


def test_a_failing_status_is_retried_then_fails_with_its_status_and_body(
        here: Path, endpoint: tuple[str, Server]) -> None:
    url, server = endpoint
    code, _, err = post(here, f"{url}/flaky", "--retries", "1")
    assert code == 2 and not (here / "run.jsonl").exists()
    assert (f"error: {url}/flaky: query 'q2' failed 2 times: HTTP 503: overloaded\\n\\x1b[31m"
            "retry later — fix the retriever") in err
    assert "\x1b" not in err and len(err.splitlines()) == 1
    assert server.calls["/flaky", "q2"] == 2
    code, _, err = post(here, f"{url}/flaky", "--retries", "2", "--resume")
    assert code == 0, err
    assert server.calls["/flaky", "q2"] == 3 and server.calls["/flaky", "q1"] == 1


def test_a_request_that_overruns_its_timeout_has_failed(
        here: Path, endpoint: tuple[str, Server]) -> None:
    url, _ = endpoint
    started = time.monotonic()
    code, _, err = post(here, f"{url}/sleepy", "--timeout", "0.5")
    assert code == 2 and "query 'q3' failed: timed out: no answer within 0.5 s" in err
    assert time.monotonic() - started < 4


@pytest.mark.parametrize(("path", "said"), [
    ("/invalid", ("query 'q2' failed: invalid JSON (Expecting value, column 1) "
                 "at line 1; the response starts <html>\\x1b[2J oops")),
    ("/nohits", ("query 'q2' failed: no hits list in the response: it is an object with keys "
                "'answer', 'ids'")),
    ("/huge", "query 'q1' failed: the response is more than the 64 MiB gate run reads"),
    ("/large", ("query 'q1' failed: the response is 67,108,866 bytes, more than the 64 MiB "
               "gate run reads")),
])
def test_a_body_without_hits_is_a_failed_call(here: Path, endpoint: tuple[str, Server],
                                             path: str, said: str) -> None:
    url, _ = endpoint
    code, _, err = post(here, url + path)
    assert code == 2 and said in err, err
    assert "\x1b" not in err and len(err.splitlines()) == 1


def test_failed_requests_are_recorded_under_on_error_record(
        here: Path, endpoint: tuple[str, Server]) -> None:
    url, _ = endpoint
    world(here / "zero", missing="zero")
    code, _out, err = gate("run", "--snapshot", here / "zero" / "snapshot.json", "--retriever",
                          f"{url}/invalid", "-o", here / "run.jsonl", "--commit", "none",
                          "--on-error", "record")
    assert code == 0, err
    assert [w["query_id"] for w in lines(here / "run.jsonl")] == ["q1", "u1", "q3", "q4"]
    failed = runner_of(here / "run.jsonl")["failed"]
    assert [f["query_id"] for f in failed] == ["q2"]
    assert failed[0]["error"].startswith("invalid JSON (Expecting value, column 1) at line 1")


def test_no_server_is_a_failed_call(here: Path) -> None:
    code, _, err = post(here, "http://127.0.0.1:9/search")  # the discard port: nothing listens
    assert code == 2 and "query 'q1' failed: URLError: [Errno 111] Connection refused" in err


def test_hits_outside_the_snapshot_are_refused_as_a_function_s_are(
        here: Path, endpoint: tuple[str, Server]) -> None:
    url, _ = endpoint
    code, _, err = post(here, f"{url}/unknown")
    assert code == 2
    assert (f"error: {url}/unknown: query 'q1' returned [{{'id': 'nope', 'score': 1}}]: hit 1 "
            "names document 'nope', which is not in the snapshot's corpus") in err


def test_the_manifest_and_the_journal_name_the_url_without_credentials_or_query(
        here: Path, endpoint: tuple[str, Server]) -> None:
    url, server = endpoint
    secret = url.replace("http://", "http://me:s%3Acret@") + "/search?key=s3cret#frag"
    code, _, err = post(here, secret)
    assert code == 0, err
    path, headers, _ = server.received[0]
    assert path == "/search?key=s3cret"
    assert headers["Authorization"] == "Basic bWU6czpjcmV0"  # me:s:cret
    assert runner_of(here / "run.jsonl")["target"] == f"{url}/search"
    assert "s3cret" not in (here / "run.jsonl.manifest.json").read_text()
    # the journal is bound to the URL: another endpoint's answers are not resumed
    code, _, err = post(here, f"{url}/unknown")
    assert code == 2 and (here / "run.jsonl.journal").exists() is False
    code, _, err = post(here, f"{url}/flaky")
    assert code == 2 and (here / "run.jsonl.journal").exists()
    code, _, err = post(here, f"{url}/search", "--resume")
    assert code == 2 and f"the journal belongs to another run: target {url}/flaky" in err


@pytest.mark.parametrize(("args", "said"), [
    (("--retriever", "http:///search"), "--retriever: the URL http:///search names no host"),
    (("--retriever", "http://host:port/x"), ("--retriever: the URL http://host:port/x cannot be "
                                           "read")),
    (("--retriever", "http://h/a b"), "the URL http://h/a b holds white space"),
    (("--retriever", "http://h/x", "--batch-size", "2"), ("--batch-size: an HTTP endpoint is "
                                                        "called with one query per request")),
    (("--retriever", "http://h/x", "--hits-path", "a..b"), ("--hits-path: 'a..b' is not dotted "
                                                           "keys")),
    (("--retriever", "MODULE:search", "--hits-path", "a"), ("--hits-path: applies to an HTTP "
                                                           "endpoint only")),
    (("--retriever", "MODULE:search", "--header", "X-Key: 1"), ("--header: applies to an HTTP "
                                                               "endpoint only")),
    (("--retriever", "http://h/x", "--header", "Bearer s3cret"), ("--header: value 1 is not "
                                                                 "Name: value")),
    (("--retriever", "http://h/x", "--header", "A: 1", "--header", "X Key: s3cret"),
     "--header: value 2 is not Name: value"),
    (("--retriever", "http://h/x", "--header", "Content-Type: text/plain"),
     "--header: Content-Type is set by gate run"),
    (("--retriever", "http://h/x", "--header", "X-Key: s3cret\r\nHost: evil"),
     "--header: the value of X-Key holds a control character"),
    (("--retriever", "http://h/x", "--header", "x-key: 1", "--header", "X-Key: 2"),
     "--header: X-Key is given twice"),
])
def test_bad_endpoint_options_are_refused(here: Path, args: tuple[str, ...], said: str
                                          ) -> None:
    given = [a.replace("MODULE", module(here)) for a in args]
    code, _, err = gate("run", "--snapshot", here / "snapshot.json", *given,
                        "-o", here / "run.jsonl")
    assert code == 2 and said in err, err
    assert "s3cret" not in err  # a header's value may be a secret: never quoted
    assert not (here / "run.jsonl").exists() and not (here / "run.jsonl.journal").exists()


def test_headers_are_sent_with_every_request_and_recorded_by_name_only(
        here: Path, endpoint: tuple[str, Server]) -> None:
    """--header adds a header to every request (replacing the default Accept and the URL's
    basic authentication when it names them); the manifest and journal hold its name, not its
    value."""
    url, server = endpoint
    with_user = url.replace("http://", "http://me:pw@")
    code, _, err = post(here, f"{with_user}/search", "--header", "Authorization: Bearer s3cret",
                        "--header", "X-Tenant:  acme  ", "--header", "Accept: application/x")
    assert code == 0, err
    assert len(server.received) == len(QUERIES)
    for _, headers, _ in server.received:
        assert headers["Authorization"] == "Bearer s3cret"
        assert headers["X-Tenant"] == "acme" and headers["Accept"] == "application/x"
        assert headers["Content-Type"] == "application/json"
    runner = runner_of(here / "run.jsonl")
    assert runner["settings"]["headers"] == ["Authorization", "X-Tenant", "Accept"]
    assert "s3cret" not in (here / "run.jsonl.manifest.json").read_text()


def test_an_endpoint_is_the_first_of_chained_stages(here: Path,
                                                    endpoint: tuple[str, Server]) -> None:
    """``--stage candidates=URL``: the endpoint is posted the query, as ``--retriever``'s is;
    the next stage gets its hits; a failed request fails the query's chain, naming the
    stage."""
    url, _ = endpoint
    snapshot = world(here / "pipeline", stages=("candidates", "context"))
    (here / "rerank_over_http.py").write_text("def top(query, hits):\n    return hits[:1]\n")

    def chained(path: str, *args: str) -> tuple[int, str, str]:
        return gate("run", "--snapshot", snapshot, "--stage", f"candidates={url}{path}",
                    "--stage", "context=rerank_over_http:top", "-o", here / "run.jsonl",
                    "--commit", "none", *args)

    code, _, err = chained("/nested?page=1", "--hits-path", "data.page.rows")
    assert code == 0, err
    assert [r["items"] for r in lines(here / "run.candidates.jsonl")] == [
        _hits(q) for q, _, _ in QUERIES]
    assert [r["items"] for r in lines(here / "run.jsonl")] == [_hits(q)[:1] for q, _, _ in QUERIES]
    runner = runner_of(here / "run.jsonl")
    assert runner["target"] == f"candidates={url}/nested, context=rerank_over_http:top"
    assert runner["settings"]["hits_path"] == "data.page.rows" and runner["latency"] == "stage"
    code, _, err = chained("/flaky")
    assert code == 2 and "query 'q2' failed: stage 'candidates': HTTP 503: overloaded" in err


def test_resume_refuses_a_journal_of_another_query_string_or_header(
        here: Path, endpoint: tuple[str, Server]) -> None:
    """The journal holds a hash of what a request carries beyond the endpoint's identity (its
    query string, every header): another index or tenant is not resumed; the manifest holds
    no hash of it, and no code hash (an endpoint's code is not here)."""
    url, _ = endpoint
    code, _, err = post(here, f"{url}/flaky?index=idx41")
    assert code == 2 and "1 answered query is kept in" in err
    for other in (("?index=idx42",), ("?index=idx41", "--header", "X-Tenant: tenant9z")):
        code, _, err = post(here, f"{url}/flaky{other[0]}", *other[1:], "--resume")
        assert code == 2 and "the journal belongs to another run: request sha256:" in err
        assert "idx4" not in err and "tenant9z" not in err
    code, _, err = post(here, f"{url}/flaky?index=idx41", "--resume", "--retries", "2")
    assert code == 0, err
    runner = runner_of(here / "run.jsonl")
    assert "code" not in runner and "request" not in runner


def test_resume_refuses_a_journal_read_with_another_hits_path(
        here: Path, endpoint: tuple[str, Server]) -> None:
    url, _ = endpoint
    code, _, err = post(here, f"{url}/flaky")  # q2 fails once: q1's answer is journaled
    assert code == 2 and "1 answered query is kept in" in err
    code, _, err = post(here, f"{url}/flaky", "--hits-path", "hits", "--resume")
    assert code == 2
    assert "the journal belongs to another run: hits_path None (this run: hits)" in err
    code, out, err = post(here, f"{url}/flaky", "--resume", "--retries", "1")
    assert code == 0 and "(4 queries called in" in out, err
