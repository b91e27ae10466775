//! The tokio context (`Builder::tokio_context`, feature `tokio-compat`): tokio's spawn, time and
//! net work from tickless tasks on every core, on a tokio runtime of the core's own that the
//! core's thread drives, so they run on that thread and wake nobody across threads.
//!
//! Waits that would hang if a wake were lost are bounded by a 60 s guard (a failure, never a
//! measurement: nothing here asserts on time).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::ThreadId;
use std::time::Duration;

use tickless::Builder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a wait may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(60);

/// Runs a test's body on a thread of its own and waits for it, failing on a hang (a lost wake
/// in a `block_on` would otherwise hang the test binary).
fn guarded(body: impl FnOnce() -> io::Result<()> + Send + 'static) -> io::Result<()> {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let result = body();
        let _ = tx.send(());
        result
    });
    match rx.recv_timeout(HANG) {
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the test hung for {HANG:?}"),
        _ => thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
    }
}

/// `rounds` round trips of 8 bytes: a tokio client (the caller's task, on its core's tokio
/// reactor) against a tickless echo task of the same core (tickless's streams).
async fn tokio_client_of_a_tickless_echo(rounds: u64) -> io::Result<()> {
    let listener = tickless::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let echo = tickless::spawn(async move {
        let (mut s, _) = listener.accept().await?;
        let mut buf = [0u8; 8];
        for _ in 0..rounds {
            futures_lite::AsyncReadExt::read_exact(&mut s, &mut buf).await?;
            futures_lite::AsyncWriteExt::write_all(&mut s, &buf).await?;
        }
        io::Result::Ok(())
    });
    let mut c = tokio::net::TcpStream::connect(addr).await?;
    let mut buf = [0u8; 8];
    for i in 0..rounds {
        c.write_all(&i.to_le_bytes()).await?;
        c.read_exact(&mut buf).await?;
        assert_eq!(u64::from_le_bytes(buf), i);
    }
    echo.await.unwrap()
}

/// Runs `f` on core `core` of `rt` and waits for it, failing on a hang.
fn on_core<T: Send + 'static>(
    rt: &tickless::Runtime,
    core: usize,
    f: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    rt.handle(core).spawn(async move {
        let _ = tx.send(f.await);
    });
    rx.recv_timeout(HANG).expect("the task hung")
}

#[test]
fn tokio_spawn_time_and_net_run_on_the_core_that_calls_them() -> io::Result<()> {
    guarded(move || {
        let rt = Builder::new().cores(2).tokio_context(true).build()?;
        for core in 0..2 {
            let out = rt.handle(core).spawn(async move {
                assert_eq!(tickless::core_id(), core);
                let here = std::thread::current().id();
                tokio::time::sleep(Duration::from_millis(1)).await;
                let ran_on = tokio::spawn(async { std::thread::current().id() })
                    .await
                    .unwrap();
                assert_eq!(ran_on, here, "a tokio task runs on its core's thread");
                // A tokio TCP echo, polled by the core's tokio reactor, awaited by a tickless task.
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                let addr = listener.local_addr()?;
                let server = tokio::spawn(async move {
                    let (mut s, _) = listener.accept().await?;
                    let mut buf = [0u8; 2];
                    s.read_exact(&mut buf).await?;
                    s.write_all(&buf).await?;
                    io::Result::Ok(std::thread::current().id())
                });
                let mut c = tokio::net::TcpStream::connect(addr).await?;
                c.write_all(b"hi").await?;
                let mut back = [0u8; 2];
                c.read_exact(&mut back).await?;
                assert_eq!(server.await.unwrap()?, here);
                assert_eq!(&back, b"hi");
                io::Result::Ok(42)
            });
            // Core 0 runs inside block_on; core 1 on its own.
            let got = if core == 0 {
                rt.block_on(out)
            } else {
                out.join()
            };
            assert_eq!(got.unwrap()?, 42);
        }
        Ok(())
    })
}

/// 200 round trips over a tokio TCP connection between a tickless task and a tokio task of
/// core 1: every readiness is seen by core 1's own tokio reactor, so no wake crosses threads
/// (the earlier design, one tokio thread for the runtime, sent about 0.6 a round trip).
#[test]
fn a_tokio_socket_s_wakes_stay_on_the_core() -> io::Result<()> {
    guarded(move || {
        const ROUND_TRIPS: usize = 200;
        let rt = Builder::new().cores(2).tokio_context(true).build()?;
        let before = rt.stats().cores[1];
        let done = on_core(&rt, 1, async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let addr = listener.local_addr()?;
            let echo = tokio::spawn(async move {
                let (mut s, _) = listener.accept().await?;
                let mut buf = [0u8; 8];
                for _ in 0..ROUND_TRIPS {
                    s.read_exact(&mut buf).await?;
                    s.write_all(&buf).await?;
                }
                io::Result::Ok(())
            });
            let mut c = tokio::net::TcpStream::connect(addr).await?;
            let mut buf = [0u8; 8];
            for i in 0..ROUND_TRIPS {
                c.write_all(&(i as u64).to_le_bytes()).await?;
                c.read_exact(&mut buf).await?;
                assert_eq!(u64::from_le_bytes(buf), i as u64);
            }
            echo.await.unwrap()
        });
        done?;
        let spent = rt.stats().cores[1] - before;
        // The spawn from this thread is the one hand-over (sent or avoided).
        assert!(
            spent.remote_wakes_sent + spent.remote_wakes_avoided <= 2,
            "no wake crosses threads: {spent:?}"
        );
        assert!(spent.parks > 0, "the core parked in tokio: {spent:?}");
        Ok(())
    })
}

#[test]
fn a_tokio_task_wakes_a_tickless_task_of_its_core_while_the_core_is_parked() -> io::Result<()> {
    guarded(move || {
        let rt = Builder::new().cores(2).tokio_context(true).build()?;
        let got = on_core(&rt, 1, async {
            let (tx, rx) = tokio::sync::oneshot::channel();
            tokio::spawn(async move {
                // The core is parked in tokio meanwhile: the send wakes a tickless task of this
                // core on this thread, which writes no descriptor.
                tokio::time::sleep(Duration::from_millis(5)).await;
                let _ = tx.send(7);
            });
            rx.await.unwrap()
        });
        assert_eq!(got, 7);
        Ok(())
    })
}

#[test]
fn a_tokio_task_wakes_block_on() -> io::Result<()> {
    guarded(move || {
        let rt = Builder::new().cores(1).tokio_context(true).build()?;
        let got = rt.block_on(async {
            tokio::spawn(async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                7
            })
            .await
            .unwrap()
        });
        assert_eq!(got, 7);
        Ok(())
    })
}

/// `block_on` on a tokio socket whose peer is a tickless task of core 0 (tickless's stream):
/// 200 round trips, the core spinning between them, and the socket's readiness comes in a
/// tokio turn taken while the core spins (it must end the spin, or the core parks with its
/// `block_on` future woken). A fixed spin window, not the idle governor's: the governor learns
/// from timings, and under AddressSanitizer it learned not to spin (CI: `governor_spins` 0).
#[test]
fn block_on_awaits_a_tokio_socket_fed_by_a_tickless_task_of_its_core() -> io::Result<()> {
    guarded(move || {
        const ROUND_TRIPS: u64 = 200;
        let rt = Builder::new()
            .cores(1)
            .tokio_context(true)
            .idle_governor(false)
            .spin_before_park(Duration::from_millis(1))
            .build()?;
        rt.block_on(tokio_client_of_a_tickless_echo(ROUND_TRIPS))?;
        let stats = rt.stats().cores[0];
        assert!(stats.spins > 0, "the core spun: {stats:?}");
        // Every wake of the `block_on` future came from the core's own thread, inside its
        // tokio runtime: none was handed over as a remote wake (one a round trip, counted as
        // avoided, if it went through the inbox's wake rule).
        assert!(
            stats.remote_wakes_sent + stats.remote_wakes_avoided < 5,
            "{stats:?}"
        );
        Ok(())
    })
}

/// A tickless stream is level-triggered: a read that fills its buffer exactly clears the
/// stream's readiness, and the core's next poll of its epoll reports the bytes left behind.
/// Parked in tokio, the core's epoll descriptor makes no new edge for them (the stream's
/// interest is set already): the core must poll its epoll before it parks, or the second read
/// waits for ever.
#[test]
fn bytes_left_behind_by_a_full_read_are_read_without_a_new_edge() -> io::Result<()> {
    guarded(move || {
        use std::io::{Read, Write};
        let rt = Builder::new().cores(2).tokio_context(true).build()?;
        let (addr_tx, addr_rx) = mpsc::channel();
        let (tx, rx) = mpsc::channel();
        rt.handle(1).spawn(async move {
            let read = async {
                let listener = tickless::net::TcpListener::bind("127.0.0.1:0").await?;
                let _ = addr_tx.send(listener.local_addr()?);
                let (mut s, _) = listener.accept().await?;
                // The ack, then (in the same poll) a read that waits: the stream's interest
                // is set before the client, which waits for the ack, sends anything.
                futures_lite::AsyncWriteExt::write_all(&mut s, b"k").await?;
                let (mut first, mut second) = ([0u8; 24], [0u8; 24]);
                futures_lite::AsyncReadExt::read_exact(&mut s, &mut first).await?;
                futures_lite::AsyncReadExt::read_exact(&mut s, &mut second).await?;
                io::Result::Ok((first, second))
            };
            let _ = tx.send(read.await);
        });
        let addr = addr_rx.recv_timeout(HANG).expect("no listener");
        let mut client = std::net::TcpStream::connect(addr)?;
        let mut ack = [0u8; 1];
        client.read_exact(&mut ack)?;
        client.write_all(&[7u8; 48])?; // one write: both halves arrive together
        let (first, second) = rx.recv_timeout(HANG).expect("the second read hung")?;
        assert_eq!((first, second), ([7u8; 24], [7u8; 24]));
        Ok(())
    })
}

#[test]
fn a_tickless_timer_set_by_a_tokio_task_fires() -> io::Result<()> {
    guarded(move || {
        let rt = Builder::new().cores(2).tokio_context(true).build()?;
        let fires_before = rt.stats().cores[1].timer_fires;
        let got = on_core(&rt, 1, async {
            // Registered on core 1's wheel from inside its tokio park: earlier than its device
            // (armed for nothing), so the park must end for the core to arm it.
            tokio::spawn(async {
                tickless::time::sleep(Duration::from_millis(2)).await;
                tickless::core_id()
            })
            .await
            .unwrap()
        });
        assert_eq!(got, 1);
        assert!(rt.stats().cores[1].timer_fires > fires_before);
        Ok(())
    })
}

#[test]
fn a_busy_core_still_runs_its_tokio_tasks() -> io::Result<()> {
    guarded(move || {
        let rt = Builder::new().cores(2).tokio_context(true).build()?;
        let turns = on_core(&rt, 1, async {
            let set = Arc::new(AtomicBool::new(false));
            let setter = set.clone();
            tokio::spawn(async move { setter.store(true, Ordering::Release) });
            // The core never goes idle while this loops: the tokio task runs at a fairness poll.
            let mut turns = 0u64;
            while !set.load(Ordering::Acquire) {
                tickless::task::yield_now().await;
                turns += 1;
            }
            turns
        });
        assert!(turns > 0);
        Ok(())
    })
}

#[test]
fn core_0_s_tokio_runtime_runs_while_no_thread_is_in_block_on() -> io::Result<()> {
    guarded(move || {
        let rt = Builder::new().cores(2).tokio_context(true).build()?;
        let (tx, rx) = mpsc::channel::<ThreadId>();
        let block_on_thread = std::thread::current().id();
        rt.block_on(async move {
            // On core 0's tokio runtime; its timer fires after `block_on` has returned.
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let _ = tx.send(std::thread::current().id());
            });
        });
        let ran_on = rx
            .recv_timeout(HANG)
            .expect("core 0's tokio task never ran");
        assert_ne!(ran_on, block_on_thread, "driven by the stand-in thread");
        // And back: a block_on drives it again.
        let here = rt.block_on(async {
            tokio::spawn(async { std::thread::current().id() })
                .await
                .unwrap()
        });
        assert_eq!(here, block_on_thread);
        Ok(())
    })
}

#[test]
fn a_tokio_socket_made_on_core_0_serves_core_1_outside_block_on() -> io::Result<()> {
    guarded(move || {
        use std::io::{Read, Write};
        let rt = Builder::new().cores(2).tokio_context(true).build()?;
        // Accepted on core 0: registered with core 0's tokio reactor.
        let (mut client, server) = rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let client = std::net::TcpStream::connect(listener.local_addr()?)?;
            let (server, _) = listener.accept().await?;
            io::Result::Ok((client, server))
        })?;
        // Used from core 1 while no thread is in block_on: core 0's tokio reactor, which sees the
        // socket's readiness, is driven all the same (by the stand-in thread).
        let (tx, rx) = mpsc::channel();
        rt.handle(1).spawn(async move {
            let mut server = server;
            let mut buf = [0u8; 3];
            let echoed = async {
                server.read_exact(&mut buf).await?;
                server.write_all(&buf).await
            };
            let _ = tx.send(echoed.await);
        });
        client.set_read_timeout(Some(HANG))?;
        client.write_all(b"abc")?;
        let mut reply = [0u8; 3];
        client.read_exact(&mut reply)?;
        assert_eq!(&reply, b"abc");
        rx.recv_timeout(HANG).expect("the echo hung")?;
        Ok(())
    })
}

#[test]
fn without_the_switch_tokio_calls_fail_as_on_any_non_tokio_thread() -> io::Result<()> {
    guarded(move || {
        let rt = Builder::new().cores(1).tokio_context(false).build()?;
        let err = rt.block_on(async {
            tickless::spawn(async { tokio::time::sleep(Duration::from_millis(1)).await })
                .await
                .unwrap_err()
        });
        assert!(
            err.is_panic(),
            "tokio's own panic, caught as the task's result"
        );
        Ok(())
    })
}

#[test]
fn the_tokio_runtimes_go_away_with_the_tickless_one() -> io::Result<()> {
    guarded(move || {
        let rt = Builder::new().cores(2).tokio_context(true).build()?;
        let pending = rt
            .handle(1)
            .spawn(async { tokio::time::sleep(Duration::from_secs(3600)).await });
        // A tokio task on core 0's runtime, driven by the stand-in once block_on returns.
        let (dropped_tx, dropped_rx) = mpsc::channel::<()>();
        rt.block_on(async move {
            tokio::spawn(async move {
                let _tell = OnDrop(dropped_tx);
                std::future::pending::<()>().await
            });
            tokio::task::yield_now().await
        });
        // Shut down on another thread: the stand-in ends, each core's tokio runtime drops its tasks.
        let stopped = std::thread::spawn(move || rt.shutdown(Duration::from_secs(10)))
            .join()
            .unwrap();
        assert_eq!(stopped, Ok(()));
        assert!(pending.join().unwrap_err().is_cancelled());
        assert_eq!(dropped_rx.try_recv(), Err(mpsc::TryRecvError::Disconnected));
        Ok(())
    })
}

/// Drops its sender when dropped (the receiver sees the disconnection).
struct OnDrop(#[allow(dead_code)] mpsc::Sender<()>);

/// A tickless timer a tokio task sets while its core is parked in tokio, earlier than the
/// timer the core's device is programmed for (an hour away): the park ends for the core to
/// arm it (compared with the programmed instant, not only when nothing is programmed).
#[test]
fn a_tokio_task_s_tickless_timer_earlier_than_the_programmed_one_fires() -> io::Result<()> {
    guarded(move || {
        let rt = Builder::new().cores(2).tokio_context(true).build()?;
        let _later = rt
            .handle(1)
            .spawn(tickless::time::sleep(Duration::from_secs(3600)));
        let got = on_core(&rt, 1, async {
            tokio::spawn(async {
                tickless::time::sleep(Duration::from_millis(2)).await;
                tickless::core_id()
            })
            .await
            .unwrap()
        });
        assert_eq!(got, 1);
        Ok(())
    })
}

/// A core waiting for a tickless timer parks in tokio until it fires, a few times at most, not
/// in a loop: the park's check ends it only for a timer earlier than the programmed instant
/// (with no wakeup lead, the programmed instant is the timer's own).
#[test]
fn a_core_parked_in_tokio_for_its_timer_parks_a_few_times_not_in_a_loop() -> io::Result<()> {
    guarded(move || {
        let rt = Builder::new()
            .cores(2)
            .tokio_context(true)
            .wakeup_lead_max(Duration::ZERO)
            .build()?;
        let before = rt.stats().cores[1];
        on_core(&rt, 1, tickless::time::sleep(Duration::from_millis(50)));
        let spent = rt.stats().cores[1] - before;
        assert!(spent.parks <= 10, "one park for the timer: {spent:?}");
        Ok(())
    })
}

/// `block_on`'s future woken on its own core outside tokio (by itself, 100 times, after a park
/// in tokio) tells the core nothing through its inbox: the loop looks at the flag anyway.
/// (Through the inbox, each wake would count as a remote wake, avoided or sent.)
#[test]
fn block_on_woken_on_its_own_core_outside_tokio_sends_nothing() -> io::Result<()> {
    guarded(move || {
        const WAKES: u64 = 100;
        let rt = Builder::new().cores(1).tokio_context(true).build()?;
        let before = rt.stats().cores[0];
        rt.block_on(async {
            // A park in tokio, then a turn of it: the core has been inside tokio and left.
            tokio::time::sleep(Duration::from_millis(1)).await;
            for _ in 0..WAKES {
                tickless::task::yield_now().await;
            }
        });
        let spent = rt.stats().cores[0] - before;
        assert!(
            spent.remote_wakes_sent + spent.remote_wakes_avoided < WAKES / 2,
            "a wake on its own core goes through no inbox: {spent:?}"
        );
        Ok(())
    })
}

/// A tokio blocking task still running does not hold the runtime's shutdown up: each core's
/// tokio runtime is shut down in the background, as tokio's `shutdown_background` (a plain
/// drop of tokio's runtime waits for its blocking threads).
#[test]
fn a_running_tokio_blocking_task_does_not_hold_the_shutdown_up() -> io::Result<()> {
    guarded(move || {
        let rt = Builder::new().cores(2).tokio_context(true).build()?;
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (started_tx, started_rx) = mpsc::channel::<()>();
        rt.handle(1).spawn(async move {
            let _ = tokio::task::spawn_blocking(move || {
                let _ = started_tx.send(());
                let _ = release_rx.recv();
            })
            .await;
        });
        started_rx
            .recv_timeout(HANG)
            .expect("the blocking task never started");
        let stopped = std::thread::spawn(move || rt.shutdown(Duration::from_secs(10)))
            .join()
            .unwrap();
        drop(release_tx);
        assert_eq!(
            stopped,
            Ok(()),
            "no core was left stuck in its tokio runtime's drop"
        );
        Ok(())
    })
}

/// A core that spins before it parks (a fixed window) gives tokio a turn at each look for
/// work: the readiness of a tokio socket, which only tokio's reactor sees, ends the spin, so
/// 100 round trips between `block_on` (a tokio socket) and a tickless task of core 0 (the
/// other end) park the core hardly ever (without the turn, once a round trip, each after a
/// whole window).
#[test]
fn a_spinning_core_sees_a_tokio_socket_s_readiness_without_parking() -> io::Result<()> {
    guarded(move || {
        const ROUND_TRIPS: u64 = 100;
        let rt = Builder::new()
            .cores(1)
            .tokio_context(true)
            .spin_before_park(Duration::from_millis(2))
            .build()?;
        let before = rt.stats().cores[0];
        rt.block_on(tokio_client_of_a_tickless_echo(ROUND_TRIPS))?;
        let spent = rt.stats().cores[0] - before;
        assert!(
            spent.parks < ROUND_TRIPS / 4,
            "the spins caught the tokio socket's readiness: {spent:?}"
        );
        Ok(())
    })
}

#[test]
fn a_blocking_closure_has_its_core_s_tokio_context() -> io::Result<()> {
    guarded(|| {
        let rt = Builder::new().cores(2).tokio_context(true).build()?;
        let core_thread = on_core(&rt, 1, async { std::thread::current().id() });
        let (present, ran_on) = on_core(&rt, 1, async {
            tickless::task::spawn_blocking(|| {
                let present = tokio::runtime::Handle::try_current().is_ok();
                // The common shape: a blocking closure that waits for async work. The task
                // runs on core 1's tokio runtime, so on core 1's thread.
                let ran_on = tokio::runtime::Handle::current().block_on(async {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    tokio::spawn(async { std::thread::current().id() })
                        .await
                        .unwrap()
                });
                (present, ran_on)
            })
            .await
            .unwrap()
        });
        assert!(present, "tokio's handle is entered on the blocking thread");
        assert_eq!(ran_on, core_thread, "spawned onto the core's tokio runtime");
        Ok(())
    })
}

/// The context switches so far (voluntary and involuntary) of this process's thread `tid`: a
/// thread asleep in `epoll_wait` makes none.
fn switches_of(tid: libc::pid_t) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
    status
        .lines()
        .filter(|l| l.contains("ctxt_switches:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

#[test]
fn an_idle_runtime_with_the_default_tokio_context_never_wakes() -> io::Result<()> {
    guarded(|| {
        // The default with the feature: a tokio runtime per core, and, once `block_on` has
        // returned, the thread that runs core 0 (and its tokio runtime) meanwhile.
        let rt = Builder::new().cores(2).build()?;
        let core_0_tokio = rt.block_on(async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            tokio::spawn(async {}).await.unwrap();
            tokio::runtime::Handle::current()
        });
        // SAFETY: `gettid` has no preconditions.
        let core_1 = on_core(&rt, 1, async { unsafe { libc::gettid() } });
        // A tokio task of core 0's, run by the stand-in thread now.
        let (tx, rx) = mpsc::channel();
        core_0_tokio.spawn(async move {
            // SAFETY: `gettid` has no preconditions.
            let _ = tx.send(unsafe { libc::gettid() });
        });
        let stand_in = rx.recv_timeout(HANG).expect("the stand-in runs");
        while !rt.handle(1).is_parked() {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Let both settle in their wait (a wait, not a measurement).
        std::thread::sleep(Duration::from_millis(50));
        let before = (switches_of(core_1), switches_of(stand_in));
        std::thread::sleep(Duration::from_millis(300));
        let after = (switches_of(core_1), switches_of(stand_in));
        assert_eq!(
            after, before,
            "an idle core and the stand-in sleep without a wakeup"
        );
        Ok(())
    })
}

#[test]
fn a_tokio_task_on_core_0_with_tickless_io_and_timers_keeps_serving_after_block_on_returns(
) -> io::Result<()> {
    guarded(move || {
        use std::io::{Read, Write};
        // The default tokio context (feature `tokio-compat`).
        let rt = Builder::new().cores(2).build()?;
        let echoed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = echoed.clone();
        // axum's `on_upgrade` shape: a `tokio::spawn`ed task on core 0 that owns a tickless
        // stream and waits on tickless timers, outliving the `block_on` that started it.
        let mut client = rt.block_on(async move {
            let listener = tickless::net::TcpListener::bind("127.0.0.1:0").await?;
            let client = std::net::TcpStream::connect(listener.local_addr()?)?;
            let (mut server, _) = listener.accept().await?;
            tokio::spawn(async move {
                let mut buf = [0u8; 4];
                loop {
                    if futures_lite::AsyncReadExt::read_exact(&mut server, &mut buf)
                        .await
                        .is_err()
                    {
                        return;
                    }
                    tickless::time::sleep(Duration::from_millis(1)).await;
                    // Counted before the echo, which the client waits for.
                    counted.fetch_add(buf.len(), Ordering::SeqCst);
                    if futures_lite::AsyncWriteExt::write_all(&mut server, &buf)
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            });
            io::Result::Ok(client)
        })?;
        client.set_read_timeout(Some(HANG))?;
        for round in 0..10u32 {
            client.write_all(&round.to_le_bytes())?;
            let mut reply = [0u8; 4];
            client.read_exact(&mut reply)?;
            assert_eq!(u32::from_le_bytes(reply), round);
        }
        assert_eq!(echoed.load(Ordering::SeqCst), 40);
        // And back: the next `block_on` takes core 0 from the stand-in thread, and its tokio
        // task goes on there.
        let on = std::thread::current().id();
        let here = rt.block_on(async {
            client.write_all(&7u32.to_le_bytes())?;
            let ran_on = tokio::spawn(async { std::thread::current().id() }).await;
            io::Result::Ok(ran_on.unwrap())
        })?;
        assert_eq!(here, on);
        let mut reply = [0u8; 4];
        client.read_exact(&mut reply)?;
        assert_eq!(u32::from_le_bytes(reply), 7);
        assert_eq!(echoed.load(Ordering::SeqCst), 44);
        Ok(())
    })
}
