"""The team backend: PostgreSQL through psycopg (the ``postgres`` extra)."""
