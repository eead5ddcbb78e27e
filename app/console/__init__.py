"""The console layer: sessions, the timeline (single source of truth), the hub, the store."""
