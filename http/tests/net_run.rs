//! `tickless_http::run`: stopped when its future is dropped even with no thread in
//! `block_on`, refused on a taken address (shared only when asked), and host names looked up
//! on the blocking pool, never on the core.

use std::convert::Infallible;
use std::io::{self, Read, Write};
use std::net::SocketAddr;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use tickless::Builder;
use tickless_http::Http;

/// What [`ok`] answers with, at once.
type Answer = std::future::Ready<Result<Response<Full<Bytes>>, Infallible>>;

/// A service that answers "ok".
fn ok() -> impl tower::Service<
    Request<Incoming>,
    Response = Response<Full<Bytes>>,
    Error = Infallible,
    Future = Answer,
> + Clone
       + Send
       + 'static {
    tower::service_fn(|_: Request<Incoming>| {
        std::future::ready(Ok::<_, Infallible>(Response::new(Full::from("ok"))))
    })
}

/// A request from this thread (no runtime): whether it was answered 200, or how connecting
/// failed.
fn get_blocking(addr: SocketAddr) -> io::Result<bool> {
    let mut c = std::net::TcpStream::connect(addr)?;
    c.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")?;
    let mut reply = String::new();
    c.read_to_string(&mut reply)?;
    Ok(reply.starts_with("HTTP/1.1 200"))
}

/// `run` spawned as a task (the shape its docs show), and aborted while no thread
/// is in `block_on`: new connections are refused once the task is gone. (Before, the stop was
/// spawned onto core 0, which runs only inside `block_on`: core 1 kept serving both listeners.)
#[test]
fn an_aborted_run_stops_serving_with_no_thread_in_block_on() -> io::Result<()> {
    const CLIENTS: usize = 16;
    let rt = Builder::new().cores(2).build()?;
    let (server, addr) = rt.block_on(async {
        let run = tickless_http::run("127.0.0.1:0", ok());
        let addr = run.local_addr()?;
        io::Result::Ok((tickless::spawn(async move { run.await }), addr))
    })?;
    // No thread is in `block_on` from here on.
    for _ in 0..CLIENTS {
        assert!(get_blocking(addr)?, "served before the abort");
    }
    server.abort();
    assert!(server.join().unwrap_err().is_cancelled());
    // Connections from new ports: the kernel's hash gives both cores' listeners some.
    let refused = (0..CLIENTS)
        .filter(|_| get_blocking(addr).is_err_and(|e| e.kind() == io::ErrorKind::ConnectionRefused))
        .count();
    assert_eq!(refused, CLIENTS);
    Ok(())
}

/// Two `run`s on one address in one process: the second fails with `AddrInUse` (before, both
/// bound, and the kernel split the connections between the two apps).
#[test]
fn a_second_run_on_the_address_of_a_first_gets_addr_in_use() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    rt.block_on(async {
        let first = tickless_http::run("127.0.0.1:0", ok());
        let addr = first.local_addr()?;
        let second = tickless_http::run(addr, ok());
        assert_eq!(
            second.local_addr().unwrap_err().kind(),
            io::ErrorKind::AddrInUse
        );
        assert_eq!(second.await.unwrap_err().kind(), io::ErrorKind::AddrInUse);
        // Shared on purpose: both ask.
        let mut sharing = Http::new();
        sharing.accept().reuse_port(true);
        let a = sharing.run("127.0.0.1:0", ok());
        let b = sharing.run(a.local_addr()?, ok());
        assert_eq!(b.local_addr()?, a.local_addr()?);
        drop((first, a, b));
        io::Result::Ok(())
    })
}

/// A host name is looked up on the blocking pool (where `TcpStream::connect` looks names up),
/// not on the core's thread: the pool has a thread afterwards, and had none before.
#[test]
fn run_looks_a_host_name_up_on_the_blocking_pool() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    assert_eq!(rt.metrics().num_blocking_threads(), 0);
    let before_polled = rt.block_on(async {
        let run = tickless_http::run("localhost:0", ok());
        let before_polled = run.local_addr().map_err(|e| e.kind());
        run.with_graceful_shutdown(async {}).await?;
        io::Result::Ok(before_polled)
    })?;
    assert!(
        rt.metrics().num_blocking_threads() >= 1,
        "the lookup ran on a pool thread"
    );
    // Not bound before the future was polled: the name is looked up then.
    assert_eq!(before_polled, Err(io::ErrorKind::WouldBlock));
    Ok(())
}

/// An address needs no lookup: bound at once, no pool thread.
#[test]
fn run_binds_an_address_at_once_without_the_pool() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    rt.block_on(async {
        let run = tickless_http::run(("127.0.0.1", 0), ok());
        assert_ne!(run.local_addr()?.port(), 0);
        run.with_graceful_shutdown(async {}).await
    })?;
    assert_eq!(rt.metrics().num_blocking_threads(), 0);
    Ok(())
}
