//! The service of `hello_http` with the same hyper settings, on tokio's multi-thread runtime:
//! the baseline `benches/scripts/http_load.sh` compares tickless with.
//!
//! ```text
//! cargo run --release -p tickless-http --example hello_http_tokio -- [PORT] [--threads N]
//! ```
//!
//! The port comes from the first argument, else `$PORT`, else 3000; the number of worker
//! threads defaults to tokio's (one per CPU). The usual tokio server shape: one listener, one
//! accept loop, a task per connection that the scheduler places and may steal. Ctrl-C or
//! `SIGTERM` stops it (open connections are dropped with the runtime).

use std::convert::Infallible;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};

/// How long an idle keep-alive connection is kept (as `hello_http`).
const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// The service: the same answer to every request.
async fn hello(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(
        b"Hello, world!",
    ))))
}

/// Port and worker count from the command line and the environment.
fn parse_args() -> Result<(u16, Option<usize>), String> {
    let mut port = std::env::var("PORT").ok();
    let mut threads = None;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--threads" => {
                let v = it.next().ok_or("--threads needs a number")?;
                threads = Some(v.parse().map_err(|e| format!("--threads {v}: {e}"))?);
            }
            "-h" | "--help" => return Err("usage: hello_http_tokio [PORT] [--threads N]".into()),
            other if !other.starts_with('-') => port = Some(other.to_string()),
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    let port = match port {
        Some(p) => p.parse().map_err(|e| format!("port {p}: {e}"))?,
        None => 3000,
    };
    Ok((port, threads))
}

fn main() -> io::Result<()> {
    let (port, threads) =
        parse_args().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if let Some(n) = threads {
        builder.worker_threads(n);
    }
    let rt = builder.build()?;
    rt.block_on(serve(port))
}

async fn serve(port: u16) -> io::Result<()> {
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1()
        .timer(TokioTimer::new())
        .keep_alive(true)
        .header_read_timeout(KEEP_ALIVE);
    http.http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(KEEP_ALIVE)
        .keep_alive_timeout(KEEP_ALIVE);

    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    println!(
        "listening on http://{} (tokio multi-thread, HTTP/1.1 and HTTP/2 with prior knowledge)",
        listener.local_addr()?
    );
    io::stdout().flush()?;

    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    loop {
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // As tickless's accept loop: back off rather than spin on EMFILE.
                    eprintln!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
        };
        // As tickless's `serve_per_core` default.
        let _reset = stream.set_nodelay(true);
        let http = http.clone();
        tokio::spawn(async move {
            // As `hello_http`: the first byte within the keep-alive timeout.
            match tokio::time::timeout(KEEP_ALIVE, stream.peek(&mut [0u8; 1])).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return,
            }
            let _ordinary_end = http
                .serve_connection(TokioIo::new(stream), service_fn(hello))
                .await;
        });
    }
    eprintln!("stopped");
    Ok(())
}
