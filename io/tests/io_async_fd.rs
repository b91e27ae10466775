//! `AsyncFd`: readiness guards, clearing, and the tick that keeps a racing event.

mod common;

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use common::run;
use futures_lite::future::poll_once;
use tickless_io::AsyncFd;

use tickless_io::internal::{Direction, Reactor};

/// A non-blocking socket pair: the first end registered, the second plain.
fn registered_pair() -> io::Result<(AsyncFd<UnixStream>, UnixStream)> {
    let (a, b) = UnixStream::pair()?;
    a.set_nonblocking(true)?;
    Ok((AsyncFd::new(a)?, b))
}

#[test]
fn readable_then_would_block_clears_until_the_next_edge() -> io::Result<()> {
    run(async {
        let (fd, mut peer) = registered_pair()?;
        peer.write_all(b"one")?;

        let mut buf = [0u8; 16];
        let mut guard = fd.readable().await?;
        let n = guard
            .try_io(|fd| fd.get_ref().read(&mut buf))
            .expect("data was written")?;
        assert_eq!(&buf[..n], b"one");
        assert!(guard.try_io(|fd| fd.get_ref().read(&mut buf)).is_err());

        // Cleared: the next wait is pending until the peer writes again.
        assert!(poll_once(fd.readable()).await.is_none());
        peer.write_all(b"two")?;
        let n = fd
            .async_io(Direction::Read, |s| (&*s).read(&mut buf))
            .await?;
        assert_eq!(&buf[..n], b"two");
        Ok(())
    })
}

#[test]
fn an_event_after_the_guard_was_taken_survives_clear_ready() -> io::Result<()> {
    run(async {
        let (fd, mut peer) = registered_pair()?;
        let mut buf = [0u8; 16];
        // Drain the optimistic initial readiness.
        let mut guard = fd.readable().await?;
        assert!(guard.try_io(|fd| fd.get_ref().read(&mut buf)).is_err());

        peer.write_all(b"x")?;
        // Wait for the edge, so the guard below holds fresh readiness.
        let mut guard = fd.readable().await?;
        // More data arrives, and the reactor dispatches its event, while the guard is held.
        peer.write_all(b"y")?;
        Reactor::with_current(|reactor| -> io::Result<()> {
            let mut dispatched = false;
            while !dispatched {
                dispatched = reactor.poll(Some(Duration::from_secs(60)))?.events > 0;
            }
            Ok(())
        })??;
        // The guard's readiness is stale, so clearing it must not hide the new event.
        guard.clear_ready();
        assert!(poll_once(fd.readable()).await.is_some());
        Ok(())
    })
}

#[test]
fn into_inner_deregisters_and_keeps_the_descriptor_open() -> io::Result<()> {
    run(async {
        let (fd, mut peer) = registered_pair()?;
        let registered = Reactor::with_current(|r| r.stats().registrations)?;
        let mut inner = fd.into_inner();
        assert_eq!(
            Reactor::with_current(|r| r.stats().registrations)?,
            registered - 1
        );
        inner.write_all(b"still open")?;
        let mut buf = [0u8; 10];
        peer.read_exact(&mut buf)?;
        assert_eq!(&buf, b"still open");
        Ok(())
    })
}

#[test]
fn debug_output_says_whether_the_reactor_is_gone() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let enter = reactor.enter();
    assert!(format!("{enter:?}").starts_with("EnterGuard"), "{enter:?}");
    let (fd, _peer) = registered_pair()?;
    assert!(format!("{fd:?}").contains("closed: false"), "{fd:?}");
    drop(enter);
    drop(reactor);
    assert!(format!("{fd:?}").contains("closed: true"), "{fd:?}");
    Ok(())
}
