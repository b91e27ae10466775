//! tower-http's own `TimeoutLayer` in an axum 0.8 app served on tickless (tickless's hyper
//! serving, tickless streams): its timer is a `tokio::time::Sleep`, so it needs the tokio context
//! (`Builder::tokio_context`, feature `tokio-compat`), and the timeout then fires in the tokio
//! runtime of the connection's core, on that core's thread: no wake crosses threads.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use http::StatusCode;
use tickless::Builder;
use tickless_ecosystem_tests::{get as http_get, http1_client, localhost, HandlerCounts};
use tower_http::timeout::TimeoutLayer;

async fn slow(State(counts): State<Arc<HandlerCounts>>) -> &'static str {
    let _cancelled_unless_finished = counts.slow_started();
    // Never answers: only the timeout ends this request.
    std::future::pending::<&'static str>().await
}

async fn fast(State(counts): State<Arc<HandlerCounts>>) -> &'static str {
    counts.fast();
    "fast"
}

/// The app: `/slow` never answers and has a short timeout, `/fast` answers at once under a long
/// one (so no scheduling hiccup can turn it into a 408).
fn app(counts: Arc<HandlerCounts>) -> Router {
    Router::new()
        .route(
            "/slow",
            get(slow).layer(TimeoutLayer::with_status_code(
                StatusCode::REQUEST_TIMEOUT,
                Duration::from_millis(20),
            )),
        )
        .route(
            "/fast",
            get(fast).layer(TimeoutLayer::with_status_code(
                StatusCode::REQUEST_TIMEOUT,
                Duration::from_secs(60),
            )),
        )
        .with_state(counts)
}

const ROUNDS: usize = 10;

#[test]
fn tower_http_timeout_answers_408_for_the_slow_route_and_200_for_the_fast_one() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let counts = Arc::new(HandlerCounts::default());
    let server = tickless_http::serve(&rt, localhost(), app(Arc::clone(&counts)))?;
    let addr = server.local_addr();
    let remote = |s: &tickless::CoreStats| s.remote_wakes_sent + s.remote_wakes_avoided;
    rt.block_on(async {
        let mut client = http1_client(addr).await?;
        let mut wakes_before = 0;
        for round in 0..ROUNDS {
            if round == 1 {
                // From here on the connection is placed and running.
                wakes_before = remote(&rt.stats().total);
            }
            let (status, body) = http_get(&mut client, "/slow").await?;
            assert_eq!(status, StatusCode::REQUEST_TIMEOUT, "{body}");
            let (status, body) = http_get(&mut client, "/fast").await?;
            assert_eq!((status, body.as_str()), (StatusCode::OK, "fast"));
        }
        // Each 408 after the first came from a timer of the connection's core's own tokio
        // runtime, which woke the connection's task on that thread: no wake crossed threads
        // (with one tokio thread for the runtime, each was a remote wake: 9 or more).
        let crossed = remote(&rt.stats().total) - wakes_before;
        assert!(
            crossed < 3,
            "{crossed} wakes crossed threads in {} rounds",
            ROUNDS - 1
        );
        drop(client);
        let stats = server.stats();
        assert_eq!(
            stats.total.accepted, 1,
            "one keep-alive connection throughout"
        );
        server.shutdown(Duration::from_secs(10)).await
    })?;
    counts.assert_rounds(ROUNDS);
    Ok(())
}

#[test]
fn without_the_tokio_context_tower_http_timeout_panics_and_the_connection_closes() -> io::Result<()>
{
    let rt = Builder::new().cores(1).tokio_context(false).build()?;
    let counts = Arc::new(HandlerCounts::default());
    let server = tickless_http::serve(&rt, localhost(), app(Arc::clone(&counts)))?;
    let addr = server.local_addr();
    let panics_before = rt.stats().total.task_panics;
    rt.block_on(async {
        let mut client = http1_client(addr).await?;
        // tower-http's `Timeout::call` makes a `tokio::time::sleep`: "there is no reactor
        // running"; the connection's task dies of it (caught, counted), and the request fails.
        let failed = http_get(&mut client, "/fast").await;
        assert!(
            failed.is_err(),
            "no response without a tokio context: {failed:?}"
        );
        server.shutdown(Duration::from_secs(10)).await
    })?;
    counts.assert_rounds(0); // no handler ran
    assert_eq!(rt.stats().total.task_panics, panics_before + 1);
    Ok(())
}
