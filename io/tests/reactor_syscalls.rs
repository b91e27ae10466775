//! System calls per round trip of a ping-pong through the reactor, counted by its own counters
//! (`IoStats`): `epoll_wait`s, `epoll_ctl`s, and the reads and writes that returned
//! `WouldBlock`. The successful reads and writes are the workload's own: two of each per round
//! trip.
//!
//! Streams are registered level-triggered, so a read that filled its buffer exactly (the 4-byte
//! `read_exact` here) clears read readiness and the next `epoll_wait` says whether more is
//! there: no speculative read that returns `EAGAIN`. A round trip costs 2 writes, 2 reads and 2
//! `epoll_wait`s, where edge-triggered registration with the speculative read costs 8 (tokio's
//! count on the same workload). Bringing the speculative read back, or an interest change per
//! message, fails these tests.

mod common;

use std::io;
use std::time::Duration;

use futures_lite::future::zip;
use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tickless_io::{pipe, UnixStream};

use tickless_io::internal::{IoStats, Reactor};

/// Round trips before counting (registrations settled, optimistic readiness used up).
const WARMUP: u32 = 100;
/// Round trips counted.
const RTTS: u32 = 2_000;

/// The pinger: sends `from..from + n`, each as 4 bytes, and checks each answer is one more.
async fn ping(
    r: &mut (impl AsyncRead + Unpin),
    w: &mut (impl AsyncWrite + Unpin),
    from: u32,
    n: u32,
) -> io::Result<()> {
    let mut buf = [0u8; 4];
    for i in from..from + n {
        w.write_all(&i.to_le_bytes()).await?;
        r.read_exact(&mut buf).await?;
        assert_eq!(u32::from_le_bytes(buf), i + 1, "wrong answer");
    }
    Ok(())
}

/// The echo: answers `n` messages with their successor, and gives its ends back (so that
/// their deregistration, and the hang-ups it causes, stay out of the count).
async fn echo<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    mut r: R,
    mut w: W,
    n: u32,
) -> io::Result<(R, W)> {
    let mut buf = [0u8; 4];
    for _ in 0..n {
        r.read_exact(&mut buf).await?;
        let m = u32::from_le_bytes(buf);
        w.write_all(&m.wrapping_add(1).to_le_bytes()).await?;
    }
    Ok((r, w))
}

/// Per round trip: `(epoll_wait, epoll_ctl, reads that said WouldBlock, writes that did,
/// total system calls)`, the total counting the workload's 2 reads and 2 writes.
fn per_round_trip(before: IoStats, after: IoStats) -> (f64, f64, f64, f64, f64) {
    let per = |a: u64, b: u64| (b - a) as f64 / f64::from(RTTS);
    let polls = per(before.polls, after.polls);
    let ctls = per(before.epoll_ctls, after.epoll_ctls);
    let reads = per(before.read_would_blocks, after.read_would_blocks);
    let writes = per(before.write_would_blocks, after.write_would_blocks);
    (
        polls,
        ctls,
        reads,
        writes,
        4.0 + polls + ctls + reads + writes,
    )
}

/// Runs the ping-pong over the two duplex channels on one reactor (both sides on its thread,
/// as on one core) and returns the per-round-trip counts.
fn measure<R, W>(
    reactor: &Reactor,
    (mut ping_r, mut ping_w): (R, W),
    (echo_r, echo_w): (R, W),
) -> io::Result<(f64, f64, f64, f64, f64)>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let total = WARMUP + RTTS;
    let pinger = async {
        ping(&mut ping_r, &mut ping_w, 0, WARMUP).await?;
        let before = reactor.stats();
        ping(&mut ping_r, &mut ping_w, WARMUP, RTTS).await?;
        Ok::<_, io::Error>((before, reactor.stats()))
    };
    let (p, e) = common::block_on(reactor, zip(pinger, echo(echo_r, echo_w, total)));
    let ((before, after), _ends) = (p?, e?);
    Ok(per_round_trip(before, after))
}

/// Asserts the level-triggered floor: 2 `epoll_wait`s, no `epoll_ctl`, no `WouldBlock`.
fn assert_six((polls, ctls, reads, writes, total): (f64, f64, f64, f64, f64)) {
    assert_eq!(
        reads, 0.0,
        "reads that returned WouldBlock per round trip (the speculative read is back?)"
    );
    assert_eq!(
        writes, 0.0,
        "writes that returned WouldBlock per round trip"
    );
    assert_eq!(
        ctls, 0.0,
        "epoll_ctl calls per round trip (interest changed per message?)"
    );
    assert!(
        polls <= 2.0,
        "{polls} epoll_wait per round trip, expected 2"
    );
    assert!(
        total <= 6.0,
        "{total} system calls per round trip, expected 6"
    );
}

#[test]
fn pipe_ping_pong_costs_six_system_calls_per_round_trip() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (to_echo, from_pinger) = pipe()?;
    let (to_pinger, from_echo) = pipe()?;
    let counts = measure(&reactor, (from_echo, to_echo), (from_pinger, to_pinger))?;
    assert_six(counts);
    Ok(())
}

#[test]
fn unix_stream_ping_pong_costs_six_system_calls_per_round_trip() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (a, b) = UnixStream::pair()?;
    // One registration per socket, for both directions: the pinger reads and writes `a`.
    let counts = measure(&reactor, (&a, &a), (&b, &b))?;
    assert_six(counts);
    Ok(())
}

#[test]
fn a_read_that_fills_the_buffer_leaves_the_rest_to_the_next_poll() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (mut w, mut r) = pipe()?;
    common::block_on(&reactor, async {
        // A read of nothing registers the reader with this reactor (its first poll).
        assert_eq!(r.read(&mut []).await?, 0);
        w.write_all(&[1, 2, 3, 4, 5, 6, 7, 8]).await?;
        let mut buf = [0u8; 4];
        let before = reactor.stats();
        r.read_exact(&mut buf).await?;
        assert_eq!(buf, [1, 2, 3, 4]);
        // The read filled the buffer: readiness is cleared, the next epoll_wait reports the
        // four bytes still there (level-triggered), and no read returns WouldBlock.
        r.read_exact(&mut buf).await?;
        assert_eq!(buf, [5, 6, 7, 8]);
        let after = reactor.stats();
        assert_eq!(after.read_would_blocks - before.read_would_blocks, 0);
        assert_eq!(after.polls - before.polls, 1, "one epoll_wait for the rest");
        assert_eq!(
            after.epoll_ctls - before.epoll_ctls,
            0,
            "read interest stayed armed"
        );
        Ok(())
    })
}

#[test]
fn an_unread_stream_does_not_make_every_poll_return() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (a, mut b) = UnixStream::pair()?;
    common::block_on(&reactor, async {
        let mut buf = [0u8; 4];
        // A read of nothing registers `a` with this reactor (its first poll).
        assert_eq!((&a).read(&mut []).await?, 0);
        // Nobody reads `a` yet: the first poll reports the data, records it, and disarms the
        // read interest (one epoll_ctl); later polls see nothing.
        b.write_all(b"ping").await?;
        let ctls = reactor.stats().epoll_ctls;
        assert!(reactor.poll(Some(Duration::ZERO))?.events >= 1);
        assert_eq!(
            reactor.stats().epoll_ctls - ctls,
            1,
            "read interest disarmed"
        );
        for _ in 0..3 {
            assert_eq!(reactor.poll(Some(Duration::ZERO))?.events, 0);
        }
        // The recorded readiness lets the read run at once.
        (&a).read_exact(&mut buf).await?;
        assert_eq!(&buf, b"ping");
        // Waiting again arms the interest again (one epoll_ctl), and the next message wakes.
        let ctls = reactor.stats().epoll_ctls;
        let (read, ()) = zip((&a).read_exact(&mut buf), async {
            b.write_all(b"pong").await.expect("write");
        })
        .await;
        read?;
        assert_eq!(&buf, b"pong");
        assert_eq!(
            reactor.stats().epoll_ctls - ctls,
            1,
            "read interest re-armed"
        );
        Ok(())
    })
}

#[test]
fn a_hang_up_nobody_waits_for_does_not_make_every_poll_return() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (a, b) = UnixStream::pair()?;
    // A read of nothing registers `a` with this reactor (its first poll).
    assert_eq!(common::block_on(&reactor, (&a).read(&mut []))?, 0);
    drop(b);
    // Level-triggered epoll reports a hang-up whatever the interest: the stream leaves the
    // set once an event finds nobody waiting.
    assert!(reactor.poll(Some(Duration::ZERO))?.events >= 1);
    for _ in 0..3 {
        assert_eq!(reactor.poll(Some(Duration::ZERO))?.events, 0);
    }
    let mut buf = [0u8; 4];
    let n = common::block_on(&reactor, (&a).read(&mut buf))?;
    assert_eq!(n, 0, "end of file");
    // Dropping a registration that has left the set makes no epoll_ctl.
    let ctls = reactor.stats().epoll_ctls;
    drop(a);
    assert_eq!(reactor.stats().epoll_ctls, ctls);
    assert_eq!(reactor.stats().registrations, 0);
    Ok(())
}

#[test]
fn a_writer_blocked_on_a_full_pipe_is_woken_and_its_interest_dropped_after() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (mut w, mut r) = pipe()?;
    let chunk = vec![7u8; 1 << 16];
    const TOTAL: usize = 1 << 20;
    common::block_on(&reactor, async {
        let writer = async {
            for _ in 0..TOTAL / chunk.len() {
                w.write_all(&chunk).await?;
            }
            Ok::<_, io::Error>(())
        };
        let reader = async {
            let mut got = 0;
            let mut buf = vec![0u8; 1 << 12];
            while got < TOTAL {
                let n = r.read(&mut buf).await?;
                assert!(n > 0, "early end of file");
                got += n;
            }
            Ok::<_, io::Error>(())
        };
        let (a, b) = zip(writer, reader).await;
        a?;
        b?;
        Ok::<_, io::Error>(())
    })?;
    assert!(reactor.stats().write_would_blocks > 0, "the pipe filled up");
    // Write interest is dropped when an event finds no writer waiting; after that, polls
    // come back empty.
    reactor.poll(Some(Duration::ZERO))?;
    reactor.poll(Some(Duration::ZERO))?;
    assert_eq!(reactor.poll(Some(Duration::ZERO))?.events, 0);
    Ok(())
}

#[test]
fn a_direction_nobody_waits_in_is_disarmed_while_the_other_stays_armed() -> io::Result<()> {
    use futures_lite::AsyncWrite;
    use std::pin::Pin;
    use std::task::{Context, Waker};

    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (a, mut b) = UnixStream::pair()?;
    let noop = Waker::noop();
    let mut cx = Context::from_waker(noop);
    // A task waits to read `a`, another to write it (its send buffer is full): both
    // directions are armed.
    let mut buf = vec![0u8; 64 * 1024];
    let mut reader = &a;
    let mut small = [0u8; 4];
    let mut read = std::pin::pin!(reader.read_exact(&mut small));
    assert!(std::future::Future::poll(read.as_mut(), &mut cx).is_pending());
    let mut sent = 0;
    let mut writer = &a;
    while let std::task::Poll::Ready(n) = Pin::new(&mut writer).poll_write(&mut cx, &buf) {
        sent += n?;
    }
    // `b` reads it all: `a` is writable, its writer is woken, and nobody waits to write any
    // more: the write interest is disarmed (the read interest stays), and polls go quiet.
    let mut drained = 0;
    while drained < sent {
        match Pin::new(&mut b).poll_read(&mut cx, &mut buf) {
            std::task::Poll::Ready(n) => drained += n?,
            std::task::Poll::Pending => {
                reactor.poll(Some(Duration::from_millis(10)))?;
            }
        }
    }
    let mut polls = 0;
    while reactor.poll(Some(Duration::ZERO))?.events > 0 {
        polls += 1;
        assert!(
            polls < 10,
            "a direction nobody waits in keeps being reported"
        );
    }
    for _ in 0..3 {
        assert_eq!(reactor.poll(Some(Duration::ZERO))?.events, 0);
    }
    // The read interest stayed armed: data for the waiting reader is reported.
    common::block_on(&reactor, b.write_all(b"ping"))?;
    assert!(reactor.poll(Some(Duration::ZERO))?.events >= 1);
    common::block_on(&reactor, read)?;
    assert_eq!(&small, b"ping");
    Ok(())
}

#[test]
fn dropping_a_registration_still_in_the_set_removes_it_with_one_epoll_ctl() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (a, _b) = UnixStream::pair()?;
    // A read of nothing registers `a` (its first poll); it stays in the set, armed for reads.
    assert_eq!(common::block_on(&reactor, (&a).read(&mut []))?, 0);
    assert_eq!(reactor.stats().registrations, 1);
    let ctls = reactor.stats().epoll_ctls;
    drop(a);
    assert_eq!(reactor.stats().epoll_ctls - ctls, 1, "one EPOLL_CTL_DEL");
    assert_eq!(reactor.stats().registrations, 0);
    Ok(())
}

#[test]
fn a_writer_woken_by_writability_that_blocks_again_finds_its_interest_still_armed() -> io::Result<()>
{
    use std::io::Read;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    let reactor = Reactor::new()?;
    let _enter = reactor.enter();
    let (a, mut b) = std::os::unix::net::UnixStream::pair()?;
    b.set_nonblocking(true)?;
    let mut a = UnixStream::from_std(a)?;
    let woken = Arc::new(Count(AtomicUsize::new(0)));
    let waker = Waker::from(Arc::clone(&woken));
    let mut cx = Context::from_waker(&waker);
    let buf = vec![0u8; 64 * 1024];
    let mut fill = |a: &mut UnixStream| -> io::Result<usize> {
        let mut sent = 0;
        while let Poll::Ready(n) = Pin::new(&mut *a).poll_write(&mut cx, &buf) {
            sent += n?;
        }
        Ok(sent)
    };
    // A task writes `a` until its buffer is full and waits: the write interest is armed.
    assert!(fill(&mut a)? > 0);
    let ctls = reactor.stats().epoll_ctls;
    // The peer reads it all; the event finds the writer waiting and wakes it.
    let mut sink = vec![0u8; 64 * 1024];
    while b.read(&mut sink).is_ok() {}
    while woken.0.load(Ordering::SeqCst) == 0 {
        reactor.poll(None)?;
    }
    // The writer fills the buffer again and waits: its interest was kept, so no epoll_ctl.
    assert!(fill(&mut a)? > 0);
    assert_eq!(
        reactor.stats().epoll_ctls - ctls,
        0,
        "the write interest stayed armed for its waiter"
    );
    Ok(())
}
