//! An axum 0.8 app served on tickless (tickless's hyper serving, tickless streams) with
//! tickless's own `TimeoutLayer` (`tickless_http::tower`): tower-http's shape and behaviour, a 408 when
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
use tickless::Builder;
use tickless_ecosystem_tests::{get as http_get, http1_client, localhost, HandlerCounts};
use tickless_http::tower::TimeoutLayer;

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
    let rt = Builder::new()
        .cores(1)
        .start_paused(true)
        .tokio_context(false)
        .build()?;
    let counts = Arc::new(HandlerCounts::default());
    let app = Router::new()
        .route("/slow", get(slow))
        .route("/fast", get(fast))
        .layer(TimeoutLayer::new(TIMEOUT))
        .with_state(Arc::clone(&counts));
    let server = tickless_http::serve(&rt, localhost(), app)?;
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

#[test]
fn tickless_request_body_timeout_ends_a_stalled_upload_and_not_a_whole_one() -> io::Result<()> {
    use futures_util::{AsyncReadExt, AsyncWriteExt};
    use tickless_http::tower::RequestBodyTimeoutLayer;

    // Real time, not paused: under the paused clock, an answer written on the core at a timer's
    // deadline was read by a client of the same core only at the next timer's jump (with no
    // later timer, the test hung), so the clock's jumps would decide what this test sees.
    let rt = Builder::new().cores(1).tokio_context(false).build()?;
    let app = Router::new()
        .route(
            "/upload",
            axum::routing::post(|body: String| async move { format!("got {}", body.len()) }),
        )
        .layer(RequestBodyTimeoutLayer::new(Duration::from_millis(100)));
    let server = tickless_http::serve(&rt, localhost(), app)?;
    let addr = server.local_addr();
    rt.block_on(async {
        // Raw HTTP/1.1, to stall a body halfway; each connection closed after its answer.
        let head =
            "POST /upload HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 10\r\n\r\n";
        let mut answers = Vec::new();
        for body in ["0123456789", "012"] {
            let mut conn = tickless::net::TcpStream::connect(addr).await?;
            conn.write_all(format!("{head}{body}").as_bytes()).await?;
            let mut answer = String::new();
            conn.read_to_string(&mut answer).await?;
            answers.push(answer);
        }
        assert!(answers[0].starts_with("HTTP/1.1 200 OK"), "{}", answers[0]);
        assert!(answers[0].ends_with("got 10"), "{}", answers[0]);
        // The stalled body's next frame was late: axum's `String` extractor fails on the body's
        // error (a 400 with tickless's `TimeoutError` message, as with tower-http's).
        assert!(answers[1].starts_with("HTTP/1.1 400"), "{}", answers[1]);
        assert!(
            answers[1].ends_with("data was not received within the designated timeout"),
            "{}",
            answers[1]
        );
        assert_eq!(server.stats().total.accepted, 2);
        server.shutdown(Duration::from_secs(10)).await
    })?;
    Ok(())
}

#[test]
fn any_body_timeout_layer_answers_408_outside_tower_http_s_trace_layer() -> io::Result<()> {
    use tickless_http::tower::AnyBodyTimeoutLayer;
    use tower_http::trace::TraceLayer;

    // `TraceLayer`'s response body has no `Default`: tower-http's `TimeoutLayer` (and
    // tickless's `TimeoutLayer`, which keeps its signature) does not compile outside it.
    let rt = Builder::new()
        .cores(1)
        .start_paused(true)
        .tokio_context(false)
        .build()?;
    let counts = Arc::new(HandlerCounts::default());
    let app = Router::new()
        .route("/slow", get(slow))
        .route("/fast", get(fast))
        .with_state(Arc::clone(&counts))
        .layer(TraceLayer::new_for_http())
        .layer(AnyBodyTimeoutLayer::new(TIMEOUT)); // outermost
    let server = tickless_http::serve(&rt, localhost(), app)?;
    let addr = server.local_addr();
    rt.block_on(async {
        let mut client = http1_client(addr).await?;
        for _ in 0..ROUNDS {
            let (status, body) = http_get(&mut client, "/slow").await?;
            assert_eq!((status, body.as_str()), (StatusCode::REQUEST_TIMEOUT, ""));
            let (status, body) = http_get(&mut client, "/fast").await?;
            assert_eq!((status, body.as_str()), (StatusCode::OK, "fast"));
        }
        drop(client);
        server.shutdown(Duration::from_secs(10)).await
    })?;
    counts.assert_rounds(ROUNDS);
    Ok(())
}
