"""The documented limits on input values. Each is far above any legitimate input and low enough
that nothing downstream overflows, becomes NaN or infinite, recurses too deep, or takes time or
memory beyond linear in the input."""

MAX_JSON_DEPTH = 100
"""Nesting of arrays and objects in any JSON document or JSON Lines line (runs and qrels need
2 to 4 levels, manifests a few more). Deeper documents are refused before they are parsed, so
neither the parser nor anything that walks the result (schema validation, canonical JSON) can
recurse too deep."""

MAX_ID_BYTES = 1024
"""Length of a query, item, document or chunk id in UTF-8 bytes. Rankings hold ids in
fixed-width arrays as wide as the longest id they hold, so the limit bounds their memory."""

MIN_GRADE = -100
MAX_GRADE = 100
"""Relevance grades are integers in [MIN_GRADE, MAX_GRADE]: the exponential nDCG gain
2^g − 1 of the largest grade, and any sum of such gains over the judgments a file can hold,
stay finite in float64."""

MAX_CUTOFF = 1_000_000
"""The largest cutoff k of a measure name such as ``nDCG@10``."""

MAX_LATENCY_MS = 1e12
"""The largest ``latency_ms`` of a query in a run (about 31 years). A pipeline's latency is the
sum over its stages, and the cost statistics sum and subtract latencies: bounded so, none of
them can overflow float64 to infinity."""
MAX_SCORE = 1e12
"""A per-query score's largest magnitude: far above any judge's scale (probabilities, Likert
points, token counts) and low enough that squares and sums of squares stay finite."""

MAX_UNPACK_RATIO = 100
MIN_UNPACK_BYTES = 64 << 20
"""What the members of a compressed archive (an inspect_ai ``.eval`` log) may unpack to: each
member at most ``MAX_UNPACK_RATIO`` times its compressed size, the members read together at
most that many times the archive's size, and either never less than ``MIN_UNPACK_BYTES``
(64 MiB). inspect_ai's logs unpack to 3 to 5 times their size (the most compressible member of
the logs it wrote for the tests, 6 times); a sample whose model output loops on one phrase
reaches a few tens, below the floor unless the log is large. DEFLATE's own maximum is 1,032
times, Zstandard's and bzip2's far beyond: without a bound, a 2 MB log unpacked to 2 GiB.
Members are read in chunks and refused as soon as the bound is passed, whatever size their
headers declare, so memory and time stay linear in the archive's size."""
