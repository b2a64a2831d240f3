"""The embedded default backend: one SQLite file (or ``:memory:``)."""
