"""Use cases over the core and the store protocol: the unit of work, fact
writes and reads, identity, evidence and transfer. Knows no backend."""
