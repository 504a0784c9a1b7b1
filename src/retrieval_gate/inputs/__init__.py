"""Layer 5, inputs: the frozen test set (snapshot manifests), run manifests, baseline folders
and the configuration, each checked against its JSON Schema and its hashes."""
