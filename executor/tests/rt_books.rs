//! Work that moves keeps its books: a task stolen or evacuated before its first poll takes its
//! count on the cores' loads with it, so that `num_alive_tasks` reads the tasks alive, and
//! placement, which compares the loads, spreads new connections evenly again after the burst;
//! and a wake racing the end of `block_on` is never left in core 0's inbox.
//! Counted (first-poll cores, steals, tasks alive, connections per core), never timed: every
//! wait is bounded by counts, with a generous hang guard only.

use std::io::{self, Read};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use futures_lite::AsyncReadExt;
use tickless::net::TcpListener;
use tickless::runtime::Builder;
use tickless::Runtime;

/// The hang guard of every wait on another core: a test that needs it failed.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// Tasks in a burst.
const BURST: usize = 100;

/// Connections the accept loop places after the burst.
const CONNECTIONS: usize = 20;

/// Waits until `done` holds (or the hang guard ran out).
fn wait_until(done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() && start.elapsed() < HANG_GUARD {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A gate tasks wait at until another thread opens it.
#[derive(Clone, Default)]
struct Gate(Arc<Mutex<(bool, Vec<Waker>)>>);

impl Gate {
    /// Opens the gate, waking every waiter.
    fn open(&self) {
        let wakers = {
            let mut g = self.0.lock().unwrap();
            g.0 = true;
            std::mem::take(&mut g.1)
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Waits until the gate is open.
    async fn wait(&self) {
        std::future::poll_fn(|cx| {
            let mut g = self.0.lock().unwrap();
            if g.0 {
                return Poll::Ready(());
            }
            g.1.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

/// A burst task: counts its first poll by core, waits at `gate`, and returns its first core.
async fn burst_task(firsts: Arc<[AtomicUsize; 2]>, gate: Gate) -> usize {
    let first = tickless::core_id();
    firsts[first].fetch_add(1, Ordering::SeqCst);
    gate.wait().await;
    first
}

/// An accept loop on core 0 (in `block_on`) that spawns a task per connection, all alive at
/// once; returns how many connections each core served.
fn place_connections(rt: &Runtime) -> io::Result<Vec<usize>> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let client = std::thread::spawn(move || -> io::Result<()> {
        let conns: Vec<_> = (0..CONNECTIONS)
            .map(|_| std::net::TcpStream::connect(addr))
            .collect::<io::Result<_>>()?;
        // Each task answers with its core once every connection is accepted.
        for mut c in conns {
            let mut b = [0u8; 1];
            c.read_exact(&mut b)?;
        }
        Ok(())
    });
    let per_core = rt.block_on(async move {
        let listener = TcpListener::from_std(listener)?;
        let all_in = Gate::default();
        let mut tasks = Vec::new();
        for _ in 0..CONNECTIONS {
            let (mut stream, _) = listener.accept().await?;
            let all_in = all_in.clone();
            tasks.push(tickless::spawn(async move {
                let core = tickless::core_id();
                all_in.wait().await;
                futures_lite::AsyncWriteExt::write_all(&mut stream, &[core as u8]).await?;
                let mut rest = Vec::new();
                stream.read_to_end(&mut rest).await?;
                io::Result::Ok(core)
            }));
        }
        all_in.open();
        let mut per_core = vec![0; 2];
        for t in tasks {
            per_core[t.await.expect("a connection task")?] += 1;
        }
        io::Result::Ok(per_core)
    })?;
    client.join().expect("the client thread panicked")?;
    Ok(per_core)
}

/// After the burst, the accept loop spreads connections over both cores again (both loads
/// are 0: it alternates).
///
/// Counted where placement put each connection's task (`tasks_placed` of the accepting core 0:
/// the ones sent to core 1), not where it first ran: on a loaded machine a core kept off its
/// CPU has its runnable tasks taken by the other (stealing), which is right, and says nothing
/// of placement.
fn assert_placement_even(rt: &Runtime) -> io::Result<()> {
    let placed_before = rt.stats().cores[0].tasks_placed;
    let per_core = place_connections(rt)?;
    assert_eq!(per_core.iter().sum::<usize>(), CONNECTIONS);
    let placed = (rt.stats().cores[0].tasks_placed - placed_before) as usize;
    let kept = CONNECTIONS - placed.min(CONNECTIONS);
    for (core, n) in [(0, kept), (1, placed)] {
        assert!(
            n * 100 >= CONNECTIONS * 30,
            "placement put {n} of {CONNECTIONS} connections on core {core} after the burst \
             (first polled on each core: {per_core:?})"
        );
    }
    wait_until(|| rt.metrics().num_alive_tasks() == 0);
    assert_eq!(rt.metrics().num_alive_tasks(), 0, "the connections ended");
    Ok(())
}

/// Core 1 spawns a burst and blocks its thread in the same poll, before any of the burst ran:
/// core 0, idle in `block_on`, steals from its backlog, so the stolen tasks are first polled on
/// core 0. While they are alive, `num_alive_tasks` reads the burst; once they finished, 0 (it
/// read the stolen count for ever: the spawning core kept it), and placement is even again
/// (it sent every connection to one core).
#[test]
fn a_burst_stolen_before_its_first_poll_leaves_no_load_behind() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let firsts: Arc<[AtomicUsize; 2]> = Arc::default();
    let gate = Gate::default();
    let (f, g) = (firsts.clone(), gate.clone());
    // Pinned: the stuck task itself stays on core 1.
    let stuck = rt.handle(1).spawn_pinned(move || async move {
        let tasks: Vec<_> = (0..BURST)
            .map(|_| tickless::spawn(burst_task(f.clone(), g.clone())))
            .collect();
        // Stuck in this poll until core 0 took some of the backlog and ran it.
        let start = Instant::now();
        while f[0].load(Ordering::SeqCst) == 0 && start.elapsed() < HANG_GUARD {
            std::thread::sleep(Duration::from_micros(100));
        }
        tasks
    });
    let tasks = rt.block_on(async move { stuck.await.expect("the stuck task") });
    wait_until(|| {
        firsts
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .sum::<usize>()
            == BURST
    });
    let on_core_0 = firsts[0].load(Ordering::SeqCst);
    assert!(
        on_core_0 > 0,
        "core 0 stole part of the burst before it ran"
    );
    assert!(rt.stats().cores[0].steals >= on_core_0 as u64);
    // (The stuck task's own count goes just after its handle learns its output.)
    wait_until(|| rt.metrics().num_alive_tasks() == BURST);
    assert_eq!(rt.metrics().num_alive_tasks(), BURST, "the burst is alive");
    gate.open();
    let mut ran_on = [0usize; 2];
    for t in tasks {
        ran_on[t.join().expect("a burst task")] += 1;
    }
    assert_eq!(ran_on[0], on_core_0);
    wait_until(|| rt.metrics().num_alive_tasks() == 0);
    assert_eq!(
        rt.metrics().num_alive_tasks(),
        0,
        "no task is alive ({on_core_0} were stolen before their first poll)"
    );
    // With tasks alive again, it reads them, not them plus the burst.
    let again = Gate::default();
    let alive: Vec<_> = (0..10)
        .map(|_| {
            rt.handle(1)
                .spawn(burst_task(firsts.clone(), again.clone()))
        })
        .collect();
    assert_eq!(rt.metrics().num_alive_tasks(), 10);
    again.open();
    for t in alive {
        t.join().expect("a task");
    }
    wait_until(|| rt.metrics().num_alive_tasks() == 0);
    assert_placement_even(&rt)
}

/// `block_on` spawns a burst and returns before any of it ran: core 0's evacuation moves it,
/// unpolled, to core 1, whose first polls must find the count there (core 0 kept it for ever).
#[test]
fn a_burst_evacuated_before_its_first_poll_takes_its_count_along() -> io::Result<()> {
    // Core 0 runs nothing outside `block_on` (no tokio stand-in runs it): its tasks
    // are evacuated, the path under test.
    let rt = Builder::new()
        .cores(2)
        .tokio_context(false)
        // Every first poll on core 0, as written: a slow build (AddressSanitizer) otherwise
        // sees core 1 take core 0's queue as a stuck core's (`steal_after`), rightly.
        .steal_after(None)
        .harvest_after(None)
        .build()?;
    let firsts: Arc<[AtomicUsize; 2]> = Arc::default();
    let gate = Gate::default();
    let (f, g) = (firsts.clone(), gate.clone());
    // (In a tuple: a `block_on` whose output is a future reads as a mistake.)
    let (tasks,) = rt.block_on(async move {
        let tasks: Vec<_> = (0..BURST)
            .map(|_| tickless::spawn(burst_task(f.clone(), g.clone())))
            .collect();
        (tasks,)
    });
    wait_until(|| firsts[1].load(Ordering::SeqCst) == BURST);
    assert_eq!(
        firsts[0].load(Ordering::SeqCst),
        0,
        "none ran before block_on returned"
    );
    assert_eq!(firsts[1].load(Ordering::SeqCst), BURST, "all ran on core 1");
    assert_eq!(rt.metrics().num_alive_tasks(), BURST);
    gate.open();
    for t in tasks {
        assert_eq!(t.join().expect("a burst task"), 1);
    }
    wait_until(|| rt.metrics().num_alive_tasks() == 0);
    assert_eq!(rt.metrics().num_alive_tasks(), 0);
    let stats = rt.stats();
    assert_eq!(stats.total.alive_tasks, 0);
    assert_eq!(
        stats.cores[1].tasks_started, BURST as u64,
        "each counted started once, where it first ran"
    );
    assert_placement_even(&rt)
}

/// Tasks evacuated after their first poll (idle on core 0 when `block_on` returns) move their
/// count too, once.
#[test]
fn a_burst_evacuated_after_its_first_poll_takes_its_count_along() -> io::Result<()> {
    // Core 0 runs nothing outside `block_on` (no tokio stand-in runs it): its tasks
    // are evacuated, the path under test.
    let rt = Builder::new()
        .cores(2)
        .tokio_context(false)
        // Every first poll on core 0, as written: a slow build (AddressSanitizer) otherwise
        // sees core 1 take core 0's queue as a stuck core's (`steal_after`), rightly.
        .steal_after(None)
        .harvest_after(None)
        .build()?;
    let firsts: Arc<[AtomicUsize; 2]> = Arc::default();
    let gate = Gate::default();
    let (f, g) = (firsts.clone(), gate.clone());
    let (tasks,) = rt.block_on(async move {
        let tasks: Vec<_> = (0..BURST)
            .map(|_| tickless::spawn(burst_task(f.clone(), g.clone())))
            .collect();
        // Each polled once here, and idle at the gate.
        tickless::task::yield_now().await;
        (tasks,)
    });
    assert_eq!(firsts[0].load(Ordering::SeqCst), BURST);
    assert_eq!(rt.metrics().num_alive_tasks(), BURST);
    // Their live-task entries follow them at their next poll on core 1 (published as of its
    // next park); core 0, read live outside `block_on`, holds none of them then.
    wait_until(|| rt.stats().cores[1].alive_tasks == BURST as u64);
    let stats = rt.stats();
    assert_eq!(stats.cores[1].alive_tasks, BURST as u64);
    assert_eq!(stats.cores[0].alive_tasks, 0, "core 0 left their entries");
    gate.open();
    for t in tasks {
        assert_eq!(t.join().expect("a burst task"), 0, "first polled on core 0");
    }
    wait_until(|| rt.metrics().num_alive_tasks() == 0);
    assert_eq!(rt.metrics().num_alive_tasks(), 0);
    assert_eq!(rt.stats().cores[1].tasks_started, 0, "not started again");
    assert_placement_even(&rt)
}

/// `block_on` exits racing wakes from another thread: each exit leaves [`RACERS`] tasks idle on
/// core 0 whose wakes a thread sends as `block_on` returns. Each wake either reaches core 0
/// before its evacuation takes the inbox, or moves its task to core 1 itself: every task
/// completes before the next `block_on` (a wake pushed into core 0's inbox just after the
/// evacuation took it waited there for the next `block_on`, about one exit in 2,500).
#[test]
fn no_wake_racing_block_on_s_end_is_left_on_core_0() -> io::Result<()> {
    const EXITS: usize = 3_000;
    const RACERS: usize = 8;
    // Core 0 runs nothing outside `block_on` (no tokio stand-in runs it): its tasks
    // are evacuated, the path under test.
    let rt = Builder::new().cores(2).tokio_context(false).build()?;
    let done = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel::<Vec<Gate>>();
    let waking = std::thread::spawn(move || {
        for gates in rx {
            gates.iter().for_each(Gate::open);
        }
    });
    for exit in 0..EXITS {
        let gates: Vec<Gate> = (0..RACERS).map(|_| Gate::default()).collect();
        let (tx, done2, gates2) = (tx.clone(), done.clone(), gates.clone());
        rt.block_on(async move {
            for gate in gates2 {
                let done = done2.clone();
                tickless::spawn(async move {
                    gate.wait().await;
                    done.fetch_add(1, Ordering::SeqCst);
                });
            }
            // Each polled once here, idle at its gate; the gates open as this returns.
            tickless::task::yield_now().await;
            tx.send(gates).expect("the waking thread");
        });
        let want = (exit + 1) * RACERS;
        let start = Instant::now();
        while done.load(Ordering::SeqCst) < want && start.elapsed() < HANG_GUARD {
            std::thread::yield_now();
        }
        assert_eq!(
            done.load(Ordering::SeqCst),
            want,
            "exit {exit}: a woken task waits in core 0's inbox for the next block_on"
        );
    }
    drop(tx);
    waking.join().expect("the waking thread");
    Ok(())
}

/// A core that stepped back from crowded CPUs (`Builder::yield_when_crowded`; here on cue)
/// still runs: while core 0 runs nothing (no thread in `block_on`), the tasks core 0's
/// evacuation hands on, and those woken from another thread, go to it rather than wait in
/// core 0 for the next `block_on`. (Before: no core took placed work, so all 8 waited.)
#[test]
fn with_core_0_left_a_core_that_stepped_back_takes_its_work() -> io::Result<()> {
    const TASKS: usize = 8;
    let rt = Builder::new().cores(2).tokio_context(false).build()?;
    tickless::__private::step_back(&rt.handle(1), true);
    let done = Arc::new(AtomicUsize::new(0));
    let gate = Gate::default();
    let (d, g) = (done.clone(), gate.clone());
    rt.block_on(async move {
        for _ in 0..TASKS {
            let (d, g) = (d.clone(), g.clone());
            tickless::spawn(async move {
                g.wait().await;
                d.fetch_add(1, Ordering::SeqCst);
            });
        }
        // Each polled once on core 0, idle at the gate, when `block_on` returns.
        tickless::task::yield_now().await;
    });
    gate.open();
    wait_until(|| done.load(Ordering::SeqCst) == TASKS);
    assert_eq!(done.load(Ordering::SeqCst), TASKS, "tasks left on core 0");
    Ok(())
}

/// A core that serves again after stepping back gets a share of the `Send` tasks back: its
/// step back moved all of them to core 0 (where they would stay, a task moving only when its
/// core cannot run it), and core 0 hands the serving core enough to even the loads out.
/// (Before: all 20 stayed on core 0.)
#[test]
fn a_core_that_serves_again_gets_a_share_of_the_tasks_back() -> io::Result<()> {
    const TASKS: usize = 20;
    let rt = Builder::new()
        .cores(2)
        .yield_when_crowded(false)
        .tokio_context(false)
        .build()?;
    let one = rt.handle(1);
    let gate = Gate::default();
    // Each task's core at its latest poll.
    let last: Arc<Vec<AtomicUsize>> = Arc::new((0..TASKS).map(|_| AtomicUsize::new(9)).collect());
    let on = |core: usize| {
        last.iter()
            .filter(|c| c.load(Ordering::SeqCst) == core)
            .count()
    };
    let finals = rt.block_on(async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|i| {
                let (gate, last) = (gate.clone(), last.clone());
                one.spawn(async move {
                    std::future::poll_fn(|cx| {
                        last[i].store(tickless::core_id(), Ordering::SeqCst);
                        let mut g = gate.0.lock().unwrap();
                        if g.0 {
                            return Poll::Ready(tickless::core_id());
                        }
                        g.1.push(cx.waker().clone());
                        Poll::Pending
                    })
                    .await
                })
            })
            .collect();
        until(|| on(1) == TASKS).await;
        tickless::__private::step_back(&one, true);
        until(|| on(0) == TASKS).await;
        assert_eq!(on(0), TASKS, "stepping back moved every task to core 0");
        tickless::__private::step_back(&one, false);
        until(|| on(1) >= TASKS / 4).await;
        gate.open();
        let mut finals = Vec::new();
        for t in tasks {
            finals.push(t.await.expect("a task"));
        }
        finals
    });
    let back = finals.iter().filter(|&&c| c == 1).count();
    assert!(
        (TASKS / 4..=TASKS * 3 / 4).contains(&back),
        "{back} of {TASKS} tasks went back to core 1"
    );
    Ok(())
}

/// Waits on the runtime until `done` holds (or the hang guard ran out).
async fn until(done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() && start.elapsed() < HANG_GUARD {
        tickless::time::sleep(Duration::from_millis(1)).await;
    }
}
