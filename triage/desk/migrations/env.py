"""Alembic's entry point for the desk's schema: run by ``Store.migrate`` with an open connection.

A team database is upgraded without starting the server by ``triage desk --database URL --migrate-only``.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from triage.desk.storage import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # started by the alembic command with sqlalchemy.url in its configuration
    engine = create_engine(context.config.get_main_option("sqlalchemy.url") or "")
    with engine.begin() as fresh:
        context.configure(connection=fresh, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()
else:
    context.configure(connection=connection, target_metadata=metadata)
    with context.begin_transaction():
        context.run_migrations()
