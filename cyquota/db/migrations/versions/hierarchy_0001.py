"""Project hierarchy of the embedded limit store and tree usages
(hierarchy branch).

Revision ID: hierarchy_0001
Revises: 0001
Create Date: 2026-11-21
"""

from alembic import op
import sqlalchemy as sa

from cyquota.db import types

revision = 'hierarchy_0001'
down_revision = '0001'
branch_labels = ('hierarchy',)
depends_on = None


def _timestamps():
    return [sa.Column('created_at', types.DateTime, nullable=False),
            sa.Column('updated_at', types.DateTime, nullable=True)]


def upgrade():
    op.create_table(
        'projects',
        sa.Column('id', sa.String(255), primary_key=True),
        sa.Column('parent_id', sa.String(255), nullable=True),
        sa.Column('name', sa.String(255), nullable=True),
        *_timestamps(),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_index('projects_parent_id_idx', 'projects', ['parent_id'])
    op.create_table(
        'tree_usages',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('root_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(255), nullable=False),
        sa.Column('used', sa.BigInteger, nullable=False),
        sa.Column('reserved', sa.BigInteger, nullable=False),
        *_timestamps(),
        sa.UniqueConstraint('root_id', 'resource',
                            name='uniq_tree_usages0root_id0resource'),
        sa.CheckConstraint('used >= 0', name='ck_tree_usages_used'),
        sa.CheckConstraint('reserved >= 0', name='ck_tree_usages_reserved'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
