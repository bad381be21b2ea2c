"""What keeps a store alive over time: context, sessions, notes, indexing, maintenance,
export and import."""
