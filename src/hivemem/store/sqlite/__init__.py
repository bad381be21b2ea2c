"""The embedded SQLite backend (the default): one file, WAL, FTS5, vectors in BLOBs."""
