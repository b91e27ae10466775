//! `Registration`'s own API, with closures standing in for the system calls: what each result
//! of the call does to the recorded readiness (cleared or kept), which results are retried, and
//! the readiness getters and clearers. The crate's streams go through these paths; a closure
//! can return what a real socket rarely does (`Interrupted`, an exact fill of an
//! edge-triggered read).

mod common;

use std::cell::Cell;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tickless_io::{Interest, TcpListener};

use tickless_io::internal::{Direction, Reactor, Registration};

/// A reactor, and an edge-triggered registration of a socket whose peer has written a byte:
/// readable and writable as recorded (the socket, the peer and the registration).
fn ready_registration(reactor: &Reactor) -> io::Result<(UnixStream, UnixStream, Registration)> {
    let (a, mut peer) = UnixStream::pair()?;
    a.set_nonblocking(true)?;
    let registration = Registration::new(a.as_raw_fd(), Interest::READABLE | Interest::WRITABLE)?;
    peer.write_all(b"x")?;
    while !(registration.readiness().is_readable() && registration.readiness().is_writable()) {
        reactor.poll(Some(Duration::from_millis(10)))?;
    }
    Ok((a, peer, registration))
}

/// A closure that returns `results` one after the other (the last one again when they run
/// out), counting its calls.
fn scripted<'a, T: Copy + 'a>(
    results: &[Result<T, io::ErrorKind>],
    calls: &'a Cell<usize>,
) -> impl FnMut() -> io::Result<T> + 'a {
    let results = results.to_vec();
    move || {
        let i = calls.get().min(results.len() - 1);
        calls.set(calls.get() + 1);
        results[i].map_err(io::Error::from)
    }
}

fn cx() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

#[test]
fn poll_io_retries_an_interrupted_call_and_returns_any_other_error() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (_a, _peer, reg) = ready_registration(&reactor)?;
    let calls = Cell::new(0);
    let f = scripted(&[Err(io::ErrorKind::Interrupted), Ok(7)], &calls);
    assert!(matches!(
        reg.poll_io(&mut cx(), Direction::Read, f),
        Poll::Ready(Ok(7))
    ));
    assert_eq!(calls.get(), 2, "retried once");

    let calls = Cell::new(0);
    let f = scripted(&[Err(io::ErrorKind::ConnectionReset), Ok(7)], &calls);
    let result = reg.poll_io(&mut cx(), Direction::Read, f);
    assert!(
        matches!(&result, Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::ConnectionReset),
        "{result:?}"
    );
    assert_eq!(calls.get(), 1, "not retried");
    assert!(
        reg.readiness().is_readable(),
        "an error other than WouldBlock keeps readiness"
    );
    Ok(())
}

#[test]
fn poll_read_io_retries_interrupted_returns_other_errors_and_waits_after_would_block(
) -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (_a, _peer, reg) = ready_registration(&reactor)?;
    let calls = Cell::new(0);
    let f = scripted(&[Err(io::ErrorKind::Interrupted), Ok(3)], &calls);
    assert!(matches!(
        reg.poll_read_io(&mut cx(), 8, f),
        Poll::Ready(Ok(3))
    ));
    assert_eq!(calls.get(), 2, "retried once");

    let (_a, _peer, reg) = ready_registration(&reactor)?;
    let calls = Cell::new(0);
    let f = scripted(&[Err(io::ErrorKind::ConnectionReset), Ok(3)], &calls);
    let result = reg.poll_read_io(&mut cx(), 8, f);
    assert!(
        matches!(&result, Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::ConnectionReset),
        "{result:?}"
    );
    assert_eq!(calls.get(), 1, "not retried");

    let before = reactor.stats().read_would_blocks;
    let calls = Cell::new(0);
    let f = scripted::<usize>(&[Err(io::ErrorKind::WouldBlock)], &calls);
    assert!(reg.poll_read_io(&mut cx(), 8, f).is_pending());
    assert_eq!(
        calls.get(),
        1,
        "WouldBlock clears readiness: no second call"
    );
    assert_eq!(reactor.stats().read_would_blocks - before, 1);
    assert!(!reg.readiness().is_readable());
    Ok(())
}

#[test]
fn an_edge_triggered_read_clears_readiness_after_a_short_read_and_keeps_it_after_a_full_one(
) -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    // A read that filled the buffer may have left more: readiness stays, the next read runs.
    let (_a, _peer, reg) = ready_registration(&reactor)?;
    let calls = Cell::new(0);
    let f = scripted(&[Ok(4)], &calls);
    assert!(matches!(
        reg.poll_read_io(&mut cx(), 4, f),
        Poll::Ready(Ok(4))
    ));
    assert!(reg.readiness().is_readable(), "a full read keeps readiness");
    // A short read drained the buffer: readiness is cleared, the next read waits for an edge.
    let f = scripted(&[Ok(2)], &calls);
    assert!(matches!(
        reg.poll_read_io(&mut cx(), 4, f),
        Poll::Ready(Ok(2))
    ));
    assert!(
        !reg.readiness().is_readable(),
        "a short read clears readiness"
    );
    assert!(reg
        .poll_read_io(&mut cx(), 4, scripted(&[Ok(1)], &calls))
        .is_pending());
    assert_eq!(calls.get(), 2, "no call while not ready");
    Ok(())
}

#[test]
fn try_io_retries_interrupted_and_clears_readiness_on_would_block_only() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (_a, _peer, reg) = ready_registration(&reactor)?;
    let calls = Cell::new(0);
    let f = scripted(&[Err(io::ErrorKind::Interrupted), Ok(5)], &calls);
    assert_eq!(reg.try_io(Direction::Read, f)?, 5);
    assert_eq!(calls.get(), 2, "retried once");

    // Another error is returned as it is, and leaves readiness and the counters alone.
    let before = reactor.stats().read_would_blocks;
    let calls = Cell::new(0);
    let f = scripted(&[Err(io::ErrorKind::ConnectionReset), Ok(5)], &calls);
    let err = reg.try_io(Direction::Read, f).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
    assert_eq!(calls.get(), 1, "not retried");
    assert!(reg.readiness().is_readable());
    assert_eq!(reactor.stats().read_would_blocks, before);

    // WouldBlock clears it: the next try does not call at all.
    let calls = Cell::new(0);
    let f = scripted::<usize>(&[Err(io::ErrorKind::WouldBlock)], &calls);
    let err = reg.try_io(Direction::Read, f).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    assert_eq!(reactor.stats().read_would_blocks - before, 1);
    let f = scripted(&[Ok(5)], &calls);
    let err = reg.try_io(Direction::Read, f).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    assert_eq!(calls.get(), 1, "not ready: not called");
    // The other direction was not touched.
    assert_eq!(reg.try_io(Direction::Write, || Ok(9))?, 9);
    Ok(())
}

#[test]
fn readiness_is_cleared_per_direction_or_per_event() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (_a, _peer, reg) = ready_registration(&reactor)?;
    reg.clear_read_ready();
    assert!(!reg.readiness().is_readable() && reg.readiness().is_writable());
    reg.clear_write_ready();
    assert!(!reg.readiness().is_writable());

    let (_a, _peer, reg) = ready_registration(&reactor)?;
    let Poll::Ready(event) = reg.poll_ready(&mut cx(), Direction::Read) else {
        panic!("readable");
    };
    reg.clear_readiness(event?);
    assert!(
        !reg.readiness().is_readable(),
        "the event's readiness is cleared"
    );
    assert!(
        reg.readiness().is_writable(),
        "the other direction's is not"
    );
    Ok(())
}

#[test]
fn an_accept_through_a_listener_is_counted() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let listener = TcpListener::from_std(listener)?;
    let _client = std::net::TcpStream::connect(addr)?;
    let (_stream, _) = common::block_on(&reactor, listener.accept())?;
    assert_eq!(reactor.stats().accepts, 1);
    Ok(())
}
