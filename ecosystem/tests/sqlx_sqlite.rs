//! sqlx 0.8 (`runtime-tokio`, `sqlite`) with an in-memory SQLite database, from tickless tasks
//! under the tokio context (the default with the `tokio-compat` feature): sqlx's pool waits on `tokio::time` and its SQLite worker wakes the
//! task from its own thread.

use std::io;
use std::time::Duration;

use sqlx::sqlite::SqlitePoolOptions;
use sqlx::{Connection, Row, SqliteConnection};
use tickless::Builder;
use tickless_ecosystem_tests::other;

#[test]
fn sqlx_sqlite_in_memory_create_insert_query_on_every_core() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    for core in 0..2 {
        let task = rt.handle(core).spawn(async move {
            assert_eq!(tickless::core_id(), core);
            // One connection: an in-memory database lives as long as its connection.
            let pool = SqlitePoolOptions::new()
                .max_connections(1)
                .acquire_timeout(Duration::from_secs(30))
                .connect("sqlite::memory:")
                .await
                .map_err(other)?;
            sqlx::query("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
                .execute(&pool)
                .await
                .map_err(other)?;
            let mut inserted = 0;
            for name in ["ada", "grace", "barbara"] {
                let done = sqlx::query("INSERT INTO users (name) VALUES (?)")
                    .bind(name)
                    .execute(&pool)
                    .await
                    .map_err(other)?;
                inserted += done.rows_affected();
            }
            let rows = sqlx::query("SELECT id, name FROM users WHERE name <> ? ORDER BY id")
                .bind("grace")
                .fetch_all(&pool)
                .await
                .map_err(other)?;
            let got: Vec<(i64, String)> = rows
                .iter()
                .map(|r| (r.get::<i64, _>("id"), r.get::<String, _>("name")))
                .collect();
            let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM users")
                .fetch_one(&pool)
                .await
                .map_err(other)?;
            pool.close().await;
            io::Result::Ok((inserted, got, count))
        });
        let got = if core == 0 {
            rt.block_on(task)
        } else {
            task.join()
        };
        let (inserted, rows, count) = got.map_err(other)??;
        assert_eq!(inserted, 3);
        assert_eq!(rows, vec![(1, "ada".to_owned()), (3, "barbara".to_owned())]);
        assert_eq!(count, 3);
    }
    Ok(())
}

/// A renamed `#[tokio::test]`: the plain attribute has the tokio context sqlx needs (the
/// `tokio-compat` feature makes it the default).
#[tickless::test]
async fn a_single_sqlx_connection_and_a_transaction_rolled_back() -> io::Result<()> {
    {
        let mut conn = SqliteConnection::connect("sqlite::memory:")
            .await
            .map_err(other)?;
        sqlx::query("CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL)")
            .execute(&mut conn)
            .await
            .map_err(other)?;
        sqlx::query("INSERT INTO kv VALUES ('a', 1)")
            .execute(&mut conn)
            .await
            .map_err(other)?;
        let mut tx = conn.begin().await.map_err(other)?;
        sqlx::query("INSERT INTO kv VALUES ('b', 2)")
            .execute(&mut *tx)
            .await
            .map_err(other)?;
        tx.rollback().await.map_err(other)?;
        let (sum,): (i64,) = sqlx::query_as("SELECT SUM(v) FROM kv")
            .fetch_one(&mut conn)
            .await
            .map_err(other)?;
        assert_eq!(sum, 1, "the rolled-back row is gone");
        conn.close().await.map_err(other)
    }
}
