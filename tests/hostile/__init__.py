"""Helpers for the hostile-input catalogue (tests/test_hostile_*.py): byte-level writers that let
a test make any field of a model file lie."""
