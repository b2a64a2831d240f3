"""The backend contract: behaviour every storage backend must show.

Every test here takes the ``mem`` / ``make_memory`` fixtures (parametrized over
``conftest.BACKENDS``) and uses the public API only, so the same file runs
against SQLite today and PostgreSQL later.
"""
