//! An axum + sqlx + PostgreSQL service on tickless, with the tokio context sqlx needs (the
//! default with tickless's `tokio-compat` feature): each core's own tokio runtime, driven by
//! the core (`Builder::tokio_context`). The load script
//! `ecosystem/scripts/pg_load.sh` starts PostgreSQL, runs this and its tokio twin
//! (`pg_tokio.rs`) and compares them.
//!
//! ```text
//! cargo run --release -p tickless-ecosystem-tests --example pg -- PORT DATABASE_URL [POOL_SIZE] [shared|per-core]
//! curl http://127.0.0.1:PORT/user/42
//! curl http://127.0.0.1:PORT/stats     # the runtime's remote wakes, sent and avoided
//! ```
//!
//! The pool: `shared` (the default) is one `PgPool` for the process, as a port from tokio has
//! it: a connection made on one core is served by that core's tokio reactor, and a request on
//! the other core that takes it is woken across threads. `per-core` gives each core a pool of
//! its own (`POOL_SIZE / cores` connections), made on that core: every query's wakes stay on
//! its thread.

mod pg_app;

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use axum::routing::get;
use pg_app::{OnePool, Pools};
use sqlx::postgres::PgPool;

/// A pool per core, each made on its core at its first request.
struct PerCore {
    /// The database's URL.
    url: String,
    /// Connections per core.
    each: u32,
    /// Core `i`'s pool.
    pools: Vec<OnceLock<PgPool>>,
}

impl Pools for PerCore {
    fn pool(&self) -> &PgPool {
        self.pools[tickless::core_id()].get_or_init(|| {
            pg_app::lazy_pool(&self.url, self.each).expect("the database URL was checked")
        })
    }
}

#[tickless::main]
async fn main() -> io::Result<()> {
    let args = pg_app::args().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let bad = |e: sqlx::Error| io::Error::new(io::ErrorKind::InvalidInput, e.to_string());
    let cores = tickless::runtime::Handle::current().metrics().num_workers();
    let mode = args.mode.as_deref().unwrap_or("shared");
    let app = match mode {
        "shared" => pg_app::router(Arc::new(OnePool(
            pg_app::lazy_pool(&args.url, args.pool_size).map_err(bad)?,
        ))),
        "per-core" => {
            pg_app::lazy_pool(&args.url, 1).map_err(bad)?; // checks the URL
            pg_app::router(Arc::new(PerCore {
                url: args.url.clone(),
                each: (args.pool_size / cores as u32).max(1),
                pools: (0..cores).map(|_| OnceLock::new()).collect(),
            }))
        }
        m => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("MODE: {m}: shared or per-core"),
            ))
        }
    }
    .route("/stats", get(stats));
    let run = tickless_http::run(SocketAddr::from(([127, 0, 0, 1], args.port)), app);
    println!(
        "listening on http://{} (tickless, {cores} cores, {mode} pool)",
        run.local_addr()?
    );
    run.with_graceful_shutdown(async {
        let _ = tickless::signal::ctrl_c().await;
    })
    .await
}

/// `GET /stats`: the wakes the runtime's cores were handed from other threads so far, over
/// every core (`remote_wakes_sent`: the core slept and its eventfd was written).
async fn stats() -> String {
    let m = tickless::runtime::Handle::current().metrics();
    let (mut sent, mut avoided) = (0, 0);
    for w in 0..m.num_workers() {
        sent += m.worker_remote_wakes_sent(w);
        avoided += m.worker_remote_wakes_avoided(w);
    }
    format!("remote_wakes_sent={sent} remote_wakes_avoided={avoided}\n")
}
