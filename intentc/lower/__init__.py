"""Lowering: KIR -> physical program, as a list of named passes (``pipeline.py``)."""
