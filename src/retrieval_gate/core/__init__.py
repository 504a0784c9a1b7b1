"""Layer 1, the core: the data model (queries, judgments, runs, rankings, stages), error types
and exit codes, safe printing of untrusted text, and small containers. Imports nothing else
of the package."""
