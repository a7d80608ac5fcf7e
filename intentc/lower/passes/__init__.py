"""One lowering pass per file; each has ``run(...)`` and a docstring stating what it guarantees."""
