//! An axum 0.8 app served on tickless (tickless's hyper serving, tickless streams) with
//! tickless's own `TimeoutLayer` (feature `tower`): tower-http's shape and behaviour, a 408 when
//! the deadline passes, its timer on the core's wheel. No tokio context: nothing of tokio's
//! runtime is there to lean on, so the 408s can only come from tickless's timers. The clock is
//! paused (the client runs on the same core), so the deadline is exact and the test waits for
//! nothing.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use http::StatusCode;
use tickless::time::Instant;
use tickless::tower::TimeoutLayer;
use tickless::Builder;
use tickless_ecosystem_tests::{get as http_get, http1_client, serve_tower, HandlerCounts};

/// The deadline of every request.
const TIMEOUT: Duration = Duration::from_secs(1);

async fn slow(State(counts): State<Arc<HandlerCounts>>) -> &'static str {
    let guard = counts.slow_started();
    // An hour on the wheel: only the timeout ends this request first.
    tickless::time::sleep(Duration::from_secs(3600)).await;
    guard.finished();
    "slow"
}

async fn fast(State(counts): State<Arc<HandlerCounts>>) -> &'static str {
    counts.fast();
    "fast"
}

const ROUNDS: usize = 5;

#[test]
fn tickless_timeout_layer_answers_408_at_its_deadline_and_200_for_the_fast_route() -> io::Result<()>
{
    let rt = Builder::new().cores(1).start_paused(true).build()?;
    let counts = Arc::new(HandlerCounts::default());
    let app = Router::new()
        .route("/slow", get(slow))
        .route("/fast", get(fast))
        .layer(TimeoutLayer::new(TIMEOUT))
        .with_state(Arc::clone(&counts));
    let server = serve_tower(&rt, app)?;
    let addr = server.local_addr();
    let fires_before = rt.stats().total.timer_fires;
    rt.block_on(async {
        let mut client = http1_client(addr).await?;
        for _ in 0..ROUNDS {
            let start = Instant::now();
            let (status, body) = http_get(&mut client, "/slow").await?;
            assert_eq!(status, StatusCode::REQUEST_TIMEOUT, "{body}");
            // Paused time: the clock moved only by jumps to timers, so this is the deadline
            // that answered, not the handler's hour.
            let took = start.elapsed();
            assert!(took >= TIMEOUT && took < 2 * TIMEOUT, "{took:?}");

            let start = Instant::now();
            let (status, body) = http_get(&mut client, "/fast").await?;
            assert_eq!((status, body.as_str()), (StatusCode::OK, "fast"));
            assert!(start.elapsed() < TIMEOUT, "no timer had to fire");
        }
        drop(client);
        assert_eq!(
            server.stats().total.accepted,
            1,
            "one keep-alive connection"
        );
        server.shutdown(Duration::from_secs(10)).await
    })?;
    counts.assert_rounds(ROUNDS);
    assert!(
        rt.stats().total.timer_fires >= fires_before + ROUNDS as u64,
        "the deadlines fired on the core's wheel"
    );
    Ok(())
}
