"""The user's servers as their own tools keep them: config files read and written (no I/O, no web)."""
