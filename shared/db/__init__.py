"""Database access: models, engine, unit of work, migrations and the optional vector columns."""
