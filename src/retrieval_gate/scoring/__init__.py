"""Layer 3, scoring: measures and their one definition each, per-query scoring of a ranked run,
evidence units, access and time. Imports the core and the readers."""
