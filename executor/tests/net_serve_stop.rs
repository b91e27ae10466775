//! A graceful shutdown refuses new connections at once on every core, while the requests in
//! flight finish: on two cores and more, and with no thread in `block_on`.

use std::future::{poll_fn, Future};
use std::io::{self, Read};
use std::net::SocketAddr;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::{serve_per_core, Server, TcpStream};
use tickless::{Builder, Runtime};

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn two_cores() -> io::Result<Runtime> {
    Builder::new().cores(2).build()
}

/// Connections (each from a new port) so that the kernel's hash puts some on each core's
/// listener: all on one has probability 2^-15.
const NEW_CLIENTS: usize = 16;

/// A server whose handler says which core serves it, then holds the request until the client
/// sends a byte, then answers `done`.
fn holding_server(rt: &Runtime) -> io::Result<Server> {
    serve_per_core(rt, localhost(), |mut stream, conn| async move {
        let _ = stream.write_all(&[conn.core() as u8]).await;
        let mut go = [0u8; 1];
        if stream.read_exact(&mut go).await.is_ok() {
            let _ = stream.write_all(b"done").await;
        }
    })
}

/// Connects until a connection is served by core `core`; returns it, in flight.
async fn in_flight_on(addr: SocketAddr, core: u8) -> io::Result<TcpStream> {
    loop {
        let mut c = TcpStream::connect(addr).await?;
        let mut served_by = [0u8; 1];
        c.read_exact(&mut served_by).await?;
        if served_by[0] == core {
            return Ok(c);
        }
        // Another core's: closed, its handler ends.
    }
}

/// Two cores, a request in flight on core 1: once the graceful shutdown has started, every new
/// connection is refused (before, core 1 held a duplicate of core 0's listener until its
/// drain ended, so those the kernel gave core 0's socket completed their handshake and hung),
/// and then the request in flight completes.
#[test]
fn graceful_shutdown_on_two_cores_refuses_new_connections_while_a_request_is_in_flight(
) -> io::Result<()> {
    let rt = two_cores()?;
    let server = holding_server(&rt)?;
    let addr = server.local_addr();
    let (refused, connected, report) = rt.block_on(async {
        let mut held = in_flight_on(addr, 1).await?;
        let mut shutdown = pin!(server.shutdown(Duration::from_secs(60)));
        // Its first poll starts the shutdown; it then waits for the request in flight.
        let started = poll_fn(|cx| Poll::Ready(shutdown.as_mut().poll(cx).is_pending())).await;
        assert!(started, "the shutdown waits for the request in flight");
        let (mut refused, mut connected) = (0, 0);
        for _ in 0..NEW_CLIENTS {
            match TcpStream::connect(addr).await {
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => refused += 1,
                Err(e) => return Err(e),
                Ok(_hung) => connected += 1,
            }
        }
        // The request in flight completes.
        held.write_all(b"g").await?;
        let mut done = Vec::new();
        held.read_to_end(&mut done).await?;
        assert_eq!(done, b"done");
        io::Result::Ok((refused, connected, shutdown.await?))
    })?;
    assert_eq!((refused, connected), (NEW_CLIENTS, 0));
    // Drained 1, or 0 where core 1 ran the request's end before its loop saw the stop.
    assert_eq!(report.aborted, 0);
    Ok(())
}

/// The same with no thread in `block_on` (core 0 runs nothing): the shutdown started from
/// `main` refuses new connections at once on every core's listener, core 0's included.
#[test]
fn a_shutdown_started_outside_block_on_refuses_at_once_on_every_core() -> io::Result<()> {
    let rt = two_cores()?;
    let server = holding_server(&rt)?;
    let addr = server.local_addr();
    // Served by core 1 (core 0's listener too, while no thread is in `block_on`).
    let mut held = std::net::TcpStream::connect(addr)?;
    held.read_exact(&mut [0u8; 1])?;
    server.shutdown_detached(Duration::from_secs(60));
    let refused = (0..NEW_CLIENTS)
        .filter(|_| {
            std::net::TcpStream::connect(addr)
                .is_err_and(|e| e.kind() == io::ErrorKind::ConnectionRefused)
        })
        .count();
    assert_eq!(refused, NEW_CLIENTS);
    std::io::Write::write_all(&mut held, b"g")?;
    let mut done = Vec::new();
    held.read_to_end(&mut done)?;
    assert_eq!(done, b"done");
    Ok(())
}
