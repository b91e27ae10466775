//! "Hello, world!" over HTTP/1.1 and HTTP/2 (prior knowledge) with hyper, one listener per core.
//!
//! ```text
//! cargo run --release -p tickless-http --example hello_http -- [PORT] [--cores N] [--pin] [--tokio-io] [--no-governor] [--no-stall]
//! curl http://127.0.0.1:3000/
//! curl --http2-prior-knowledge http://127.0.0.1:3000/
//! ```
//!
//! The port comes from the first argument, else `$PORT`, else 3000 (0 picks a free one); the
//! address it listens on is printed on stdout. Every core binds its own `SO_REUSEPORT` listener
//! and serves the connections it accepts, start to end, with no hand-off between cores.
//!
//! Keep-alive: a connection is closed when its first byte has not arrived within `KEEP_ALIVE`
//! (`tickless::time::timeout`), and an HTTP/1 connection when the next request's head has not
//! (hyper's `header_read_timeout`, on tickless timers through `TicklessTimer`: one timer
//! insert and cancel per request, no system call); an HTTP/2 connection is pinged after
//! `KEEP_ALIVE` of silence and closed if the ping is not answered.
//!
//! Ctrl-C or `SIGTERM` stops it gracefully: the listeners close, connections finish their
//! requests (hyper's graceful shutdown) within `GRACE`, and the rest are aborted. It then prints
//! the connections each core accepted and the runtime's counters (task polls, parks, timer
//! inserts and cancels, timerfd re-arms) on stderr.
//!
//! `--cores N` runs N cores (default: one per CPU), `--pin` pins each to its CPU, and
//! `--tokio-io` hands hyper the streams through hyper-util's `TokioIo` (the `tokio-io`
//! feature) instead of `TicklessIo`; `--no-governor` turns the idle governor off, `--no-stall` the
//! stall detector (`benches/scripts/http_cost.py` counts what it costs a request).

use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto;
use tickless::net::{serve_per_core, ConnInfo, TcpStream};
use tickless::signal::{signal, SignalKind};
use tickless::time::timeout;
use tickless::Builder;
use tickless_http::hyper_rt::{TicklessExecutor, TicklessIo, TicklessTimer};

/// How long an idle keep-alive connection is kept.
const KEEP_ALIVE: Duration = Duration::from_secs(5);
/// How long a shutdown waits for open connections.
const GRACE: Duration = Duration::from_secs(5);

/// The service: the same answer to every request.
async fn hello(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(
        b"Hello, world!",
    ))))
}

/// Serves one connection.
async fn serve_connection(
    http: &auto::Builder<TicklessExecutor>,
    stream: TcpStream,
    info: ConnInfo,
    tokio_io: bool,
) {
    // The first request gets the keep-alive timeout too. hyper-util's `auto` builder reads the
    // first bytes (to tell HTTP/1 from HTTP/2) with no timer of its own, so a client that
    // connects and says nothing would hold the connection forever: wait for its first byte
    // with `timeout` (a timer that almost never fires). Peeking leaves the byte for hyper.
    match timeout(KEEP_ALIVE, stream.peek(&mut [0u8; 1])).await {
        Ok(Ok(n)) if n > 0 => {}
        _ => return, // silent for too long, closed, or reset
    }
    if tokio_io {
        drive(http, TokioIo::new(stream), &info).await;
    } else {
        drive(http, TicklessIo::new(stream), &info).await;
    }
}

/// Runs hyper on a connection, switching to hyper's graceful shutdown when the server stops.
async fn drive<I>(http: &auto::Builder<TicklessExecutor>, io: I, info: &ConnInfo)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
{
    let mut conn = pin!(http.serve_connection(io, service_fn(hello)));
    let mut stopping = pin!(info.shutdown_requested());
    let mut graceful = false;
    let result = poll_fn(|cx| {
        if !graceful && stopping.as_mut().poll(cx).is_ready() {
            graceful = true;
            conn.as_mut().graceful_shutdown();
        }
        conn.as_mut().poll(cx)
    })
    .await;
    // A keep-alive timeout, a reset or a client that half-closes ends the connection with an
    // error here; each is an ordinary end of a connection, so it is not reported.
    let _ordinary_end = result;
}

/// Completes at the first SIGINT or SIGTERM.
async fn stop_signal() -> io::Result<()> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    poll_fn(
        |cx| match (interrupt.poll_recv(cx), terminate.poll_recv(cx)) {
            (Poll::Pending, Poll::Pending) => Poll::Pending,
            _ => Poll::Ready(()),
        },
    )
    .await;
    Ok(())
}

/// Port and core count from the command line and the environment.
/// The command line.
struct Args {
    /// Port to listen on.
    port: u16,
    /// Cores (default: one per CPU).
    cores: Option<usize>,
    /// Pin each core's thread to its CPU.
    pin: bool,
    /// Hand hyper the streams through hyper-util's `TokioIo` instead of `TicklessIo`.
    tokio_io: bool,
    /// The idle governor (`--no-governor` turns it off).
    governor: bool,
    /// The stall detector (`--no-stall` turns it off).
    stall: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut port = std::env::var("PORT").ok();
    let mut cores = None;
    let mut pin = false;
    let mut tokio_io = false;
    let mut governor = true;
    let mut stall = true;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--cores" => {
                let v = it.next().ok_or("--cores needs a number")?;
                cores = Some(v.parse().map_err(|e| format!("--cores {v}: {e}"))?);
            }
            "--pin" => pin = true,
            "--tokio-io" => tokio_io = true,
            "--no-governor" => governor = false,
            "--no-stall" => stall = false,
            "-h" | "--help" => return Err(USAGE.into()),
            other if !other.starts_with('-') => port = Some(other.to_string()),
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    let port = match port {
        Some(p) => p.parse().map_err(|e| format!("port {p}: {e}"))?,
        None => 3000,
    };
    Ok(Args {
        port,
        cores,
        pin,
        tokio_io,
        governor,
        stall,
    })
}

const USAGE: &str =
    "usage: hello_http [PORT] [--cores N] [--pin] [--tokio-io] [--no-governor] [--no-stall]";

fn main() -> io::Result<()> {
    let args = parse_args().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut builder = Builder::new();
    builder.pin(args.pin).idle_governor(args.governor);
    if !args.stall {
        builder.stall_threshold(None);
    }
    if let Some(n) = args.cores {
        builder.cores(n);
    }
    let rt = builder.build()?;

    let mut http = auto::Builder::new(TicklessExecutor);
    http.http1()
        .timer(TicklessTimer)
        .keep_alive(true)
        .header_read_timeout(KEEP_ALIVE);
    http.http2()
        .timer(TicklessTimer)
        .keep_alive_interval(KEEP_ALIVE)
        .keep_alive_timeout(KEEP_ALIVE);

    let addr = SocketAddr::from(([127, 0, 0, 1], args.port));
    let tokio_io = args.tokio_io;
    let server = serve_per_core(&rt, addr, move |stream, info| {
        let http = http.clone();
        async move { serve_connection(&http, stream, info, tokio_io).await }
    })?;
    println!(
        "listening on http://{} ({} cores, HTTP/1.1 and HTTP/2 with prior knowledge)",
        server.local_addr(),
        rt.cores()
    );
    io::stdout().flush()?;

    let report = rt.block_on(async {
        stop_signal().await?;
        let accepted: Vec<u64> = server.stats().cores.iter().map(|c| c.accepted).collect();
        eprintln!("connections accepted per core: {accepted:?}");
        eprintln!("stopping: no new connections; waiting up to {GRACE:?} for open ones");
        server.shutdown(GRACE).await
    })?;
    eprintln!("stopped: {report}");
    // What the cores did: hyper's per-request header timer is one insert and one cancel on the
    // wheel; the timerfd is re-armed far less often than that.
    let stats = rt.stats();
    let polls: Vec<u64> = stats.cores.iter().map(|c| c.polls).collect();
    eprintln!("task polls per core: {polls:?}");
    let t = stats.total;
    eprintln!(
        "runtime: {} task polls, {} parks, {} epoll waits, {} events, {} clock reads; timers: \
         {} inserted, {} cancelled, {} fired, timerfd re-armed {} times",
        t.polls,
        t.parks,
        t.io_polls,
        t.io_events,
        t.clock_reads,
        t.timer_inserts,
        t.timer_cancels,
        t.timer_fires,
        t.timerfd_rearms
    );
    Ok(())
}
