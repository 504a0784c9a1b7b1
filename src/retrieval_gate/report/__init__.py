"""Renderers: one module per output format. They turn results into text and know no files."""
