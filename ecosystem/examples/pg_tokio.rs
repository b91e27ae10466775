//! The app of `pg.rs` on tokio's multi-thread runtime, served with `axum::serve`: the baseline
//! `ecosystem/scripts/pg_load.sh` compares tickless with.
//!
//! ```text
//! cargo run --release -p tickless-ecosystem-tests --example pg_tokio -- PORT DATABASE_URL [POOL_SIZE]
//! ```

mod pg_app;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::serve::ListenerExt;
use pg_app::OnePool;

#[tokio::main]
async fn main() -> io::Result<()> {
    let args = pg_app::args().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if let Some(mode) = args.mode {
        let e = format!("MODE {mode}: the tokio twin has one pool, and takes no MODE");
        return Err(io::Error::new(io::ErrorKind::InvalidInput, e));
    }
    let pool = pg_app::lazy_pool(&args.url, args.pool_size)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let app = pg_app::router(Arc::new(OnePool(pool)));
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], args.port))).await?;
    println!(
        "listening on http://{} (tokio multi-thread)",
        listener.local_addr()?
    );
    let listener = listener.tap_io(|tcp| {
        let _reset = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
