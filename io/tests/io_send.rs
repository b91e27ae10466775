//! The I/O types are `Send`: they may be moved to and dropped on any thread. Each is driven by
//! the reactor current where it is polled: first polled, it registers there; polled later under
//! another live reactor, it moves there; it returns an error once its reactor is gone, and
//! where no reactor is current. Never a panic, never a hang.

mod common;

use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::thread;
use std::time::Duration;

use common::block_on;
use futures_lite::future::poll_once;
use futures_lite::{AsyncRead, AsyncReadExt};
use tickless_io::{
    pipe, AsyncFd, Interest, OwnedReadHalf, OwnedWriteHalf, PipeReader, PipeWriter, TcpListener,
    TcpStream, UdpSocket, UnixListener, UnixStream,
};

use tickless_io::internal::{Reactor, Registration};

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

/// Polls one read of `stream` where the current reactor is (nothing to read: it waits), so
/// that the stream belongs to it; returns what the poll said.
fn poll_read(stream: &mut (impl AsyncRead + Unpin)) -> Option<io::Result<usize>> {
    let mut buf = [0u8; 1];
    futures_lite::future::block_on(poll_once(stream.read(&mut buf)))
}

#[test]
fn a_stream_registers_with_the_reactor_that_first_polls_it() -> io::Result<()> {
    // Made where no reactor is current (on an acceptor's core, say): nothing registered yet.
    let (a, _b) = UnixStream::pair()?;
    let (w, r) = pipe()?;
    let registered = thread::spawn(move || -> io::Result<_> {
        let (mut a, mut r) = (a, r);
        let reactor = Reactor::new()?;
        let _enter = reactor.enter();
        assert_eq!(reactor.stats().registrations, 0);
        assert!(poll_read(&mut a).is_none(), "nothing to read: it waits");
        assert!(poll_read(&mut r).is_none());
        Ok(reactor.stats().registrations)
    })
    .join()
    .unwrap()?;
    assert_eq!(
        registered, 2,
        "both registered with the reactor that polled them"
    );
    drop(w);
    Ok(())
}

#[test]
fn a_stream_first_polled_where_no_reactor_is_current_returns_an_error() -> io::Result<()> {
    let (mut a, _b) = UnixStream::pair()?;
    let err = poll_read(&mut a)
        .expect("an error, not a wait")
        .unwrap_err();
    assert!(err.to_string().contains("no tickless runtime"), "{err}");
    // Not bound by the failed attempt: a reactor entered later takes it.
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    assert!(poll_read(&mut a).is_none());
    assert_eq!(reactor.stats().registrations, 1);
    Ok(())
}

#[test]
fn a_stream_whose_reactor_is_gone_returns_an_error_instead_of_waiting() -> io::Result<()> {
    let (mut a, mut b) = std::os::unix::net::UnixStream::pair()
        .and_then(|(a, b)| Ok((UnixStream::from_std(a)?, b)))?;
    {
        let first = Reactor::new()?;
        let _enter = first.enter();
        assert!(poll_read(&mut a).is_none());
    }
    // Its reactor is dropped; data is waiting.
    std::io::Write::write_all(&mut b, b"x")?;
    // On the same thread, with no reactor, and under another reactor: an error each time.
    for second in [None, Some(Reactor::new()?)] {
        let _enter = second.as_ref().map(Reactor::enter);
        let err = poll_read(&mut a)
            .expect("an error, not a wait")
            .unwrap_err();
        assert!(err.to_string().contains("has stopped"), "{err}");
    }
    Ok(())
}

#[test]
fn a_stream_polled_under_another_live_reactor_on_its_own_thread_moves_there() -> io::Result<()> {
    let first = Reactor::new()?;
    let second = Reactor::new()?;
    let (mut a, mut b) = std::os::unix::net::UnixStream::pair()
        .and_then(|(a, b)| Ok((UnixStream::from_std(a)?, b)))?;
    std::io::Write::write_all(&mut b, b"w")?;
    {
        // A read that completes: no task is left waiting on the first reactor.
        let _enter = first.enter();
        assert!(matches!(poll_read(&mut a), Some(Ok(1))));
    }
    // Another runtime's core on the same thread: the read moves there (a thread check alone
    // would pass, and wait on a reactor nobody polls).
    let _enter = second.enter();
    assert!(poll_read(&mut a).is_none(), "nothing to read: it waits");
    assert_eq!(second.stats().rebinds, 1);
    // Nothing waited on the first: the whole stream moved, and the first reactor frees its
    // slot at its next poll.
    first.poll(Some(Duration::ZERO))?;
    assert_eq!(
        (first.stats().registrations, first.stats().orphans_freed),
        (0, 1)
    );
    // The byte wakes the read here; the write runs here too, with no second move.
    std::io::Write::write_all(&mut b, b"x")?;
    let mut buf = [0u8; 1];
    assert_eq!(block_on(&second, a.read(&mut buf))?, 1);
    let write =
        futures_lite::future::block_on(poll_once(futures_lite::AsyncWriteExt::write(&mut a, b"y")));
    assert!(matches!(write, Some(Ok(1))));
    assert_eq!(second.stats().rebinds, 1, "one move");
    assert_eq!(second.stats().registrations, 1);
    Ok(())
}

#[test]
fn a_stream_read_on_two_reactors_while_a_task_waits_stays_on_both() -> io::Result<()> {
    let first = Reactor::new()?;
    let second = Reactor::new()?;
    let (a, mut b) = std::os::unix::net::UnixStream::pair()
        .and_then(|(a, b)| Ok((UnixStream::from_std(a)?, b)))?;
    let mut buf = [0u8; 1];
    let mut reader = &a;
    let mut waiting = reader.read(&mut buf);
    {
        let _enter = first.enter();
        assert!(futures_lite::future::block_on(poll_once(&mut waiting)).is_none());
    }
    {
        // A task waits to read on the first: the read is polled from two cores, so it stays
        // registered with both (the second reactor registers it: one rebind), the write where
        // it was.
        let _enter = second.enter();
        assert!(poll_read(&mut &a).is_none(), "nothing to read: it waits");
    }
    first.poll(Some(Duration::ZERO))?;
    let registrations = |r: &Reactor| r.stats().registrations;
    assert_eq!((registrations(&first), registrations(&second)), (1, 1));
    assert_eq!((first.stats().rebinds, second.stats().rebinds), (0, 1));
    // A byte reaches both epoll sets: the first reactor's event wakes its waiting task, which
    // reads it there; the second's finds it gone (a `WouldBlock`), and waits again.
    std::io::Write::write_all(&mut b, b"x")?;
    {
        let _enter = first.enter();
        assert_eq!(block_on(&first, &mut waiting)?, 1);
    }
    drop(waiting);
    // Used again on either reactor, it registers nowhere anew.
    for r in [&first, &second] {
        let _enter = r.enter();
        assert!(poll_read(&mut &a).is_none());
    }
    assert_eq!(
        (first.stats().registered, second.stats().registered),
        (1, 1)
    );
    Ok(())
}

#[test]
fn a_stream_dropped_on_another_thread_leaves_the_epoll_set_and_its_slot() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (mut a, mut b) = UnixStream::pair()?;
    assert!(poll_read(&mut a).is_none() && poll_read(&mut b).is_none());
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
fn a_stream_used_on_a_thread_with_no_runtime_returns_an_error() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (mut a, _b) = UnixStream::pair()?;
    assert!(
        poll_read(&mut a).is_none(),
        "polled here first: registered here"
    );
    let err = thread::spawn(move || {
        let mut a = a;
        poll_read(&mut a)
            .expect("an error, not a wait")
            .unwrap_err()
    })
    .join()
    .unwrap();
    assert!(err.to_string().contains("no tickless runtime"), "{err}");
    // The stream was dropped there: the reactor frees it (`_b` was never polled).
    reactor.poll(Some(Duration::ZERO))?;
    let stats = reactor.stats();
    assert_eq!((stats.registrations, stats.orphans_freed), (0, 1));
    Ok(())
}

#[test]
fn a_stream_dropped_where_its_reactor_is_no_longer_current_is_freed_later() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let (w, r) = {
        let _enter = reactor.enter();
        let (mut w, mut r) = pipe()?;
        assert!(poll_read(&mut r).is_none());
        let wrote = futures_lite::future::block_on(poll_once(futures_lite::AsyncWriteExt::write(
            &mut w, b"",
        )));
        assert!(matches!(wrote, Some(Ok(0))));
        (w, r)
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
        let mut a = UnixStream::from_std(a)?;
        assert!(poll_read(&mut a).is_none());
        Ok((a, b))
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

#[test]
fn a_stream_that_comes_back_to_a_reactor_it_left_stays_on_both() -> io::Result<()> {
    let (first, second) = (Reactor::new()?, Reactor::new()?);
    let (mut a, mut b) = std::os::unix::net::UnixStream::pair()
        .and_then(|(a, b)| Ok((UnixStream::from_std(a)?, b)))?;
    std::io::Write::write_all(&mut b, b"w")?;
    let registrations = |r: &Reactor| r.stats().registrations;
    {
        let _enter = first.enter();
        assert!(matches!(poll_read(&mut a), Some(Ok(1))));
    }
    {
        // Nothing waits on the first: the whole stream moves.
        let _enter = second.enter();
        assert!(poll_read(&mut a).is_none());
    }
    first.poll(Some(Duration::ZERO))?;
    assert_eq!((registrations(&first), registrations(&second)), (0, 1));
    {
        // Back where it was: polled from two cores, as far as it can tell, so the read stays
        // registered with both from now on, and the write stays on the second.
        let _enter = first.enter();
        assert!(poll_read(&mut a).is_none());
    }
    second.poll(Some(Duration::ZERO))?;
    assert_eq!((registrations(&first), registrations(&second)), (1, 1));
    assert_eq!((first.stats().rebinds, second.stats().rebinds), (1, 1));
    {
        // The write comes back too: it joins the read's binding here, and stays on both.
        let _enter = first.enter();
        let wrote = futures_lite::future::block_on(poll_once(futures_lite::AsyncWriteExt::write(
            &mut a, b"y",
        )));
        assert!(matches!(wrote, Some(Ok(1))));
    }
    second.poll(Some(Duration::ZERO))?;
    assert_eq!((registrations(&first), registrations(&second)), (1, 1));
    // Used on either, from now on, it registers nowhere anew.
    for r in [&first, &second, &first] {
        let _enter = r.enter();
        assert!(poll_read(&mut a).is_none());
    }
    assert_eq!(
        (first.stats().rebinds, second.stats().rebinds),
        (1, 1),
        "the write joined the read's binding"
    );
    Ok(())
}
