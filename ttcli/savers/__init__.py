"""Storing checkpoints: the saver contract (base), its backends (memory, sqlite), and the
file format's pieces (serde, blobs, records, migrations)."""
