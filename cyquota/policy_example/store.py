"""The charges of the example policy, in a SQLite file.

One row per accepted lease: its project, id (when the caller sent one)
and name, window, accelerator count and current charge in
accelerator-hours, and when it was charged (what the rolling window looks
at). Every method is one transaction, serialised
between threads by a lock and between processes by ``BEGIN IMMEDIATE``.
"""

import collections
import contextlib
import sqlite3
import threading

SCHEMA = '''
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id TEXT NOT NULL,
    lease_id TEXT,
    lease_name TEXT NOT NULL,
    charged_at REAL NOT NULL,
    start_date REAL NOT NULL,
    end_date REAL NOT NULL,
    accelerators INTEGER NOT NULL,
    hours REAL NOT NULL,
    ended INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS charges_project_charged
    ON charges (project_id, charged_at);
CREATE INDEX IF NOT EXISTS charges_project_lease
    ON charges (project_id, lease_name);
CREATE INDEX IF NOT EXISTS charges_project_lease_id
    ON charges (project_id, lease_id);
'''

Charge = collections.namedtuple(
    'Charge', ['id', 'project_id', 'lease_id', 'lease_name', 'charged_at',
               'start_date', 'end_date', 'accelerators', 'hours', 'ended'])

_COLUMNS = ', '.join(Charge._fields)


class ChargeStore:
    """The charges table of one SQLite file (``:memory:`` for a private
    in-memory one)."""

    def __init__(self, path):
        self._connection = sqlite3.connect(
            path, timeout=30, isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()
        with self.transaction() as cursor:
            cursor.execute('PRAGMA table_info(charges)')
            columns = {row[1] for row in cursor.fetchall()}
            if columns and 'lease_id' not in columns:
                # A file of a release that knew leases by name only.
                cursor.execute('ALTER TABLE charges ADD COLUMN lease_id TEXT')
            for statement in SCHEMA.split(';'):
                if statement.strip():
                    cursor.execute(statement)

    @contextlib.contextmanager
    def transaction(self):
        """A cursor in a write transaction, committed when the block ends
        and rolled back when it raises."""
        with self._lock:
            cursor = self._connection.cursor()
            cursor.execute('BEGIN IMMEDIATE')
            try:
                yield cursor
            except BaseException:
                cursor.execute('ROLLBACK')
                raise
            cursor.execute('COMMIT')

    @staticmethod
    def charged_since(cursor, project_id, since):
        """Accelerator-hours charged to the project after ``since`` (epoch
        seconds)."""
        cursor.execute('SELECT COALESCE(SUM(hours), 0) FROM charges WHERE '
                       'project_id = ? AND charged_at > ?',
                       (project_id, since))
        return cursor.fetchone()[0]

    @staticmethod
    def open_charge(cursor, project_id, lease_id, lease_name):
        """The latest charge of a lease that has not ended, or None: the
        charge of id ``lease_id``, else of name ``lease_name`` among those
        charged without an id (Blazar sends none on create)."""
        row = None
        if lease_id is not None:
            cursor.execute('SELECT %s FROM charges WHERE project_id = ? AND '
                           'lease_id = ? AND ended = 0 ORDER BY id DESC '
                           'LIMIT 1' % _COLUMNS, (project_id, lease_id))
            row = cursor.fetchone()
        if row is None:
            cursor.execute('SELECT %s FROM charges WHERE project_id = ? AND '
                           'lease_id IS NULL AND lease_name = ? AND '
                           'ended = 0 ORDER BY id DESC LIMIT 1' % _COLUMNS,
                           (project_id, lease_name))
            row = cursor.fetchone()
        return Charge(*row) if row else None

    @staticmethod
    def add(cursor, project_id, lease_id, lease_name, charged_at, start_date,
            end_date, accelerators, hours):
        """Record the charge of a newly accepted lease."""
        cursor.execute(
            'INSERT INTO charges (project_id, lease_id, lease_name, '
            'charged_at, start_date, end_date, accelerators, hours) VALUES '
            '(?, ?, ?, ?, ?, ?, ?, ?)',
            (project_id, lease_id, lease_name, charged_at, start_date,
             end_date, accelerators, hours))

    @staticmethod
    def reprice(cursor, charge_id, lease_id, lease_name, start_date,
                end_date, accelerators, hours, ended=False):
        """Replace a lease's charge (its charge time stays); a charge made
        without an id takes ``lease_id`` when one is known."""
        cursor.execute(
            'UPDATE charges SET lease_id = COALESCE(?, lease_id), '
            'lease_name = ?, start_date = ?, end_date = ?, accelerators = ?, '
            'hours = ?, ended = ? WHERE id = ?',
            (lease_id, lease_name, start_date, end_date, accelerators, hours,
             int(ended), charge_id))

    def charges(self, project_id, since):
        """The project's charges made after ``since``, oldest first."""
        with self.transaction() as cursor:
            cursor.execute('SELECT %s FROM charges WHERE project_id = ? AND '
                           'charged_at > ? ORDER BY id' % _COLUMNS,
                           (project_id, since))
            return [Charge(*row) for row in cursor.fetchall()]

    def close(self):
        with self._lock:
            self._connection.close()
