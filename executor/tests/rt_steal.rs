//! `Send` work moves when its core cannot run it: an idle core takes the backlog of a core
//! stuck in a long poll, a core that keeps up is never stolen from, `spawn_local` and
//! `spawn_pinned` tasks never move, and core 0's tasks (their streams with them) go on running
//! on another core while no thread is in `block_on`. Counted (`steals`, `io_rebinds`, the cores
//! each task saw), never timed: every wait is bounded by counts, with a generous hang guard
//! only.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::TcpListener;
use tickless::runtime::Builder;
use tickless::{Runtime, Stats};

/// The hang guard of every wait on another core's counters: a test that needs it failed.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// The runtime's counters once `done` holds of them (or the hang guard ran out).
fn stats_when(rt: &Runtime, done: impl Fn(&Stats) -> bool) -> Stats {
    let start = Instant::now();
    loop {
        let stats = rt.stats();
        if done(&stats) || start.elapsed() > HANG_GUARD {
            return stats;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Tasks queued behind the stuck poll.
const BEHIND: usize = 100;

#[test]
fn an_idle_core_runs_the_tasks_queued_behind_a_core_stuck_in_a_long_poll() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    // Which core each task ran on first, and last (after a yield).
    let moved = Arc::new(AtomicUsize::new(0));
    let on_core_1 = Arc::new(AtomicUsize::new(0));
    let (moved2, on_core_1_2) = (moved.clone(), on_core_1.clone());
    // Pinned: the stuck task itself stays on core 1.
    let stuck = rt.handle(1).spawn_pinned(move || async move {
        let mut tasks = Vec::new();
        for _ in 0..BEHIND {
            let (moved, on_core_1) = (moved2.clone(), on_core_1_2.clone());
            tasks.push(tickless::spawn(async move {
                let first = tickless::core_id();
                tickless::task::yield_now().await;
                if tickless::core_id() != first {
                    moved.fetch_add(1, Ordering::SeqCst);
                }
                if first == 1 {
                    on_core_1.fetch_add(1, Ordering::SeqCst);
                }
                tickless::core_id()
            }));
        }
        // Each polled once here (and queued again by its yield).
        tickless::task::yield_now().await;
        // The core is stuck: a synchronous call that blocks its thread, with 100 runnable
        // tasks queued behind it.
        std::thread::sleep(Duration::from_millis(50));
        tasks
    });
    // Core 0 is idle in this `block_on` meanwhile, and steals.
    let ran_on = rt.block_on(async move {
        let tasks = stuck.await.expect("the stuck task");
        let mut ran_on = [0usize; 2];
        for t in tasks {
            ran_on[t.await.expect("a task")] += 1;
        }
        ran_on
    });
    // Core 1 publishes its spills at its next park.
    let stats = stats_when(&rt, |s| s.cores[1].tasks_spilled > 0);
    assert_eq!(ran_on.iter().sum::<usize>(), BEHIND);
    assert!(
        stats.cores[0].steals > 0,
        "core 0 took some of core 1's backlog: {ran_on:?}, {stats:?}"
    );
    assert!(ran_on[0] > 0, "some tasks finished on core 0: {ran_on:?}");
    assert!(
        moved.load(Ordering::SeqCst) > 0,
        "some tasks saw their core change between two polls"
    );
    assert!(
        stats.cores[0].steals <= BEHIND as u64,
        "each task stolen once at most (spilled ones, and the rest once core 1 is seen stuck)"
    );
    assert_eq!(stats.cores[1].steals, 0, "core 0 kept up");
    assert_eq!(stats.total.task_panics, 0);
    Ok(())
}

/// Once core 0 sleeps in `block_on`, spawns [`BEHIND`] `Send` tasks on core 1, then blocks
/// core 1's thread for 50 ms with them queued behind it; returns how many finished on core 0.
/// Core 0 parked first: only the backlog's tell wakes it (an awake core 0 would find the
/// backlog by itself as it goes idle).
fn one_stuck_episode(rt: &Runtime) -> usize {
    let core_0 = rt.handle(0);
    let stuck = rt.handle(1).spawn_pinned(move || async move {
        let start = Instant::now();
        while !core_0.is_parked() && start.elapsed() < HANG_GUARD {
            std::thread::sleep(Duration::from_micros(50));
        }
        let tasks: Vec<_> = (0..BEHIND)
            .map(|_| {
                tickless::spawn(async {
                    tickless::task::yield_now().await;
                    tickless::core_id()
                })
            })
            .collect();
        tickless::task::yield_now().await;
        std::thread::sleep(Duration::from_millis(50));
        tasks
    });
    rt.block_on(async move {
        let mut on_core_0 = 0;
        for t in stuck.await.expect("the stuck task") {
            on_core_0 += usize::from(t.await.expect("a task") == 0);
        }
        on_core_0
    })
}

/// A core that gets stuck again with a new backlog has it taken again: the parked peer is
/// told of every backlog, not only the first (`tell_idle_peer` compares each backlog's start
/// with the last one it told of).
#[test]
fn a_second_backlog_on_the_same_core_is_taken_too() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let first = one_stuck_episode(&rt);
    let steals = stats_when(&rt, |s| s.cores[0].steals > 0).cores[0].steals;
    let second = one_stuck_episode(&rt);
    let stats = stats_when(&rt, |s| s.cores[0].steals > steals);
    assert!(first > 0, "core 0 ran some of the first backlog");
    assert!(
        second > 0 && stats.cores[0].steals > steals,
        "core 0 ran some of the second backlog too: {second} tasks, steals {steals} -> {}",
        stats.cores[0].steals
    );
    assert_eq!(stats.total.task_panics, 0);
    Ok(())
}

/// On paused time nothing leaves core 0 when its `block_on` returns (paused time jumps per
/// core): a task waiting there runs there at the next `block_on`.
#[test]
fn on_paused_time_core_zero_s_tasks_stay_for_the_next_block_on() -> io::Result<()> {
    let rt = Builder::new().cores(2).start_paused(true).build()?;
    let (tx, rx) = async_channel();
    let (task,) = rt.block_on(async move {
        let task = tickless::spawn(async move {
            rx.recv().await;
            tickless::core_id()
        });
        tickless::task::yield_now().await;
        (task,)
    });
    assert_eq!(rt.stats().cores[0].tasks_placed, 0, "nothing was handed on");
    tx.send();
    let core = rt.block_on(task).expect("the task");
    assert_eq!(core, 0, "it stayed on core 0");
    assert_eq!(rt.stats().total.steals, 0);
    Ok(())
}

/// A core whose clock is paused keeps its backlog, stuck or not: paused time jumps per core,
/// so where a task runs must not depend on another core's idle turns. Core 1 goes idle every
/// 200 µs meanwhile (a sleep loop), and each time looks for a backlog to take.
#[test]
fn a_paused_core_s_backlog_is_not_stolen() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let idler = rt.handle(1).spawn(async move {
        let mut turns = 0u32;
        while !stop2.load(Ordering::SeqCst) {
            tickless::time::sleep(Duration::from_micros(200)).await;
            turns += 1;
        }
        turns
    });
    let cores = rt.block_on(async {
        tickless::time::pause();
        let tasks: Vec<_> = (0..BEHIND)
            .map(|_| {
                tickless::spawn(async {
                    tickless::task::yield_now().await;
                    tickless::core_id()
                })
            })
            .collect();
        tickless::task::yield_now().await;
        // Stuck, with the backlog queued where core 1 could reach it.
        std::thread::sleep(Duration::from_millis(50));
        let mut cores = Vec::new();
        for t in tasks {
            cores.push(t.await.expect("a task"));
        }
        tickless::time::resume();
        cores
    });
    stop.store(true, Ordering::SeqCst);
    let turns = idler.join().expect("the idler");
    assert_eq!(cores, vec![0; BEHIND], "every task stayed on core 0");
    let stats = rt.stats();
    assert!(
        stats.cores[0].tasks_spilled > 0,
        "core 0 had a backlog to take"
    );
    assert!(turns > 0);
    assert_eq!(stats.total.steals, 0);
    Ok(())
}

#[test]
fn a_core_that_keeps_up_is_never_stolen_from() -> io::Result<()> {
    // A core that comes back to its run queue within `steal_after` keeps its tasks. A thread
    // the kernel keeps off its CPU that long does not keep up (its tasks are taken, as they
    // should be): 1 s here, which no preemption on a busy test machine lasts, where 250 µs
    // is a common one.
    let rt = Builder::new()
        .cores(2)
        .steal_after(Some(Duration::from_secs(1)))
        .build()?;
    // Bursts of fewer tasks than a core keeps to itself, on core 1, while core 0 idles in
    // `block_on` (and is told of each burst, and watches): nothing spills, nothing is
    // stolen.
    let done = rt.handle(1).spawn(async {
        for _ in 0..200 {
            let burst: Vec<_> = (0..8)
                .map(|_| tickless::spawn(async { tickless::core_id() }))
                .collect();
            for t in burst {
                assert_eq!(t.await.expect("a task"), 1);
            }
        }
    });
    rt.block_on(done).expect("the bursts");
    let stats = rt.stats();
    assert_eq!(stats.cores[1].tasks_spilled, 0);
    assert_eq!(stats.total.steals, 0);
    Ok(())
}

#[test]
fn spawn_local_and_spawn_pinned_tasks_never_move() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    // Core 1 queues pinned work behind a long poll; core 0 idles and would steal it if it
    // could.
    let stuck = rt.handle(1).spawn_pinned(|| async {
        let locals: Vec<_> = (0..BEHIND)
            .map(|_| {
                tickless::spawn_local(async {
                    tickless::task::yield_now().await;
                    tickless::core_id()
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let mut cores = Vec::new();
        for t in locals {
            cores.push(t.await.expect("a local task"));
        }
        cores
    });
    let cores = rt.block_on(stuck).expect("the pinned task");
    assert_eq!(cores, vec![1; BEHIND]);
    let stats = rt.stats();
    assert_eq!(stats.cores[1].tasks_spilled, 0, "a local task never spills");
    assert_eq!(stats.total.steals, 0);
    Ok(())
}

/// Core 0's connection tasks, their streams registered with core 0, go on serving after
/// `block_on` returns: they move to core 1, and their streams follow them.
#[test]
fn core_zero_s_connections_are_served_on_another_core_outside_block_on() -> io::Result<()> {
    const CONNS: usize = 20;
    let rt = Builder::new()
        .cores(2)
        .steal_after(None)
        .harvest_after(None)
        .build()?;
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = std_listener.local_addr()?;
    let (ready_tx, ready_rx) = mpsc::channel();
    let client = std::thread::spawn(move || -> io::Result<()> {
        let mut conns = Vec::new();
        for _ in 0..CONNS {
            let mut c = std::net::TcpStream::connect(addr)?;
            c.write_all(b"a")?;
            let mut b = [0u8; 1];
            c.read_exact(&mut b)?;
            conns.push(c);
        }
        // Every connection answered once, inside `block_on`; the rest comes after it.
        ready_rx.recv().expect("the server left block_on");
        for c in &mut conns {
            c.write_all(b"b")?;
            let mut b = [0u8; 1];
            c.read_exact(&mut b)?;
            assert_eq!(&b, b"b");
        }
        Ok(())
    });
    let tasks = rt.block_on(async {
        let listener = TcpListener::from_std(std_listener)?;
        let mut tasks = Vec::new();
        for _ in 0..CONNS {
            let (mut stream, _) = listener.accept().await?;
            // First echo on core 0 (the stream registers there), then spawned: with placement
            // off for this accept (the spawn comes after a read, in another poll), it stays.
            let mut b = [0u8; 1];
            stream.read_exact(&mut b).await?;
            stream.write_all(&b).await?;
            tasks.push(tickless::spawn(async move {
                let mut b = [0u8; 1];
                while stream.read(&mut b).await? == 1 {
                    stream.write_all(&b).await?;
                }
                io::Result::Ok(tickless::core_id())
            }));
        }
        io::Result::Ok(tasks)
    })?;
    // No thread is in `block_on` now.
    ready_tx.send(()).expect("the client waits");
    client.join().expect("the client thread panicked")?;
    let cores: Vec<usize> = tasks
        .into_iter()
        .map(|t| t.join().expect("a connection task").expect("its I/O"))
        .collect();
    assert_eq!(cores, vec![1; CONNS], "every connection ended on core 1");
    let stats = stats_when(&rt, |s| s.cores[1].io_rebinds >= CONNS as u64);
    assert_eq!(
        stats.cores[1].io_rebinds, CONNS as u64,
        "each stream moved once"
    );
    assert!(stats.cores[0].tasks_placed >= CONNS as u64);
    assert_eq!(stats.total.task_panics, 0);
    Ok(())
}

/// A task of core 0 woken from another thread while no thread is in `block_on` runs on a core
/// that runs: a `JoinHandle::join` from `main` does not wait for ever.
#[test]
fn a_core_zero_task_woken_outside_block_on_runs_elsewhere() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let (tx, rx) = async_channel();
    // (In a tuple: a `block_on` whose output is itself a future reads as a mistake.)
    let (task,) = rt.block_on(async move {
        let task = tickless::spawn(async move {
            rx.recv().await;
            tickless::core_id()
        });
        // Let it start, so that it waits on core 0.
        tickless::task::yield_now().await;
        (task,)
    });
    tx.send();
    assert_eq!(task.join().expect("the task"), 1);
    Ok(())
}

/// A one-shot signal between threads: what a channel's receiver does with its waker.
fn async_channel() -> (Signal, Signal) {
    let shared = Arc::new(std::sync::Mutex::new((false, None::<std::task::Waker>)));
    (Signal(shared.clone()), Signal(shared))
}

/// One end of [`async_channel`].
struct Signal(Arc<std::sync::Mutex<(bool, Option<std::task::Waker>)>>);

impl Signal {
    /// Sets the signal, waking the receiver.
    fn send(&self) {
        let waker = {
            let mut s = self.0.lock().unwrap();
            s.0 = true;
            s.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Waits for the signal.
    async fn recv(&self) {
        std::future::poll_fn(|cx| {
            let mut s = self.0.lock().unwrap();
            if s.0 {
                return std::task::Poll::Ready(());
            }
            s.1 = Some(cx.waker().clone());
            std::task::Poll::Pending
        })
        .await
    }
}

#[test]
fn a_core_alone_never_spills() -> io::Result<()> {
    // Nobody could steal: a backlog stays in the core's private queue, with no lock.
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let tasks: Vec<_> = (0..BEHIND)
            .map(|_| tickless::spawn(tickless::task::yield_now()))
            .collect();
        for t in tasks {
            t.await.expect("a task");
        }
    });
    assert_eq!(rt.stats().total.tasks_spilled, 0);
    Ok(())
}

/// Tasks queued behind a poll that blocks its core, fewer than a core keeps to itself before
/// it spills.
const QUEUED: usize = 8;

/// What [`queued_behind_a_blocked_poll`] counted.
#[derive(Debug, PartialEq, Eq)]
struct Behind {
    /// Queued tasks that ran before the blocking poll ended.
    ran_before_the_end: usize,
    /// Queued tasks that ran on core 0.
    on_core_0: usize,
    /// `spawn_local` tasks queued among them that ran on core 1, after the blocking poll.
    locals_after_on_core_1: usize,
}

/// `spawn_local` tasks queued among the [`QUEUED`] ones.
const LOCALS: usize = 2;

/// Once core 0 sleeps in `block_on`, core 1 queues [`QUEUED`] `Send` tasks and one of its
/// tasks blocks its thread (a synchronous sleep, in steps) until all of them have run or
/// `block` has passed; each task notes whether it ran before that poll ended (the blocker's
/// flag) and on which core; [`LOCALS`] `spawn_local` tasks queued among them note whether
/// they ran on core 1 after it. With `spawned_by_the_blocker`, the blocking task spawns them in
/// the poll that blocks; otherwise another task spawned the blocker, then them, so that they
/// were queued before the blocking poll began.
fn queued_behind_a_blocked_poll(
    rt: &Runtime,
    spawned_by_the_blocker: bool,
    block: Duration,
) -> Behind {
    let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ran = Arc::new(AtomicUsize::new(0));
    let before = Arc::new(AtomicUsize::new(0));
    let on_core_0 = Arc::new(AtomicUsize::new(0));
    let locals_after_on_core_1 = Arc::new(AtomicUsize::new(0));
    // Spawned among the others (in the middle), awaited by the episode.
    let locals = {
        let (ended, after) = (ended.clone(), locals_after_on_core_1.clone());
        move || -> Vec<tickless::JoinHandle<()>> {
            (0..LOCALS)
                .map(|_| {
                    let (ended, after) = (ended.clone(), after.clone());
                    tickless::spawn_local(async move {
                        if ended.load(Ordering::SeqCst) && tickless::core_id() == 1 {
                            after.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                })
                .collect()
        }
    };
    let queue = {
        let (ended, ran, before, on_core_0) = (
            ended.clone(),
            ran.clone(),
            before.clone(),
            on_core_0.clone(),
        );
        move |locals: &dyn Fn() -> Vec<tickless::JoinHandle<()>>| {
            let mut local = Vec::new();
            let tasks = (0..QUEUED)
                .map(|i| {
                    if i == QUEUED / 2 {
                        local = locals();
                    }
                    let (ended, ran, before, on_core_0) = (
                        ended.clone(),
                        ran.clone(),
                        before.clone(),
                        on_core_0.clone(),
                    );
                    tickless::spawn(async move {
                        if !ended.load(Ordering::SeqCst) {
                            before.fetch_add(1, Ordering::SeqCst);
                        }
                        if tickless::core_id() == 0 {
                            on_core_0.fetch_add(1, Ordering::SeqCst);
                        }
                        ran.fetch_add(1, Ordering::SeqCst);
                    })
                })
                .collect::<Vec<_>>();
            (tasks, local)
        }
    };
    // Blocks the thread until every queued task ran, or `block` passed.
    let blocker = {
        let ran = ran.clone();
        move || {
            let start = Instant::now();
            while ran.load(Ordering::SeqCst) < QUEUED && start.elapsed() < block {
                std::thread::sleep(Duration::from_millis(1));
            }
            ended.store(true, Ordering::SeqCst);
        }
    };
    let core_0 = rt.handle(0);
    let episode = rt.handle(1).spawn_pinned(move || async move {
        let start = Instant::now();
        while !core_0.is_parked() && start.elapsed() < HANG_GUARD {
            std::thread::sleep(Duration::from_micros(50));
        }
        if spawned_by_the_blocker {
            let (tasks, local) = queue(&locals);
            blocker();
            for l in local {
                l.await.expect("a local task");
            }
            return tasks;
        }
        // The blocker first in the queue, the tasks behind it.
        let blocking = tickless::spawn(async move { blocker() });
        let (mut tasks, local) = queue(&locals);
        for l in local {
            l.await.expect("a local task");
        }
        tasks.push(blocking);
        tasks
    });
    rt.block_on(async move {
        for t in episode.await.expect("the episode") {
            t.await.expect("a task");
        }
    });
    Behind {
        ran_before_the_end: before.load(Ordering::SeqCst),
        on_core_0: on_core_0.load(Ordering::SeqCst),
        locals_after_on_core_1: locals_after_on_core_1.load(Ordering::SeqCst),
    }
}

/// A core blocked with fewer runnable tasks than it keeps to itself has them all taken by an
/// idle core, which was parked and is told: every one runs on core 0 before the blocking poll
/// ends (which waits for them, with a hang guard only), whether the blocking task queued
/// them or they were queued before its poll began; the `spawn_local` tasks queued among them
/// stay, and run on core 1 after it.
#[test]
fn every_task_queued_behind_a_blocked_poll_runs_on_an_idle_core() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    for spawned_by_the_blocker in [true, false] {
        let steals = rt.stats().cores[0].steals;
        let behind = queued_behind_a_blocked_poll(&rt, spawned_by_the_blocker, HANG_GUARD);
        let all = Behind {
            ran_before_the_end: QUEUED,
            on_core_0: QUEUED,
            locals_after_on_core_1: LOCALS,
        };
        assert_eq!(
            behind, all,
            "spawned by the blocker: {spawned_by_the_blocker}"
        );
        let stats = stats_when(&rt, |s| s.cores[0].steals >= steals + QUEUED as u64);
        assert_eq!(stats.cores[0].steals, steals + QUEUED as u64, "{stats:?}");
        assert_eq!(stats.cores[1].tasks_spilled, 0, "none spilled: {stats:?}");
    }
    Ok(())
}

/// Without stealing, the same tasks wait for the blocking poll to end (200 ms here), and run
/// on their own core.
#[test]
fn without_stealing_the_tasks_behind_a_blocked_poll_wait_for_it() -> io::Result<()> {
    let rt = Builder::new().cores(2).steal_after(None).build()?;
    for spawned_by_the_blocker in [true, false] {
        let behind =
            queued_behind_a_blocked_poll(&rt, spawned_by_the_blocker, Duration::from_millis(200));
        let none = Behind {
            ran_before_the_end: 0,
            on_core_0: 0,
            locals_after_on_core_1: LOCALS,
        };
        assert_eq!(behind, none);
    }
    assert_eq!(rt.stats().total.steals, 0);
    Ok(())
}
