"""Readers of per-query score files: the native JSON Lines and CSV, and evaluation tools' outputs."""
