"""How much faster is ``gate run --concurrency 16`` than ``--concurrency 1`` against an HTTP
retriever that takes 20 ms to answer?

Run by hand from the project root, with the venv's Python::

    python benchmarks/run_http.py            # --help for the options

A synthetic snapshot is written to a temporary folder (that of ``run_overhead.py``: 2,000
queries by default, a corpus of 1,000 document ids, document unit). The retriever is a real
HTTP server in its own process (the standard library's threading server on a free port of
this machine), which waits ``--latency`` seconds (20 ms) before answering each POST with the
same top 10 hits as JSON — a retriever whose time is all waiting, as a remote one's is.

Timed in this process (wall clock, ``time.perf_counter``), each side --repeat times,
interleaved, the median counting: ``retrieval_gate.run(URL, ...)`` writing a JSON Lines run
and its manifest, with ``concurrency=1`` and with ``concurrency=16``. Printed: each median
with its queries per second, and the throughput ratio. Target (spec): ≥ 10× at concurrency 16.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import retrieval_gate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_overhead import write_snapshot  # from this folder (put first on sys.path above)

TOP = json.dumps({"hits": [{"id": f"d{i}", "score": 10.0 - i} for i in range(10)]}).encode()


def serve(latency: float) -> None:
    """Serve the retriever until killed; the port is printed on the first line of stdout."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(latency)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(TOP)))
            self.end_headers()
            self.wfile.write(TOP)

        def log_message(self, *args: object) -> None:
            pass

    class Server(ThreadingHTTPServer):
        request_queue_size = 128  # the listen backlog: 16 connections at once are not refused

    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def timed_run(url: str, snapshot: Path, output: Path, concurrency: int) -> float:
    """Seconds for ``retrieval_gate.run`` of the endpoint at ``concurrency``."""
    start = time.perf_counter()
    retrieval_gate.run(url, snapshot=snapshot, output=output, commit="none",
                       concurrency=concurrency)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per answer")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency)
        return
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--latency",
                               str(args.latency)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}/search"
        with tempfile.TemporaryDirectory() as temporary:
            folder = Path(temporary)
            snapshot = write_snapshot(folder, args.queries)
            times: dict[int, list[float]] = {1: [], args.concurrency: []}
            for _ in range(args.repeat):
                for concurrency, values in times.items():
                    values.append(timed_run(url, snapshot, folder / "run.jsonl", concurrency))
    finally:
        server.kill()
        server.wait()
    medians = {c: statistics.median(values) for c, values in times.items()}
    print(f"{args.queries:,} queries to a local HTTP retriever answering in "
          f"{args.latency * 1e3:g} ms, median of {args.repeat}:")
    for concurrency, seconds in medians.items():
        print(f"  --concurrency {concurrency:<3} {seconds:8.2f} s   "
              f"{args.queries / seconds:8.1f} queries/s")
    ratio = medians[1] / medians[args.concurrency]
    print(f"target: --concurrency {args.concurrency} ≥ 10× the throughput of --concurrency 1: "
          f"×{ratio:.1f} — {'PASS' if ratio >= 10 else 'FAIL'}")


if __name__ == "__main__":
    main()
