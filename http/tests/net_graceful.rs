//! A graceful shutdown of a hyper server (tickless-http's `hyper_rt`):
//! `ConnInfo::graceful` calls hyper's `graceful_shutdown` when `Server::shutdown` begins, so an
//! idle keep-alive connection (HTTP/1.1 or HTTP/2) closes at once and a request in flight
//! finishes; without it, an idle connection holds the shutdown until the grace period is over,
//! and is aborted then.
//!
//! One core, time paused: the clients run on the server's core, the clock jumps to the next
//! timer whenever everything waits, and the grace period (an hour) is reached, or not, with no
//! real waiting. What is asserted is what the shutdown report and the counters say, and the
//! paused clock's reading, never the wall time.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::server::conn::auto;
use tickless::net::{serve_per_core, Server, ShutdownReport, TcpStream};
use tickless::time::{sleep, Instant};
use tickless::{spawn_local, Builder};
use tickless_http::hyper_rt::{TicklessExecutor, TicklessIo, TicklessTimer};

/// The shutdown's grace period: far longer than anything the test does.
const GRACE: Duration = Duration::from_secs(3600);
/// How long the slow route takes (on the paused clock).
const SLOW: Duration = Duration::from_secs(1);

fn other<E: std::error::Error + Send + Sync + 'static>(e: E) -> io::Error {
    io::Error::other(e)
}

/// What the service saw.
#[derive(Debug, Default)]
struct Counts {
    /// Slow requests whose handler started.
    slow_started: AtomicUsize,
    /// Requests answered (slow or not).
    answered: AtomicUsize,
}

/// A hyper server on every core of `rt` answering with [`respond`]. `graceful`: each
/// connection runs through `ConnInfo::graceful`.
fn server(rt: &tickless::Runtime, counts: &Arc<Counts>, graceful: bool) -> io::Result<Server> {
    let mut http = auto::Builder::new(TicklessExecutor);
    // hyper's keep-alive timeout longer than the grace period: only the shutdown may close an
    // idle connection here.
    http.http1()
        .timer(TicklessTimer)
        .header_read_timeout(2 * GRACE);
    http.http2().timer(TicklessTimer);
    let counts = Arc::clone(counts);
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    serve_per_core(rt, addr, move |stream, conn| {
        let http = http.clone();
        let counts = Arc::clone(&counts);
        async move {
            let service = service_fn(move |req| respond(Arc::clone(&counts), req));
            let served = http.serve_connection(TicklessIo::new(stream), service);
            let _ordinary_end = if graceful {
                conn.graceful(served, |c| c.graceful_shutdown()).await
            } else {
                served.await
            };
        }
    })
}

/// The service: `/slow` answers after [`SLOW`], anything else at once.
async fn respond(
    counts: Arc<Counts>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.uri().path() == "/slow" {
        counts.slow_started.fetch_add(1, Ordering::SeqCst);
        sleep(SLOW).await;
    }
    counts.answered.fetch_add(1, Ordering::SeqCst);
    Ok(Response::new(Full::new(Bytes::from_static(b"done"))))
}

fn get(path: &str) -> Request<Empty<Bytes>> {
    Request::get(path)
        .header(hyper::header::HOST, "localhost")
        .body(Empty::new())
        .unwrap()
}

/// What the scenario observed.
struct Outcome {
    /// The shutdown's report.
    report: ShutdownReport,
    /// Paused-clock time from the start of the shutdown to its end.
    took: Duration,
    /// The slow request's status and body.
    slow: (u16, Vec<u8>),
    /// Paused-clock time from the start of the shutdown until both idle client connections
    /// had seen their end.
    closed_by: Duration,
}

/// An idle HTTP/1.1 keep-alive connection (one request answered), an idle HTTP/2 connection
/// (likewise), and a third connection with a slow request in flight; then a shutdown.
fn scenario(graceful: bool, counts: &Arc<Counts>) -> io::Result<Outcome> {
    let rt = Builder::new().cores(1).start_paused(true).build()?;
    let server = server(&rt, counts, graceful)?;
    let addr = server.local_addr();
    rt.block_on(async {
        // HTTP/1.1, kept alive after one request.
        let io = TicklessIo::new(TcpStream::connect(addr).await?);
        let (mut h1, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(other)?;
        let h1_driver = spawn_local(conn);
        let resp = h1.send_request(get("/")).await.map_err(other)?;
        resp.into_body().collect().await.map_err(other)?;

        // HTTP/2 with prior knowledge, kept open after one request.
        let io = TicklessIo::new(TcpStream::connect(addr).await?);
        let (mut h2, conn) = hyper::client::conn::http2::Builder::new(TicklessExecutor)
            .timer(TicklessTimer)
            .handshake(io)
            .await
            .map_err(other)?;
        let h2_driver = spawn_local(conn);
        let resp = h2
            .send_request(get("http://localhost/"))
            .await
            .map_err(other)?;
        resp.into_body().collect().await.map_err(other)?;

        // A slow request in flight when the shutdown begins.
        let io = TicklessIo::new(TcpStream::connect(addr).await?);
        let (mut busy, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(other)?;
        drop(spawn_local(conn));
        let slow = spawn_local(async move {
            let resp = busy.send_request(get("/slow")).await.map_err(other)?;
            let status = resp.status().as_u16();
            let body = resp.into_body().collect().await.map_err(other)?.to_bytes();
            io::Result::Ok((status, body.to_vec()))
        });
        // Waits on the (paused) clock: the idle core polls its I/O and jumps to the next timer.
        while counts.slow_started.load(Ordering::SeqCst) == 0 {
            sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(server.stats().total.open, 3);

        // The slow handler has (paused) time to wait yet.
        assert_eq!(counts.answered.load(Ordering::SeqCst), 2);
        let start = Instant::now();
        let report = server.shutdown(GRACE).await?;
        let took = start.elapsed();
        let slow = slow.await??;
        // The idle clients see their connections end (an error or not: the server closed).
        let _closed = h1_driver.await?;
        let _closed = h2_driver.await?;
        let closed_by = start.elapsed();
        drop((h1, h2));
        io::Result::Ok(Outcome {
            report,
            took,
            slow,
            closed_by,
        })
    })
}

#[test]
fn idle_keep_alive_connections_close_at_once_and_the_request_in_flight_finishes() -> io::Result<()>
{
    let counts = Arc::new(Counts::default());
    let out = scenario(true, &counts)?;
    // All three ended by themselves: none was left for the deadline to abort.
    assert_eq!(
        out.report,
        ShutdownReport {
            drained: 3,
            aborted: 0
        },
        "{}",
        out.report
    );
    assert_eq!(
        out.slow,
        (200, b"done".to_vec()),
        "the request in flight finished"
    );
    assert_eq!(
        counts.answered.load(Ordering::SeqCst),
        3,
        "requests answered"
    );
    // The paused clock moved only to the slow handler's timer (about `SLOW` on), never to the
    // grace deadline.
    assert!(out.took < GRACE, "{:?}", out.took);
    assert!(
        out.closed_by < GRACE,
        "the idle clients saw the close before the deadline"
    );
    Ok(())
}

#[test]
fn without_graceful_an_idle_keep_alive_connection_holds_the_shutdown_until_the_deadline(
) -> io::Result<()> {
    let counts = Arc::new(Counts::default());
    let out = scenario(false, &counts)?;
    // The request in flight still finishes; the two idle connections wait for the deadline.
    assert_eq!(
        out.report,
        ShutdownReport {
            drained: 1,
            aborted: 2
        },
        "{}",
        out.report
    );
    assert_eq!(out.slow, (200, b"done".to_vec()));
    assert_eq!(counts.answered.load(Ordering::SeqCst), 3);
    assert!(out.took >= GRACE, "{:?}", out.took);
    Ok(())
}
