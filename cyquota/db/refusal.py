"""The refusal of a statement sent as a whole (the ledger's one
statements, ``cyquota.quota.ledger.one_statement``; a ``write_batch``):
an error that rolls back what the statement wrote, for the caller to
leave the decision to the locked path or to retry.

A MariaDB compound statement SIGNALs ``REFUSAL``; a PostgreSQL statement
calls ``cyquota_refuse`` (made by migration 0002) with it. The engines
raise it as ``Refused`` ahead of oslo.db's error translation
(``engine_tuning.translate_ahead_of_oslo_db``), which would otherwise log
it as an unknown error it wraps.
"""

from cyquota.db import engine_tuning

#: What a statement that refuses to decide says.
REFUSAL = 'cyquota: left to the locked path'


def unless_mariadb(condition):
    """The line of a MariaDB compound statement that refuses (SIGNALs
    ``REFUSAL``) unless ``condition`` (an expression) holds."""
    return ("IF NOT (%s) THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = "
            "'%s'; END IF;" % (condition, REFUSAL))


class Refused(Exception):
    """A statement refused to decide (``REFUSAL``) and changed nothing:
    the caller takes the path that does."""


def raise_refused(context):
    """The ``handle_error`` listener raising ``Refused`` in place of the
    DBAPI error of a refusal (PyMySQL's or psycopg2's)."""
    error = context.original_exception
    diagnostics = getattr(error, 'diag', None)  # psycopg's
    if (getattr(error, 'args', ())[1:2] == (REFUSAL,)
            or getattr(diagnostics, 'message_primary', None) == REFUSAL):
        raise Refused()


# Every module that sends a refusal imports this one first.
engine_tuning.translate_ahead_of_oslo_db(raise_refused)
