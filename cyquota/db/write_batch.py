"""Writes of one transaction sent to the server as one statement.

A transaction that has read what it needs and decided (a lease create:
the chosen providers' generations, the lease, its reservations and
allocations, the usage rows' ``promised``) would send each write as a
statement of its own, a round trip each. A ``WriteBatch`` gathers them
and sends them at once, in the caller's transaction:

* PostgreSQL: a SELECT of data-modifying CTEs, one a write (they see one
  snapshot and run in no set order: the batch is for writes that neither
  read one another's rows nor change one row twice);
* MariaDB (through PyMySQL): a compound statement (``BEGIN NOT ATOMIC
  ... END``) running them in order;
* elsewhere (SQLite): one after the other.

On the servers the statement is prepared once per connection and per
shape of the batch (``prepared``). A write is a template (a statement
whose values are named binds, made once per shape: ``insert_rows``,
``update_row``) and the values of one call. One write of a batch may
expect a number of rows (an UPDATE against what a read saw, as a
provider's generation): where it changed another number, ``send`` raises
its error, and the caller rolls the transaction back.
"""

import functools

import sqlalchemy as sa

from cyquota.db import prepared
from cyquota.db import refusal


class WriteBatch:
    """The writes of one transaction on ``conn`` (a SQLAlchemy
    Connection), sent by ``send``."""

    def __init__(self, conn):
        self._conn = conn
        self._writes = []
        self._expected = None

    def add(self, template, values, expect=None, error=None, alone=None):
        """Write ``template`` with ``values`` (its binds). ``expect``: the
        rows it must change, else ``send`` raises ``error()``; one write
        of a batch at most. The servers run no column defaults for a
        batch: a template sets every column it writes that has one.
        ``alone``: the statement and parameters that write the same one
        after the other (else ``template`` and ``values``)."""
        if expect is not None:
            if self._expected is not None:
                raise ValueError('a batch checks the rows of one write')
            self._expected = len(self._writes), expect, error
        self._writes.append((template, values,
                             alone or (template, values)))

    def insert(self, table, rows):
        """INSERT ``rows`` (dicts of the same columns, each column with a
        default among them) into ``table``."""
        if rows:
            first, columns = rows[0], tuple(rows[0])
            # A value every row shares (a lease's id, window and status
            # in each of its reservations) is bound once: a server parses
            # every value sent, and PyMySQL quotes each.
            shared = tuple(column for column in columns
                           if all(row[column] == first[column]
                                  for row in rows[1:]))
            varying = [column for column in columns if column not in shared]
            values = {column + SHARED: first[column] for column in shared}
            values.update(('%s_%d' % (column, index), row[column])
                          for index, row in enumerate(rows)
                          for column in varying)
            # Alone, one INSERT of many parameter sets: SQLAlchemy builds
            # a multi-row VALUES anew at every run.
            self.add(insert_rows(table, columns, len(rows), shared), values,
                     alone=(table.insert(), rows))

    def update(self, table, row_id, values):
        """UPDATE ``table``'s row ``row_id`` (its ``id``) to ``values``."""
        self.add(update_row(table, tuple(sorted(values))),
                 dict({'v_' + column: value
                       for column, value in values.items()}, row_id=row_id))

    def send(self):
        """Send the writes gathered (then none are left); raises the error
        of a write that did not change the rows it expected."""
        writes, expected = self._writes, self._expected
        self._writes, self._expected = [], None
        dialect = self._conn.dialect
        if len(writes) < 2 or not prepared.serves(dialect):
            for index, (_template, _values, alone) in enumerate(writes):
                done = self._conn.execute(*alone)
                if expected and expected[0] == index \
                        and done.rowcount != expected[1]:
                    raise expected[2]()
            return
        shape = tuple((template, expected[1] if expected
                       and expected[0] == index else None)
                      for index, (template, _values, _alone)
                      in enumerate(writes))
        statement = _as_one(dialect, shape)
        values = {'w%d_%s' % (index, name): value
                  for index, (_template, given, _alone) in enumerate(writes)
                  for name, value in given.items()}
        try:
            result = statement.run(self._conn, values)
        except refusal.Refused:
            raise expected[2]() from None
        if result.returns_rows:
            changed = result.scalar_one()
            if expected and changed != expected[1]:
                raise expected[2]()


#: The suffix of the bind of a value all the rows of an INSERT share.
SHARED = '_all'


@functools.lru_cache(maxsize=256)
def insert_rows(table, columns, count, shared):
    """The template of an INSERT of ``count`` rows of ``columns`` into
    ``table``: the value of a row's column bound as ``<column>_<row>``,
    that of a column in ``shared`` as ``<column>_all``, once for every
    row."""
    return table.insert().values([
        {column: sa.bindparam(column + SHARED if column in shared
                              else '%s_%d' % (column, index))
         for column in columns} for index in range(count)])


@functools.lru_cache(maxsize=256)
def update_row(table, columns):
    """The template of an UPDATE of ``columns`` of ``table``'s row
    ``row_id``, each column's value bound as ``v_<column>``."""
    return table.update().where(
        table.c.id == sa.bindparam('row_id')).values(
            {column: sa.bindparam('v_' + column) for column in columns})


@functools.lru_cache(maxsize=256)
def _as_one(dialect, shape):
    """The writes of ``shape`` (``(template, rows expected or None)``
    each) as one statement for ``dialect``, prepared, its binds named
    ``w<write>_<bind>``."""
    parts, literals = [], {}
    for index, (template, _expect) in enumerate(shape):
        compiled = template.compile(dialect=dialect)
        prefix = 'w%d_' % index
        parts.append(prepared.BIND.sub(r'%%(%s\1)s' % prefix, str(compiled)))
        # The template's own literals (``generation + 1``).
        literals.update({prefix + bind: value
                         for bind, value in compiled.params.items()
                         if value is not None})
    if dialect.name == 'postgresql':
        ctes, count = [], '1'
        for index, ((_template, expect), part) in enumerate(
                zip(shape, parts)):
            if expect is not None:
                part += ' RETURNING 1'
                count = '(SELECT count(*) FROM w%d)' % index
            ctes.append('w%d AS (%s)' % (index, part))
        text = 'WITH %s SELECT %s' % (', '.join(ctes), count)
    else:
        lines = ['BEGIN NOT ATOMIC']
        for (_template, expect), part in zip(shape, parts):
            lines.append(part + ';')
            if expect is not None:
                lines.append(refusal.unless_mariadb(
                    'ROW_COUNT() = %d' % expect))
        text = '\n'.join(lines + ['END'])
    return prepared.Prepared(text, dialect, literals)
