//! Ping-pong between two tasks on one core, over two pipes and over TCP loopback, with
//! byte-for-byte checks; and what a per-read timeout costs the timer driver, from the stats.

use std::io;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::io::pipe;
use tickless::net::{TcpListener, TcpStream};
use tickless::time::{timeout, timeout_at, Instant};
use tickless::{Builder, CoreStats, RearmPolicy, Runtime};

/// What every read of a ping-pong is wrapped in.
#[derive(Clone, Copy, PartialEq)]
enum Timed {
    /// Nothing.
    No,
    /// `timeout(1 s, read)`: a young timer, given its deadline by the loop's next reading.
    For,
    /// `timeout_at(Instant::now() + 1 s, read)`: a deadline given, placed at its first poll.
    Until,
}

/// `n` round trips of a 4-byte counter between two tasks over two pipes, every read wrapped as
/// `timed` says. Returns the runtime's total counters.
fn pingpong(rt: &Runtime, n: u32, timed: Timed) -> io::Result<CoreStats> {
    rt.block_on(async move {
        let (mut to_b, mut from_a) = pipe()?;
        let (mut to_a, mut from_b) = pipe()?;
        let b = tickless::spawn_local(async move {
            let mut buf = [0u8; 4];
            for i in 0..n {
                match timed {
                    Timed::No => from_a.read_exact(&mut buf).await?,
                    Timed::For => {
                        timeout(Duration::from_secs(1), from_a.read_exact(&mut buf)).await??
                    }
                    Timed::Until => {
                        let at = Instant::now() + Duration::from_secs(1);
                        timeout_at(at, from_a.read_exact(&mut buf)).await??
                    }
                }
                assert_eq!(u32::from_le_bytes(buf), i, "b read a wrong message");
                to_a.write_all(&(i + 1).to_le_bytes()).await?;
            }
            io::Result::Ok(())
        });
        let mut buf = [0u8; 4];
        for i in 0..n {
            to_b.write_all(&i.to_le_bytes()).await?;
            match timed {
                Timed::No => from_b.read_exact(&mut buf).await?,
                Timed::For => {
                    timeout(Duration::from_secs(1), from_b.read_exact(&mut buf)).await??
                }
                Timed::Until => {
                    let at = Instant::now() + Duration::from_secs(1);
                    timeout_at(at, from_b.read_exact(&mut buf)).await??
                }
            }
            assert_eq!(u32::from_le_bytes(buf), i + 1, "a read a wrong reply");
        }
        b.await.expect("task b")?;
        io::Result::Ok(())
    })?;
    Ok(rt.stats().total)
}

#[test]
fn pipe_pingpong_same_core() -> io::Result<()> {
    // Not stepping back from crowded CPUs: the watchdog's word to core 1 would be a wake from
    // another thread.
    let rt = Builder::new().yield_when_crowded(false).build()?;
    let s = pingpong(&rt, 10_000, Timed::No)?;
    assert_eq!(s.timer_inserts, 0);
    // Every wake was a same-core wake: the local path, never the inbox.
    assert_eq!((s.remote_wakes_sent, s.remote_wakes_avoided), (0, 0));
    assert!(s.polls >= 20_000, "{s:?}");
    Ok(())
}

#[test]
fn per_read_timeouts_rearm_the_timerfd_a_handful_of_times_by_default() -> io::Result<()> {
    let rt = Runtime::new()?;
    let s = pingpong(&rt, 100_000, Timed::Until)?;
    // A read whose data is already there completes before its timeout is ever polled, and a
    // timeout never polled registers nothing.
    assert!(s.timer_inserts > 190_000, "{s:?}");
    assert_eq!(s.timer_cancels, s.timer_inserts, "no timeout fired: {s:?}");
    assert_eq!(s.timer_fires, 0);
    // Two clock reads per timeout: the test's own `Instant::now()` for its deadline, and one
    // for the time it has left, which its default slack depends on (a `timeout_at` does not
    // know its length; a `timeout` does: see the next test). Nothing else on the way
    // (registering, cancelling, the loop) reads the clock per message.
    assert!(
        s.clock_reads <= 2 * s.timer_inserts + 100,
        "{} clock reads for {} timeouts: {s:?}",
        s.clock_reads,
        s.timer_inserts
    );
    // Lazy: armed once, then about once per second of run time (a stale arming firing).
    assert!(s.timerfd_rearms <= 10, "{s:?}");
    // Armed for an earlier timeout, the core keeps each new one out of the wheel until the
    // timerfd fires: nearly every one is cancelled before (a handful per second are placed).
    assert!(
        s.timer_cancels_detached * 100 >= s.timer_cancels * 99,
        "{s:?}"
    );
    Ok(())
}

#[test]
fn per_read_timeouts_for_a_duration_share_the_loop_s_clock_reads() -> io::Result<()> {
    let rt = Runtime::new()?;
    let s = pingpong(&rt, 100_000, Timed::For)?;
    // 200,000 timeouts (a read's data comes one turn of the loop after its timeout is made):
    // each is young until the loop's next clock reading. The core reads none per message (the
    // idle governor finds each reply at its first look), so the expiry reads one every 16
    // turns for the timeouts then alive (two: one per task), and the rest were dropped young:
    // never inserted, never counted. A read per timeout, as before, would be 200,000.
    assert!(s.clock_reads <= 40_000, "{s:?}");
    assert!(s.timer_inserts <= 2 * s.clock_reads + 100, "{s:?}");
    assert_eq!(s.timer_cancels, s.timer_inserts, "no timeout fired: {s:?}");
    assert_eq!((s.timer_fires, s.pending_timers), (0, 0));
    assert!(s.timerfd_rearms <= 10, "{s:?}");
    Ok(())
}

#[test]
fn per_read_timeouts_rearm_once_per_message_when_eager() -> io::Result<()> {
    // Exact timeouts, Eager: each cancel of the armed timeout re-programs the timerfd for
    // the next one (the 2013 hrtimer regression). Deadlines given: each timeout is placed at
    // its first poll.
    let rt = Builder::new()
        .timer_policy(RearmPolicy::Eager)
        .default_slack(Duration::ZERO)
        .build()?;
    let s = pingpong(&rt, 20_000, Timed::Until)?;
    assert_eq!(s.timer_cancels, s.timer_inserts, "{s:?}");
    assert!(s.timerfd_rearms >= 20_000, "{s:?}");
    Ok(())
}

#[test]
fn tcp_echo_over_loopback() -> io::Result<()> {
    let rt = Runtime::new()?;
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tickless::spawn_local(async move {
            let (stream, _) = listener.accept().await?;
            let (mut r, mut w) = stream.into_split();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = r.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                w.write_all(&buf[..n]).await?;
            }
            io::Result::Ok(())
        });
        let client = TcpStream::connect(addr).await?;
        client.set_nodelay(true)?;
        // 1 MiB of a pattern that no shift or repeat of the stream matches by accident.
        let sent: Vec<u8> = (0..1u32 << 20)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let (mut cr, mut cw) = client.into_split();
        let to_send = sent.clone();
        let writer = tickless::spawn_local(async move {
            for chunk in to_send.chunks(10_000) {
                cw.write_all(chunk).await?;
            }
            cw.close().await?;
            io::Result::Ok(())
        });
        let mut echoed = Vec::new();
        cr.read_to_end(&mut echoed).await?;
        writer.await.expect("writer")?;
        server.await.expect("server")?;
        assert_eq!(echoed.len(), sent.len());
        assert!(echoed == sent, "echoed bytes differ");
        io::Result::Ok(())
    })
}

/// A `block_on` future that keeps waking itself (a `yield_now` loop polling a read) still gets
/// its I/O: the loop polls the reactor every few main-future polls, as it does for tasks.
/// Counted in iterations, bounded so that a starved read fails instead of hanging.
#[test]
fn a_main_future_that_keeps_yielding_still_sees_its_io() -> io::Result<()> {
    use futures_lite::future::poll_once;
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let (mut a, mut b) = tickless::net::UnixStream::pair()?;
        let mut buf = [0u8; 1];
        // Nothing to read yet: this read finds `WouldBlock` and waits for readiness.
        assert!(poll_once(b.read(&mut buf)).await.is_none());
        a.write_all(b"x").await?;
        for spins in 0..100_000u32 {
            if let Some(read) = poll_once(b.read(&mut buf)).await {
                assert_eq!(read?, 1);
                assert!(
                    spins < 1_000,
                    "the read waited {spins} main polls for its readiness"
                );
                return Ok(());
            }
            tickless::task::yield_now().await;
        }
        panic!("the read never saw its byte: the loop never polled I/O");
    })
}
