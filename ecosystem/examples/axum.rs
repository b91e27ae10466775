//! An axum 0.8 app on tickless, one listener per core, stopped gracefully by Ctrl-C.
//!
//! ```text
//! cargo run --release -p tickless-ecosystem-tests --example axum -- [PORT]
//! curl http://127.0.0.1:3000/json          # {"message":"Hello, world!","hits":1}
//! curl http://127.0.0.1:3000/slow/2000     # slept 2000 ms
//! curl http://127.0.0.1:3000/slow/20000    # 408 after 10 s: tickless's TimeoutLayer
//! ```
//!
//! The app (`app/mod.rs`, shared with `axum_tokio.rs`, the same app on tokio) is an axum
//! `Router` with a JSON route, shared state and a slow route; its requests' 10 s timeout is
//! `tickless_http::tower::TimeoutLayer`, a timer on the core's wheel. `tickless_http::run` is
//! tickless's `axum::serve`: every core accepts on its own `SO_REUSEPORT` listener and serves
//! its connections start to end.
//!
//! Ctrl-C: the listeners close, requests in flight finish (up to `GRACE`), and idle keep-alive
//! connections are closed at once (hyper's `graceful_shutdown`), so the process exits as soon
//! as the last request is answered.

mod app;

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tickless_http::tower::TimeoutLayer;

/// How long a shutdown waits for requests in flight.
const GRACE: Duration = Duration::from_secs(10);

#[tickless::main]
async fn main() -> io::Result<()> {
    let port = app::port().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let app = app::router(|d| Box::pin(tickless::time::sleep(d)))
        .layer(TimeoutLayer::new(Duration::from_secs(10)));

    let run = tickless_http::run(SocketAddr::from(([127, 0, 0, 1], port)), app);
    println!("listening on http://{}", run.local_addr()?);
    run.with_graceful_shutdown(async {
        let _ = tickless::signal::ctrl_c().await;
        eprintln!("stopping: finishing requests in flight (up to {GRACE:?})");
    })
    .grace_period(GRACE)
    .await?;
    eprintln!("stopped");
    Ok(())
}
