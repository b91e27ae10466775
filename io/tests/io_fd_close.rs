//! Dropping I/O objects and the reactor closes every descriptor they opened.
//!
//! One test alone in its binary: it counts this process's open descriptors, which other tests
//! running concurrently would disturb.

mod common;

use std::io;

use common::run;
use futures_lite::future::zip;
use tickless_io::{pipe, AsyncFd, PipeReader, TcpListener, TcpStream, UdpSocket, UnixStream};

use tickless_io::internal::Reactor;

/// The number of descriptors open in this process.
fn open_fds() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/fd")?.count())
}

#[test]
fn dropping_everything_closes_every_descriptor() -> io::Result<()> {
    let before = open_fds()?;
    run(async {
        let (w, r) = pipe()?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (accepted, connected) = zip(listener.accept(), TcpStream::connect(addr)).await;
        let (server, _) = accepted?;
        let (rd, wr) = connected?.into_split();
        let udp = UdpSocket::bind("127.0.0.1:0").await?;
        let (ua, ub) = UnixStream::pair()?;
        let (raw_a, _raw_b) = std::os::unix::net::UnixStream::pair()?;
        let raw = AsyncFd::new(raw_a)?;
        let (adopted, _) = std::os::unix::net::UnixStream::pair()?;
        let adopted = PipeReader::from_owned_fd(adopted.into())?;

        let registrations = || Reactor::with_current(|r| r.stats().registrations);
        assert!(open_fds()? > before);
        // Registered: what was polled (the listener, the connected stream, whose split halves
        // share one) and the `AsyncFd`, which registers at once. The others belong to the core
        // that first polls them, and none did yet.
        assert_eq!(registrations()?, 3);
        drop((w, r, listener, server, rd, wr, udp, ua, ub, raw, adopted));
        assert_eq!(registrations()?, 0);
        Ok(())
    })?;
    // The reactor (epoll, timerfd, eventfd) went with `run`.
    assert_eq!(open_fds()?, before);
    Ok(())
}
