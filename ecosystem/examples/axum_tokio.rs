//! The app of `axum.rs` on tokio's multi-thread runtime, served with `axum::serve`: the
//! baseline `benches/scripts/http_load.sh --app axum` compares tickless with.
//!
//! ```text
//! cargo run --release -p tickless-ecosystem-tests --example axum_tokio -- [PORT]
//! ```
//!
//! The same `Router` (`app/mod.rs`) with tower-http's `TimeoutLayer` (10 s, 408), one
//! listener and a task per connection, `TCP_NODELAY` as tickless sets it. Ctrl-C: axum's
//! graceful shutdown (requests in flight finish, idle connections close).

mod app;

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use axum::http::StatusCode;
use axum::serve::ListenerExt;
use tower_http::timeout::TimeoutLayer;

#[tokio::main]
async fn main() -> io::Result<()> {
    let port = app::port().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let app = app::router(|d| Box::pin(tokio::time::sleep(d))).layer(
        TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, Duration::from_secs(10)),
    );

    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
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
            eprintln!("stopping: finishing requests in flight");
        })
        .await?;
    eprintln!("stopped");
    Ok(())
}
