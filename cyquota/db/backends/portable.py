"""The plain meaning of each member of ``protocol.Backend``: step by
step, in standard SQL that every server runs, no planner hint, no
statement of several rows where its count is needed. A server's backend
(``postgresql``, ``mariadb``, ``sqlite``) overrides what it does
faster; read this one first."""

import sqlalchemy as sa


class Spelling:
    """Standard SQL's spelling (``protocol.Spelling``): ``mod``,
    ``floor``, and ``=`` comparing strings exactly."""

    def exact(self, text):
        return text

    def remainder(self, dividend, divisor):
        return sa.func.mod(dividend, divisor)

    def whole(self, number):
        return sa.func.floor(number)


STANDARD = Spelling()


class Portable:
    """Every member of ``protocol.Backend`` in its plain form, written in
    ``spelling`` (default: ``STANDARD``)."""

    name = 'portable'

    def __init__(self, spelling=STANDARD):
        self.spelling = spelling

    def prepares(self, dialect):
        # Each statement as SQLAlchemy sends it.
        return False

    def counts_batch_rows(self, dialect):
        # One statement a parameter set, each its own count.
        return False

    def returns_from_update(self, dialect):
        # Lock and read the rows, then update them.
        return False

    def insert_adding(self, table, key, added, touched):
        # The caller updates the row, else inserts it, under its locks.
        return None

    def through_index(self, select, table, index):
        return select

    def as_written(self, select):
        return select
