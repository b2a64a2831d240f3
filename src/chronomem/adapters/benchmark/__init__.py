"""The temporal-memory benchmark behind ``chronomem bench temporal`` (``docs/benchmark.md``).

Scenarios (``scenario.py``, files in ``data/``) are sequences of writes at
stated system times followed by questions with exact answers, each tagged with
the rule of the time model it checks. ``systems/`` holds one adapter per memory
system behind one small interface (``systems/base.py``); ``runner.py`` scores
every answer as passed, failed or unsupported.
"""
