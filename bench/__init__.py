"""Tristate's benchmarks: one module per scenario of issue 8's table.

``python -m bench`` (or ``tox -e bench``) runs every scenario at full size;
``python -m bench SCENARIO --option N`` runs one, with its sizes as options
(``python -m bench SCENARIO --help``). Each prints a table and one JSON line
per figure on stdout; ``--json-out FILE`` appends the JSON lines to a file.
Figures, the machine and the commit are recorded in ``bench/RESULTS.md``.

The scenarios measure; they never assert their targets (a target not met is
printed as ``NOT met``). CI runs each once at a tiny size
(``tests/functional/test_bench.py``) so that they cannot rot.
"""
