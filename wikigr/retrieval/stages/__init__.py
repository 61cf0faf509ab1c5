"""The built-in stages, one module each, imported by name on first use
(:data:`wikigr.retrieval.stage.BUILTIN_STAGES`)."""
