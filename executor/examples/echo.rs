//! A TCP echo server on every core, with an idle timeout per connection.
//!
//! ```text
//! cargo run --release -p tickless --example echo -- [PORT] [--idle SECS] [--cores N]
//! nc 127.0.0.1 7000
//! ```
//!
//! The port comes from the first argument, else `$PORT`, else 7000 (0 picks a free one); the
//! address is printed on stdout. Each read waits at most `--idle` seconds (default 10) through
//! `tickless::time::timeout`: a timeout per read that almost never fires, which costs a timer
//! insert and cancel on the core's wheel and no system call. A client that half-closes gets the
//! rest of its echo, then end of file; a reset ends its connection quietly.
//!
//! Ctrl-C or `SIGTERM` stops it: the listeners close, each connection stops reading, and the
//! server waits up to 5 s for what was read to be written back.

use std::future::{poll_fn, Future};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::{serve_per_core, ConnInfo, TcpStream};
use tickless::time::timeout;
use tickless::Builder;

/// How a connection ended.
enum End {
    /// The peer half-closed and got everything back.
    Eof,
    /// Nothing arrived within the idle timeout.
    Idle,
    /// The server is shutting down.
    Shutdown,
}

/// Echoes until end of file, the idle timeout or the shutdown; then closes the write side.
async fn echo(mut stream: TcpStream, info: ConnInfo, idle: Duration) -> io::Result<End> {
    let mut stopping = pin!(info.shutdown_requested());
    let mut buf = vec![0u8; 16 * 1024];
    let end = loop {
        let mut read = pin!(timeout(idle, stream.read(&mut buf)));
        // Stop reading as soon as the server stops; finish what was read.
        let n = poll_fn(|cx| match stopping.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => read.as_mut().poll(cx).map(Some),
        })
        .await;
        match n {
            None => break End::Shutdown,
            Some(Err(_elapsed)) => break End::Idle,
            Some(Ok(n)) => match n? {
                0 => break End::Eof,
                n => stream.write_all(&buf[..n]).await?,
            },
        }
    };
    stream.close().await?;
    Ok(end)
}

/// Port, idle timeout and core count from the command line and the environment.
fn parse_args() -> Result<(u16, Duration, Option<usize>), String> {
    let mut port = std::env::var("PORT").ok();
    let mut idle = Duration::from_secs(10);
    let mut cores = None;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--idle" => {
                let v = it.next().ok_or("--idle needs seconds")?;
                idle = Duration::from_secs_f64(v.parse().map_err(|e| format!("--idle {v}: {e}"))?);
            }
            "--cores" => {
                let v = it.next().ok_or("--cores needs a number")?;
                cores = Some(v.parse().map_err(|e| format!("--cores {v}: {e}"))?);
            }
            "-h" | "--help" => return Err("usage: echo [PORT] [--idle SECS] [--cores N]".into()),
            other if !other.starts_with('-') => port = Some(other.to_string()),
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    let port = match port {
        Some(p) => p.parse().map_err(|e| format!("port {p}: {e}"))?,
        None => 7000,
    };
    Ok((port, idle, cores))
}

fn main() -> io::Result<()> {
    let (port, idle, cores) =
        parse_args().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut builder = Builder::new();
    if let Some(n) = cores {
        builder.cores(n);
    }
    let rt = builder.build()?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let server = serve_per_core(&rt, addr, move |stream, info| async move {
        // Resets and broken pipes are ordinary ends of a connection.
        let _end = echo(stream, info, idle).await;
    })?;
    println!(
        "echo listening on {} ({} cores, idle timeout {idle:?})",
        server.local_addr(),
        rt.cores()
    );
    io::stdout().flush()?;
    let report = rt.block_on(async {
        let mut interrupt = tickless::signal::signal(tickless::signal::SignalKind::interrupt())?;
        let mut terminate = tickless::signal::signal(tickless::signal::SignalKind::terminate())?;
        poll_fn(
            |cx| match (interrupt.poll_recv(cx), terminate.poll_recv(cx)) {
                (Poll::Pending, Poll::Pending) => Poll::Pending,
                _ => Poll::Ready(()),
            },
        )
        .await;
        server.shutdown(Duration::from_secs(5)).await
    })?;
    eprintln!("stopped: {report}");
    Ok(())
}
