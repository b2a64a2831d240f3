"""The SQL both backends share: fact statements, the shared reads, the shared
transaction and episode-store logic, written once for a placeholder style."""
