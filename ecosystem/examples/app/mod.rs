//! The app both axum examples serve (`axum.rs` on tickless, `axum_tokio.rs` on tokio): the same
//! `Router`, with the runtime's own sleep for the slow route. Each example adds its runtime's
//! `TimeoutLayer`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

/// The runtime's sleep, boxed: what the slow route waits with.
pub type SleepFn = fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// What every request shares: a counter, and how to sleep.
struct AppState {
    /// Requests to `/json` so far, over every core or thread.
    hits: AtomicU64,
    /// The runtime's sleep.
    sleep: SleepFn,
}

/// `/json`'s answer.
#[derive(Serialize)]
struct Hello {
    message: &'static str,
    hits: u64,
}

/// `GET /json`: a JSON body and the shared counter (the route the load script requests).
async fn json(State(state): State<Arc<AppState>>) -> Json<Hello> {
    let hits = state.hits.fetch_add(1, Ordering::Relaxed) + 1;
    Json(Hello {
        message: "Hello, world!",
        hits,
    })
}

/// `GET /slow/{ms}`: answers after `ms` milliseconds, unless the `TimeoutLayer` answers 408
/// first.
async fn slow(State(state): State<Arc<AppState>>, Path(ms): Path<u64>) -> String {
    (state.sleep)(Duration::from_millis(ms)).await;
    format!("slept {ms} ms\n")
}

/// The routes: `/` (text), `/json` (JSON and shared state), `/slow/{ms}`.
pub fn router(sleep: SleepFn) -> Router {
    let state = Arc::new(AppState {
        hits: AtomicU64::new(0),
        sleep,
    });
    Router::new()
        .route("/", get(|| async { "Hello, world!\n" }))
        .route("/json", get(json))
        .route("/slow/{ms}", get(slow))
        .with_state(state)
}

/// The port: the first argument, else `$PORT`, else 3000 (0 picks a free one).
pub fn port() -> Result<u16, String> {
    let arg = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("PORT").ok());
    arg.map_or(Ok(3000), |p| {
        p.parse().map_err(|e| format!("port {p:?}: {e}"))
    })
}
