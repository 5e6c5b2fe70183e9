"""A PostgreSQL checkpointer for several app machines sharing short-term memory.

`ThreadedPostgresSaver` is langgraph's `PostgresSaver` (langgraph-checkpoint-postgres) on a
connection pool, whose async methods run its sync ones in a worker thread, like the embedded
`ThreadedSqliteSaver`: one saver serves `invoke` and `ainvoke` alike, from any thread or event
loop (`AsyncPostgresSaver` is bound to the loop that created it). `compile_graph` uses it when
given `postgres_url=` or when `$ENGRAM_POSTGRES_URL` is set.
"""

from __future__ import annotations

import time

from engram.graph.extras import missing_extra

try:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as missing:
    raise missing_extra("PostgreSQL checkpoints", "postgres", missing) from missing

from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.stores.paths import POSTGRES_URL_ENV

_SETUP_LOCK = 0x656E6772616D  # "engram": the advisory lock held while the tables are set up


class ThreadedPostgresSaver(PostgresSaver):
    """A `PostgresSaver` on a connection pool whose async methods run its sync ones in a thread.

    Create it with `from_url`, which also creates the checkpoint tables if they are missing.
    """

    pool: ConnectionPool

    @classmethod
    def from_url(cls, url: str, *, max_connections: int = 10) -> ThreadedPostgresSaver:
        """Connect to `url` (`postgresql://user:password@host:port/database`), set up the tables.

        Raises:
            ConnectionError: No PostgreSQL server accepts the connection at `url`.
        """
        pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
            open=False,
        )
        try:
            pool.open(wait=True, timeout=10)
        except (PoolTimeout, psycopg.OperationalError) as exc:
            pool.close()
            raise ConnectionError(
                f"cannot connect to PostgreSQL at {_redacted(url)} ({exc}); start the server, "
                f"or fix the URL (argument postgres_url= or ${POSTGRES_URL_ENV})"
            ) from exc
        saver = cls(pool)
        saver.pool = pool
        with pool.connection() as conn:  # machines starting together must not race the migrations
            # polled, not waited for: a session blocked in pg_advisory_lock would stall the
            # holder's CREATE INDEX CONCURRENTLY, which waits for every running statement
            while not conn.execute(
                "SELECT pg_try_advisory_lock(%s) AS got", (_SETUP_LOCK,)
            ).fetchone()["got"]:
                time.sleep(0.1)
            try:
                saver.setup()
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
        return saver

    def close(self) -> None:
        """Close the connection pool."""
        self.pool.close()

    __enter__ = ThreadedSqliteSaver.__enter__
    __exit__ = ThreadedSqliteSaver.__exit__

    aget_tuple = ThreadedSqliteSaver.aget_tuple
    alist = ThreadedSqliteSaver.alist
    aput = ThreadedSqliteSaver.aput
    aput_writes = ThreadedSqliteSaver.aput_writes
    adelete_thread = ThreadedSqliteSaver.adelete_thread
    aget_delta_channel_history = ThreadedSqliteSaver.aget_delta_channel_history



def _redacted(url: str) -> str:
    """The URL without its password, for messages."""
    scheme, sep, rest = url.partition("://")
    if "@" in rest and ":" in rest.split("@", 1)[0]:
        user = rest.split("@", 1)[0].split(":", 1)[0]
        rest = f"{user}:***@{rest.split('@', 1)[1]}"
    return scheme + sep + rest
