//! `RuntimeMetrics`: tokio's names over the cores' counters. Counted (polls, tasks, schedules,
//! registrations), never timed; read on the core's own thread (exact now) and from other
//! threads (as of the core's last publish, never zeros where the core has counted).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use tickless::net::UdpSocket;
use tickless::runtime::{Builder, HistogramConfiguration, Placement, RuntimeMetrics};
use tickless::Runtime;

/// Polls (yields) in the poll-count test.
const YIELDS: u64 = 100;

/// Waits until `done` holds, reading metrics another thread publishes. The deadline only
/// keeps a broken publish from hanging the test; nothing here measures time.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn two_cores() -> Runtime {
    Builder::new().cores(2).build().unwrap()
}

#[test]
fn worker_poll_count_grows_by_the_polls_made_on_that_core() {
    let rt = two_cores();
    let metrics = rt.metrics();
    let on_core = metrics.clone();
    let (before, after) = rt
        .handle(1)
        .spawn(async move {
            let before = on_core.worker_poll_count(1);
            for _ in 0..YIELDS {
                tickless::yield_now().await;
            }
            (before, on_core.worker_poll_count(1))
        })
        .join()
        .unwrap();
    // Read on core 1's own thread: exact now.
    assert!(after - before >= YIELDS, "{before} -> {after}");
    // From this thread: once core 1 has gone idle and published.
    eventually("core 1 publishes its polls", || {
        metrics.worker_poll_count(1) >= after
    });
    assert!(metrics.worker_park_count(1) >= 1);
    assert!(metrics.worker_total_busy_duration(1) > Duration::ZERO);
    assert!(metrics.worker_mean_poll_time(1) > Duration::ZERO);
}

#[test]
fn num_alive_tasks_counts_the_live_tasks() {
    let rt = two_cores();
    let metrics = rt.metrics();
    assert_eq!(metrics.num_alive_tasks(), 0);
    let (release, wait) = gate();
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            let wait = wait.clone();
            rt.handle(1).spawn(async move { wait.recv().await })
        })
        .collect();
    assert_eq!(metrics.num_alive_tasks(), 5, "spawned, polled or not");
    drop(release);
    for t in tasks {
        t.join().unwrap();
    }
    eventually("the finished tasks leave the count", || {
        metrics.num_alive_tasks() == 0
    });
    eventually("core 1 publishes the tasks it started", || {
        metrics.spawned_tasks_count() >= 5
    });
}

/// A gate the tasks wait at until it opens (tokio's `watch`, which needs no tokio runtime).
fn gate() -> (Opener, Gate) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    (Opener(tx), Gate(rx))
}

struct Opener(tokio::sync::watch::Sender<bool>);

impl Drop for Opener {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}

#[derive(Clone)]
struct Gate(tokio::sync::watch::Receiver<bool>);

impl Gate {
    async fn recv(mut self) {
        let _open = self.0.wait_for(|&open| open).await;
    }
}

#[test]
fn core_zero_reads_as_published_while_another_thread_is_in_block_on() {
    // No tokio context: with one, the stand-in thread runs core 0 between the two `block_on`s
    // (and core 0 reads as published then too).
    let rt = Builder::new()
        .cores(1)
        .tokio_context(false)
        .build()
        .unwrap();
    let metrics = rt.metrics();
    rt.block_on(async {
        for _ in 0..10 {
            tickless::spawn(async {}).await.unwrap();
        }
    });
    let polls = metrics.worker_poll_count(0);
    assert!(polls >= 20, "the tasks' and the block_on future's: {polls}");
    assert_eq!(metrics.spawned_tasks_count(), 10);
    let (release, wait) = gate();
    let (entered, in_block_on) = mpsc::channel();
    std::thread::scope(|s| {
        let rt = &rt;
        s.spawn(move || {
            rt.block_on(async move {
                entered.send(()).unwrap();
                wait.recv().await
            })
        });
        in_block_on.recv().unwrap();
        // Core 0 runs on the other thread now: as of its last publish, never zeros.
        for _ in 0..100 {
            assert!(metrics.worker_poll_count(0) >= polls);
            assert!(metrics.spawned_tasks_count() >= 10);
        }
        eventually("core 0 parks in the other thread's block_on", || {
            metrics.worker_park_unpark_count(0) % 2 == 1
        });
        assert!(
            metrics.worker_poll_count(0) > polls,
            "published at the park"
        );
        drop(release);
    });
    assert_eq!(
        metrics.worker_park_unpark_count(0) % 2,
        0,
        "running or gone"
    );
}

#[test]
fn schedules_are_local_or_remote_by_the_thread_that_queued_them() {
    let rt = Builder::new()
        .cores(2)
        .placement(Placement::Local)
        .build()
        .unwrap();
    let metrics = rt.metrics();
    let remote_before = metrics.remote_schedule_count();
    // Spawned from this thread: handed over to core 1.
    for _ in 0..10 {
        rt.handle(1).spawn(async {}).join().unwrap();
    }
    eventually("core 1 publishes its remote schedules", || {
        metrics.remote_schedule_count() >= remote_before + 10
    });
    let on_core = metrics.clone();
    let (before, after) = rt
        .handle(1)
        .spawn(async move {
            let before = on_core.worker_local_schedule_count(1);
            for _ in 0..10 {
                tickless::spawn(async {}).await.unwrap();
            }
            (before, on_core.worker_local_schedule_count(1))
        })
        .join()
        .unwrap();
    assert!(after - before >= 10, "{before} -> {after}");
    assert_eq!(
        metrics.worker_local_queue_depth(1),
        0,
        "published at a park"
    );
    assert_eq!(metrics.global_queue_depth(), 0);
    assert_eq!(metrics.worker_steal_count(1), 0);
}

#[test]
fn io_driver_counts_registrations_and_events() {
    let rt = two_cores();
    let metrics = rt.metrics();
    let on_core = metrics.clone();
    let (registered, deregistered, ready) = rt
        .handle(1)
        .spawn(async move {
            let before = (
                on_core.io_driver_fd_registered_count(),
                on_core.io_driver_fd_deregistered_count(),
                on_core.io_driver_ready_count(),
            );
            let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let addr = socket.local_addr().unwrap();
            let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let recv = tickless::spawn(async move {
                let mut buf = [0; 8];
                socket.recv(&mut buf).await.unwrap()
            });
            tickless::yield_now().await; // the receiver waits now
            sender.send_to(b"hi", addr).unwrap();
            assert_eq!(recv.await.unwrap(), 2);
            (
                on_core.io_driver_fd_registered_count() - before.0,
                on_core.io_driver_fd_deregistered_count() - before.1,
                on_core.io_driver_ready_count() - before.2,
            )
        })
        .join()
        .unwrap();
    assert_eq!(registered, 1, "the socket");
    assert_eq!(deregistered, 1, "dropped with its task");
    assert!(ready >= 1, "its readiness");
}

#[test]
fn timers_and_blocking_pool() {
    let rt = Builder::new().cores(2).start_paused(true).build().unwrap();
    let metrics = rt.metrics();
    let on_core = metrics.clone();
    let (pending, fired) = rt
        .handle(1)
        .spawn(async move {
            let fires = on_core.worker_timer_fires(1);
            let sleeper = tickless::spawn(tickless::time::sleep(Duration::from_secs(3600)));
            tickless::yield_now().await; // the sleeper registers its timer
            let pending = on_core.worker_pending_timers(1);
            sleeper.await.unwrap();
            (pending, on_core.worker_timer_fires(1) - fires)
        })
        .join()
        .unwrap();
    assert!(pending >= 1, "the sleeper's timer: {pending}");
    assert!(fired >= 1, "{fired}");
    rt.block_on(async { tickless::task::spawn_blocking(|| ()).await })
        .unwrap();
    assert!(metrics.num_blocking_threads() >= 1);
    assert_eq!(metrics.blocking_queue_depth(), 0);
    assert!(metrics.num_idle_blocking_threads() <= metrics.num_blocking_threads());
}

#[test]
fn handle_metrics_see_every_core() {
    let rt = Builder::new().cores(3).build().unwrap();
    let from_handle = rt.handle(2).metrics();
    assert_eq!(from_handle.num_workers(), 3);
    let inside: RuntimeMetrics = rt.block_on(async { tickless::Handle::current().metrics() });
    assert_eq!(inside.num_workers(), 3);
    assert_eq!(rt.metrics().budget_forced_yield_count(), 0);
}

#[test]
#[should_panic(expected = "no worker 2: the runtime has 2 cores")]
fn a_worker_out_of_range_panics_with_the_count() {
    two_cores().metrics().worker_poll_count(2);
}

/// Core 0's counts in every bucket of the poll-time histogram.
fn poll_times(m: &RuntimeMetrics) -> Vec<u64> {
    (0..m.poll_time_histogram_num_buckets())
        .map(|b| m.poll_time_histogram_bucket_count(0, b))
        .collect()
}

/// Core 0's counts in every bucket of the timer-lateness histogram.
fn lateness(m: &RuntimeMetrics) -> Vec<u64> {
    (0..m.timer_lateness_histogram_num_buckets())
        .map(|b| m.timer_lateness_histogram_bucket_count(0, b))
        .collect()
}

/// A task that moves paused time by `d` in its first poll, and ends in its second.
fn advancing(d: Duration) -> tickless::JoinHandle<()> {
    tickless::spawn(tickless::time::advance(d))
}

#[test]
fn the_poll_time_histogram_is_off_by_default() {
    let rt = Builder::new().cores(1).build().unwrap();
    rt.block_on(async { tickless::spawn(async {}).await.unwrap() });
    let m = rt.metrics();
    assert!(!m.poll_time_histogram_enabled());
    assert_eq!(m.poll_time_histogram_num_buckets(), 0);
    assert_eq!(
        m.poll_time_histogram_bucket_range(0),
        Duration::ZERO..Duration::ZERO
    );
    assert_eq!(m.poll_time_histogram_bucket_count(0, 0), 0);
}

#[test]
fn the_poll_time_histogram_counts_each_task_poll_in_its_bucket() {
    let rt = Builder::new()
        .cores(1)
        .start_paused(true)
        .enable_metrics_poll_time_histogram()
        .build()
        .unwrap();
    let us = Duration::from_micros;
    rt.block_on(async {
        // Each polled twice: once for as long as it advances paused time, once for nothing.
        for d in [us(250), us(100), us(99), Duration::from_millis(5)] {
            advancing(d).await.unwrap();
        }
        tickless::spawn(async {}).await.unwrap(); // one poll of nothing
    });
    let m = rt.metrics();
    // tokio's default: 10 buckets of 100 µs, the last open.
    assert!(m.poll_time_histogram_enabled());
    assert_eq!(m.poll_time_histogram_num_buckets(), 10);
    assert_eq!(m.poll_time_histogram_bucket_range(0), us(0)..us(100));
    assert_eq!(m.poll_time_histogram_bucket_range(2), us(200)..us(300));
    assert_eq!(
        m.poll_time_histogram_bucket_range(9),
        us(900)..Duration::from_nanos(u64::MAX)
    );
    // 99 µs and the five polls of nothing in the first bucket; 100, 250 and 5,000 µs in
    // theirs. The block_on future's polls are not counted: it is no task.
    assert_eq!(poll_times(&m), [6, 1, 1, 0, 0, 0, 0, 0, 0, 1]);
    // The same from another thread: the counts are where any thread reads them.
    let there = std::thread::spawn(move || poll_times(&m)).join().unwrap();
    assert_eq!(there, [6, 1, 1, 0, 0, 0, 0, 0, 0, 1]);
}

#[test]
fn a_configured_poll_time_histogram_has_its_buckets() {
    let rt = Builder::new()
        .cores(1)
        .start_paused(true)
        .metrics_poll_time_histogram_configuration(HistogramConfiguration::linear(
            Duration::from_micros(10),
            5,
        ))
        .enable_metrics_poll_time_histogram()
        .build()
        .unwrap();
    rt.block_on(async {
        advancing(Duration::from_micros(25)).await.unwrap();
        advancing(Duration::from_secs(1)).await.unwrap();
    });
    let m = rt.metrics();
    assert_eq!(m.poll_time_histogram_num_buckets(), 5);
    let us = Duration::from_micros;
    assert_eq!(m.poll_time_histogram_bucket_range(2), us(20)..us(30));
    assert_eq!(poll_times(&m), [2, 0, 1, 0, 1]);
}

#[test]
fn timer_lateness_counts_each_fire_by_how_late_it_fired() {
    let rt = Builder::new().cores(1).start_paused(true).build().unwrap();
    let exact = Duration::ZERO;
    rt.block_on(async {
        // Due in 100 µs, expired 1 ms on: 900 µs late.
        let late = tickless::spawn(tickless::time::sleep(Duration::from_micros(100)).slack(exact));
        tickless::yield_now().await; // it registers
        tickless::time::advance(Duration::from_millis(1)).await;
        late.await.unwrap();
        // Paused time jumps to the deadline: not late at all.
        tickless::time::sleep(Duration::from_millis(3))
            .slack(exact)
            .await;
    });
    let m = rt.metrics();
    // The default: 24 buckets doubling from 1 µs.
    assert_eq!(m.timer_lateness_histogram_num_buckets(), 24);
    let us = Duration::from_micros;
    assert_eq!(m.timer_lateness_histogram_bucket_range(0), us(0)..us(1));
    assert_eq!(
        m.timer_lateness_histogram_bucket_range(10),
        us(512)..us(1_024)
    );
    let counts = lateness(&m);
    assert_eq!((counts[0], counts[10]), (1, 1), "{counts:?}");
    assert_eq!(
        counts.iter().sum::<u64>(),
        m.worker_timer_fires(0),
        "every fire"
    );
    assert_eq!(m.worker_timer_fires(0), 2);
}
