"""Which PostgreSQL failures are ``TryAgain`` (``store/postgres/transient.py``), and the
one that must not be: a link lost at COMMIT with no word from the server."""

from __future__ import annotations

import pytest

from hivemem import StoreError, TryAgain

psycopg = pytest.importorskip("psycopg")
from psycopg import errors as pgerrors  # noqa: E402
from psycopg_pool import PoolTimeout  # noqa: E402

from hivemem.store.postgres.transient import translate  # noqa: E402

WHERE = "postgresql://u:***@db/x"


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (pgerrors.DeadlockDetected("deadlock detected"), "deadlock"),
        (pgerrors.SerializationFailure("could not serialize access"), "serialization"),
        (pgerrors.LockNotAvailable("canceling statement due to lock timeout"), "lock_timeout"),
        (
            pgerrors.AdminShutdown("terminating connection due to administrator command"),
            "connection",
        ),
        (
            psycopg.OperationalError("consuming input failed: server closed the connection"),
            "connection",
        ),
        (pgerrors.TooManyConnections("sorry, too many clients already"), "connection"),
        (PoolTimeout("couldn't get a connection after 10.00 sec"), "busy"),
    ],
)
def test_passing_failures_are_try_again_with_their_reason(exc, reason):
    error = translate(exc, WHERE, ["s3cret"])
    assert isinstance(error, TryAgain) and error.reason == reason
    assert "try again" in str(error)


@pytest.mark.parametrize(
    "exc",
    [
        pgerrors.QueryCanceled("canceling statement due to statement timeout"),
        pgerrors.DiskFull("could not extend file"),
        pgerrors.InsufficientPrivilege("permission denied for table memories"),
    ],
)
def test_other_failures_stay_plain_store_errors(exc):
    error = translate(exc, WHERE, [])
    assert type(error) is StoreError


def test_a_link_lost_at_commit_is_an_unknown_outcome_unless_the_server_said_why():
    silent = psycopg.OperationalError("consuming input failed: server closed the connection")
    unknown = translate(silent, WHERE, [], at_commit=True)
    assert type(unknown) is StoreError and "may or may not have been saved" in str(unknown)
    told = pgerrors.AdminShutdown("terminating connection due to administrator command")
    assert isinstance(translate(told, WHERE, [], at_commit=True), TryAgain)
    deadlock = pgerrors.DeadlockDetected("deadlock detected")
    assert isinstance(translate(deadlock, WHERE, [], at_commit=True), TryAgain)


def test_no_password_in_the_message():
    error = translate(psycopg.OperationalError("password s3cret rejected"), WHERE, ["s3cret"])
    assert "s3cret" not in str(error) and "***" in str(error)
