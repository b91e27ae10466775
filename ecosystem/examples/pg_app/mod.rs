//! The app both PostgreSQL examples serve (`pg.rs` on tickless, `pg_tokio.rs` on tokio): an axum
//! `Router` whose one route makes one sqlx query, as a service's authenticated `GET /api/user`
//! does (one row by primary key, as JSON), from the table `users (id INT PRIMARY KEY, name TEXT,
//! email TEXT)` that `ecosystem/scripts/pg_load.sh` creates.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use sqlx::postgres::{PgPool, PgPoolOptions};

/// Where a request's pool comes from: one for the process, or one per core.
pub trait Pools: Send + Sync + 'static {
    /// The pool a request on this core (or thread) queries.
    fn pool(&self) -> &PgPool;
}

/// One pool for every request.
pub struct OnePool(pub PgPool);

impl Pools for OnePool {
    fn pool(&self) -> &PgPool {
        &self.0
    }
}

/// A pool whose connections are made when a request needs one (`connect_lazy`), at most `max`.
pub fn lazy_pool(url: &str, max: u32) -> Result<PgPool, sqlx::Error> {
    PgPoolOptions::new().max_connections(max).connect_lazy(url)
}

/// One user, as `/user/{id}` answers.
#[derive(Serialize, sqlx::FromRow)]
pub struct User {
    id: i32,
    name: String,
    email: String,
}

/// `GET /user/{id}`: one query by primary key.
async fn user<P: Pools>(
    State(pools): State<Arc<P>>,
    Path(id): Path<i32>,
) -> Result<Json<User>, (StatusCode, String)> {
    sqlx::query_as::<_, User>("SELECT id, name, email FROM users WHERE id = $1")
        .bind(id)
        .fetch_one(pools.pool())
        .await
        .map(Json)
        .map_err(|e| match e {
            sqlx::Error::RowNotFound => (StatusCode::NOT_FOUND, "no such user\n".into()),
            e => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
        })
}

/// The routes: `/user/{id}`.
pub fn router<P: Pools>(pools: Arc<P>) -> Router {
    Router::new()
        .route("/user/{id}", get(user::<P>))
        .with_state(pools)
}

/// The command line: `PORT DATABASE_URL [POOL_SIZE] [MODE]`.
pub struct Args {
    /// The port to listen on, on 127.0.0.1 (0: any free one).
    pub port: u16,
    /// The database, as sqlx's `postgres://` URL.
    pub url: String,
    /// Connections in all.
    pub pool_size: u32,
    /// What the rest of the line says (the tickless example's pool mode).
    pub mode: Option<String>,
}

/// Reads the command line.
pub fn args() -> Result<Args, String> {
    let usage = "usage: PORT DATABASE_URL [POOL_SIZE] [MODE]";
    let mut it = std::env::args().skip(1);
    let port = it
        .next()
        .ok_or(usage)?
        .parse()
        .map_err(|e| format!("PORT: {e}"))?;
    let url = it.next().ok_or(usage)?;
    let pool_size = match it.next() {
        Some(n) => n.parse().map_err(|e| format!("POOL_SIZE: {e}"))?,
        None => 16,
    };
    Ok(Args {
        port,
        url,
        pool_size,
        mode: it.next(),
    })
}
