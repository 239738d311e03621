"""SQLAlchemy models and repositories: sessions, progress (watermarks), leases, audit."""
