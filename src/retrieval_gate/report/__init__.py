"""Layer 7, reports: one renderer per output format over the gating outcome. They turn results
into text and know no files (``files`` and ``github`` write them)."""
