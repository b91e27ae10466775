//! A core that cannot run holds up none of its connections: while a task blocks core 1's
//! thread, a core that runs takes core 1's ready I/O (`Builder::harvest_after`) and serves
//! its connections. Counted, never timed: which replies came before the blocking call ended (a
//! flag it sets as it returns), the harvests in `CoreStats`; a generous hang guard only.

use std::io::{self, Read, Write};
use std::net::TcpStream as StdStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::TcpListener;
use tickless::runtime::{Builder, Placement};
use tickless::Stats;

/// Connections served by core 1.
const CONNS: usize = 20;
/// How long the blocking call holds core 1's thread: long enough for the stall detector's
/// watchdog (two checks, 12.5 ms apart at the default threshold) to tell a sleeping core, on
/// a loaded machine; no assertion depends on it.
const BLOCK: Duration = Duration::from_secs(2);
/// The hang guard of the waits on the runtime: a test that needs it failed.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// Waits (on the calling thread) until `done` holds, or the hang guard runs out.
fn wait_for(done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() && start.elapsed() < HANG_GUARD {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What one run saw: the replies that came before core 1's blocking call returned, the cores
/// that served the requests, and the counters.
struct Seen {
    answered_early: usize,
    served_on: [usize; 2],
    stats: Stats,
}

/// Core 1 serves `CONNS` connections (each its own `Send` task, started on core 1), then a
/// task pinned to core 1 blocks its thread for `BLOCK` while each connection sends one
/// request; core 0 is in `block_on`, parked.
fn serve_while_core_1_blocks(harvest_after: Option<Duration>) -> io::Result<Seen> {
    let rt = Builder::new()
        .cores(2)
        .placement(Placement::Local)
        // Harvesting alone: with stealing, a slow build (AddressSanitizer) sees core 0 take
        // core 1's queued connection tasks before their first poll.
        .steal_after(None)
        .harvest_after(harvest_after)
        .build()?;
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = std_listener.local_addr()?;
    std_listener.set_nonblocking(true)?;
    let waiting = Arc::new(AtomicUsize::new(0));
    let served_on: Arc<[AtomicUsize; 2]> = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let (waiting2, served_on2) = (waiting.clone(), served_on.clone());
    // Core 1's accept loop: each connection's task starts on core 1 (`Placement::Local`).
    let accept = rt.handle(1).spawn(async move {
        let listener = TcpListener::from_std(std_listener)?;
        for _ in 0..CONNS {
            let (mut stream, _) = listener.accept().await?;
            let (waiting, served_on) = (waiting2.clone(), served_on2.clone());
            tickless::spawn(async move {
                assert_eq!(tickless::core_id(), 1, "started where it was accepted");
                waiting.fetch_add(1, Ordering::SeqCst);
                let mut byte = [0u8; 1];
                while stream.read(&mut byte).await? == 1 {
                    served_on[tickless::core_id()].fetch_add(1, Ordering::SeqCst);
                    stream.write_all(&byte).await?;
                }
                io::Result::Ok(())
            });
        }
        io::Result::Ok(())
    });
    let started = Arc::new(AtomicBool::new(false));
    let ended = Arc::new(AtomicBool::new(false));
    let (started2, ended2) = (started.clone(), ended.clone());
    let core_1 = rt.handle(1);
    let (done, client_done) = tokio::sync::oneshot::channel::<()>();
    let client = std::thread::spawn(move || -> io::Result<usize> {
        let _done = done;
        let mut conns = (0..CONNS)
            .map(|_| StdStream::connect(addr))
            .collect::<io::Result<Vec<_>>>()?;
        // Every connection's task waits for its request on core 1.
        wait_for(|| waiting.load(Ordering::SeqCst) == CONNS);
        assert_eq!(waiting.load(Ordering::SeqCst), CONNS, "hang guard");
        // Pinned: the blocking call stays on core 1.
        let blocker = started2.clone();
        let _blocking = core_1.spawn_pinned(move || async move {
            blocker.store(true, Ordering::SeqCst);
            std::thread::sleep(BLOCK);
            ended2.store(true, Ordering::SeqCst);
        });
        wait_for(|| started2.load(Ordering::SeqCst));
        for (i, conn) in conns.iter_mut().enumerate() {
            conn.write_all(&[i as u8])?;
        }
        let mut early = 0;
        for (i, conn) in conns.iter_mut().enumerate() {
            let mut byte = [0u8; 1];
            conn.read_exact(&mut byte)?;
            assert_eq!(byte[0], i as u8);
            if !ended.load(Ordering::SeqCst) {
                early += 1;
            }
        }
        Ok(early)
    });
    let seen = rt.block_on(async move {
        accept.await.expect("the accept loop")?;
        // Core 0 stays in `block_on`, parked, until the client is done (no timer wakes it:
        // the stall detector's watchdog tells it of core 1's long poll).
        let _ = client_done.await;
        client.join().expect("the client thread")
    });
    let answered_early = seen?;
    Ok(Seen {
        answered_early,
        served_on: [
            served_on[0].load(Ordering::SeqCst),
            served_on[1].load(Ordering::SeqCst),
        ],
        stats: rt.stats(),
    })
}

#[test]
fn connections_of_a_blocked_core_are_served_by_a_core_that_runs() -> io::Result<()> {
    let seen = serve_while_core_1_blocks(Some(tickless::runtime::DEFAULT_HARVEST_AFTER))?;
    assert_eq!(
        seen.answered_early, CONNS,
        "every request answered while core 1 was blocked"
    );
    assert_eq!(seen.served_on[0], CONNS, "served by core 0");
    assert!(seen.stats.cores[0].harvests >= 1);
    assert!(seen.stats.cores[0].harvested_events >= 1);
    assert_eq!(seen.stats.cores[1].harvests, 0);
    Ok(())
}

#[test]
fn without_harvesting_a_blocked_core_holds_up_its_connections() -> io::Result<()> {
    let seen = serve_while_core_1_blocks(None)?;
    assert_eq!(seen.answered_early, 0);
    assert_eq!(
        seen.served_on[1], CONNS,
        "served by core 1, once it came back"
    );
    assert_eq!(seen.stats.total.harvests, 0);
    Ok(())
}

#[test]
fn a_runtime_that_keeps_up_harvests_nothing() -> io::Result<()> {
    // Core 0 serves a ping-pong over a socket pair for a while; core 1, idle, holds a listener
    // of its own that nobody connects to. Core 1's word does not move (it sleeps), so core 0
    // may look at its epoll set, but nothing is ever ready there: nothing is taken, nothing
    // moves.
    let rt = Builder::new().cores(2).build()?;
    let listener = rt
        .handle(1)
        .spawn(async {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            let _ = futures_lite::future::poll_once(listener.accept()).await;
            io::Result::Ok(listener)
        })
        .join()
        .expect("core 1's listener")?;
    let rounds = rt.block_on(async {
        let (a, b) = tickless::net::UnixStream::pair()?;
        let echo = tickless::spawn(async move {
            let mut b = b;
            let mut byte = [0u8; 1];
            while b.read(&mut byte).await? == 1 {
                b.write_all(&byte).await?;
            }
            io::Result::Ok(())
        });
        let mut a = a;
        let mut rounds = 0u32;
        for _ in 0..2_000 {
            a.write_all(b"x").await?;
            let mut byte = [0u8; 1];
            a.read_exact(&mut byte).await?;
            rounds += 1;
        }
        drop(a);
        echo.await.expect("the echo task")?;
        io::Result::Ok(rounds)
    })?;
    assert_eq!(rounds, 2_000);
    let stats = rt.stats();
    assert_eq!(stats.total.harvests, 0);
    assert_eq!(stats.total.harvested_events, 0);
    assert_eq!(stats.total.io_rebinds, 0, "nothing moved");
    drop(listener);
    Ok(())
}

#[test]
fn a_core_that_sleeps_is_never_harvested() -> io::Result<()> {
    // Core 1 echoes bytes in a task pinned to it and sleeps between them; core 0 writes a byte
    // and then sleeps a while (it parks, and looks at its peers there) before it reads the
    // echo. Core 1's word does not move while it sleeps, yet the kernel wakes it for its own
    // byte: taking its events would only cost a wake back to it. Core 0 looks at core 1 at none
    // of its parks, and takes nothing.
    let rt = Builder::new()
        .cores(2)
        .harvest_after(Some(Duration::from_micros(100)))
        .build()?;
    let (a, b) = std::os::unix::net::UnixStream::pair()?;
    let echo = rt.handle(1).spawn_pinned(move || async move {
        let mut b = tickless::net::UnixStream::from_std(b)?;
        let mut byte = [0u8; 1];
        while b.read(&mut byte).await? == 1 {
            b.write_all(&byte).await?;
        }
        io::Result::Ok(())
    });
    let core_1 = rt.handle(1);
    wait_for(|| core_1.is_parked());
    rt.block_on(async {
        let mut a = tickless::net::UnixStream::from_std(a)?;
        for _ in 0..20 {
            a.write_all(b"x").await?;
            tickless::time::sleep(Duration::from_millis(2)).await;
            let mut byte = [0u8; 1];
            a.read_exact(&mut byte).await?;
        }
        io::Result::Ok(())
    })?;
    echo.join().expect("the echo task")?;
    let core_0 = &rt.stats().cores[0];
    assert_eq!(core_0.harvest_looks, 0, "core 0 looked at a sleeping core");
    assert_eq!(core_0.harvests, 0);
    Ok(())
}
