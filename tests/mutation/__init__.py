"""tests/mutation — the parts of tests/mutate.py (make mutate): see that file's docstring."""
