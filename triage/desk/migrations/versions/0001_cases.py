"""The case history: one row per triaged case, and the class changes re-triages made.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cases",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("submitter", sa.String(200), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("redacted", sa.Boolean, nullable=False),
        sa.Column("input_name", sa.String(200)),
        sa.Column("input_kind", sa.String(8), nullable=False),
        sa.Column("input_bytes", sa.Integer, nullable=False),
        sa.Column("input_data", sa.LargeBinary),
        sa.Column("signature", sa.String(200), nullable=False),
        sa.Column("klass", sa.String(64), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("stack_hash", sa.String(16)),
        sa.Column("cluster_key", sa.String(16)),
        sa.Column("gfx_arch", sa.String(200)),
        sa.Column("os", sa.String(200)),
        sa.Column("rocm_version", sa.String(200)),
        sa.Column("tool_version", sa.String(200)),
        sa.Column("signatures_version", sa.String(200)),
        sa.Column("report_json", sa.Text, nullable=False),
        sa.Column("report_html", sa.Text, nullable=False),
    )
    op.create_index("ix_cases_signature_stack", "cases", ["signature", "stack_hash"])
    op.create_index("ix_cases_cluster_key", "cases", ["cluster_key"])
    op.create_index("ix_cases_klass", "cases", ["klass"])
    op.create_index("ix_cases_status", "cases", ["status"])
    op.create_index("ix_cases_created_at", "cases", ["created_at"])
    op.create_table(
        "case_changes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("case_id", sa.Integer, sa.ForeignKey("cases.id", ondelete="CASCADE"), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("old_signature", sa.String(200), nullable=False),
        sa.Column("new_signature", sa.String(200), nullable=False),
        sa.Column("old_class", sa.String(64), nullable=False),
        sa.Column("new_class", sa.String(64), nullable=False),
        sa.Column("old_signatures_version", sa.String(200)),
        sa.Column("new_signatures_version", sa.String(200)),
    )
    op.create_index("ix_case_changes_case_id", "case_changes", ["case_id"])


def downgrade() -> None:
    op.drop_table("case_changes")
    op.drop_table("cases")
