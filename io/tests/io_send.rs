//! The I/O types are `Send`: they may be moved to and dropped on any thread, and used only on
//! the thread of the reactor that registered them.

mod common;

use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::panic::{self, AssertUnwindSafe};
use std::thread;
use std::time::Duration;

use common::block_on;
use futures_lite::AsyncReadExt;
use tickless_io::{
    pipe, AsyncFd, Interest, OwnedReadHalf, OwnedWriteHalf, PipeReader, PipeWriter, Reactor,
    Registration, TcpListener, TcpStream, UdpSocket, UnixListener, UnixStream,
};

#[test]
fn the_io_types_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<TcpStream>();
    send_sync::<OwnedReadHalf>();
    send_sync::<OwnedWriteHalf>();
    send_sync::<TcpListener>();
    send_sync::<UnixStream>();
    send_sync::<UnixListener>();
    send_sync::<UdpSocket>();
    send_sync::<PipeReader>();
    send_sync::<PipeWriter>();
    send_sync::<AsyncFd<std::os::unix::net::UnixStream>>();
    send_sync::<Registration>();
}

#[test]
fn a_stream_dropped_on_another_thread_leaves_the_epoll_set_and_its_slot() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (a, b) = UnixStream::pair()?;
    let (peer, kept) = std::os::unix::net::UnixStream::pair()?;
    kept.set_nonblocking(true)?;
    let kept_fd = kept.as_raw_fd();
    let registration = Registration::new(kept_fd, Interest::READABLE)?;
    assert_eq!(reactor.stats().registrations, 3);

    thread::spawn(move || drop((a, registration)))
        .join()
        .unwrap();
    // The slots wait for the reactor's thread; the unpark makes its next poll free them.
    assert_eq!(reactor.stats().registrations, 3);
    let polled = reactor.poll(Some(Duration::ZERO))?;
    assert!(polled.unparked);
    let stats = reactor.stats();
    assert_eq!((stats.orphans_freed, stats.registrations), (2, 1));

    // `a` was closed: its peer reads end of file.
    let mut b = b;
    let mut buf = [0u8; 8];
    assert_eq!(block_on(&reactor, b.read(&mut buf))?, 0);
    // `kept` is still open but left the epoll set: it registers again (epoll says `EEXIST`
    // for a descriptor still in the set).
    let again = Registration::new(kept_fd, Interest::READABLE)?;
    drop(again);
    drop((peer, kept));
    Ok(())
}

#[test]
fn a_stream_used_on_another_thread_panics_saying_so() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (a, _b) = UnixStream::pair()?;
    let message = thread::spawn(move || {
        let mut a = a;
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            let mut buf = [0u8; 4];
            futures_lite::future::block_on(a.read(&mut buf))
        }));
        let payload = caught.expect_err("a read on another thread must panic");
        payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default()
    })
    .join()
    .unwrap();
    assert!(
        message.contains("used on a thread other than the core that registered it"),
        "{message}"
    );
    // The stream was dropped there: the reactor frees it.
    reactor.poll(Some(Duration::ZERO))?;
    assert_eq!(reactor.stats().registrations, 1);
    Ok(())
}

#[test]
fn a_stream_dropped_where_its_reactor_is_no_longer_current_is_freed_later() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let (w, r) = {
        let _enter = reactor.enter();
        pipe()?
    };
    // Same thread, but no reactor entered (as in a thread-local destructor after the loop).
    drop(w);
    assert_eq!(reactor.stats().registrations, 2);
    reactor.poll(Some(Duration::ZERO))?;
    assert_eq!(reactor.stats().registrations, 1);
    let _enter = reactor.enter();
    let mut r = r;
    let mut buf = [0u8; 1];
    assert_eq!(
        block_on(&reactor, r.read(&mut buf))?,
        0,
        "the write end was closed"
    );
    Ok(())
}

#[test]
fn a_stream_that_outlives_its_reactor_drops_quietly_and_closes() -> io::Result<()> {
    let (stream, mut peer) = thread::spawn(|| -> io::Result<_> {
        let reactor = Reactor::new()?;
        let _enter = reactor.enter();
        let (a, b) = std::os::unix::net::UnixStream::pair()?;
        Ok((UnixStream::from_std(a)?, b))
    })
    .join()
    .unwrap()?;
    // The reactor and its thread are gone; dropping here deregisters through the duplicate
    // epoll descriptor the stream still holds, and closes the socket.
    drop(stream);
    let mut buf = [0u8; 1];
    assert_eq!(peer.read(&mut buf)?, 0);
    Ok(())
}

#[test]
fn connect_and_accept_futures_are_send() {
    fn send<T: Send>(_: &T) {}
    let addr: std::net::SocketAddr = "127.0.0.1:1".parse().unwrap();
    send(&TcpStream::connect(addr));
    send(&TcpStream::connect("localhost:1"));
    send(&TcpStream::connect(("localhost", 1)));
    send(&TcpListener::bind("127.0.0.1:0"));
    send(&UnixStream::connect("/nonexistent"));
}
