"""A MariaDB compound statement (``BEGIN NOT ATOMIC ... END``), built: its
steps are statements of ``statements`` compiled for MariaDB (``Block``),
their binds the caller's, the values they pass on the block's own
variables (``variable``); it runs them in a transaction of its own
(``own_transaction``)."""

import sqlalchemy as sa
from sqlalchemy.sql import visitors

from cyquota.db.backends import mariadb as backend
from cyquota.db import prepared
from cyquota.db import refusal
from cyquota.quota.ledger import statements as sql


class Block:
    """The steps of a compound statement, compiled for ``dialect``; the
    binds they take (``names``). ``qualified``: columns named with their
    table (else a step that reads one table names them alone)."""

    def __init__(self, dialect, qualified=True):
        self.dialect = dialect
        self.qualified = qualified
        self.names = set()

    def compiled(self, statement):
        """``statement``'s SQL, its literals written out (its binds are
        the caller's: ``names``)."""
        def write_out(element, **_kw):
            if isinstance(element, sa.BindParameter) and element.unique:
                return sa.literal_column(str(element.compile(
                    dialect=self.dialect,
                    compile_kwargs=dict(literal_binds=True))))
            return None
        compiled = visitors.replacement_traverse(
            statement, {}, write_out).compile(
                dialect=self.dialect,
                compile_kwargs=dict(include_table=self.qualified))
        self.names.update(name for name, bind in compiled.binds.items()
                          if not bind.unique)
        return str(compiled)

    def statement(self, declarations, body, commit_if):
        """The compound statement of ``own_transaction``, prepared
        (``Prepared``), and the names of its binds."""
        return (prepared.Prepared(
            own_transaction(declarations, body, commit_if), self.dialect),
            frozenset(self.names))


def own_transaction(declarations, body, commit_if):
    """A MariaDB compound statement that runs ``body`` (lines) in a
    transaction of its own and commits it if ``commit_if`` (an expression)
    holds at its end. Otherwise it rolls back and refuses (SIGNALs
    ``refusal.REFUSAL``, raised as ``refusal.Refused``), so that it sends
    no rows either way. An error rolls the transaction back and is sent on
    as it was raised (RESIGNAL), to be translated and retried as any
    other."""
    return '\n'.join([
        'BEGIN NOT ATOMIC', *declarations,
        'DECLARE EXIT HANDLER FOR SQLEXCEPTION'
        ' BEGIN ROLLBACK; RESIGNAL; END;',
        'START TRANSACTION;', *body, refusal.unless_mariadb(commit_if),
        'COMMIT;', 'END'])


def variable(name, type_=sa.BigInteger):
    """The block's variable ``name`` in a statement."""
    return sa.literal_column(name, type_)


def through_unique_index(update, *columns):
    """``update`` (an UPDATE of the table of ``columns``) through the
    unique index of ``columns``, named as MariaDB names it: its
    constraint's name or, unnamed, its first column's."""
    table = columns[0].table
    [name] = [constraint.name or columns[0].name
              for constraint in table.constraints
              if isinstance(constraint, sa.UniqueConstraint)
              and tuple(constraint.columns) == columns]
    return backend.force_index(update, name)


def in_resource_order(block, update):
    """``update`` of several usage rows, through their unique index in
    resource order: two statements that change rows of one project queue
    on the first row they share rather than deadlock."""
    return '%s ORDER BY %s;' % (
        block.compiled(through_unique_index(
            update, sql.USAGES.c.project_id, sql.USAGES.c.resource)),
        block.compiled(sql.USAGES.c.resource))
