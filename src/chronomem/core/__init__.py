"""The bi-temporal model: times, names, ids, versions, the write engine, the
analyses and the public result types. Pure: imports nothing of chronomem but
:mod:`chronomem.errors`, and does no I/O."""
