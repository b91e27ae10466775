//! The stall detector: a poll that blocks its core past the threshold is reported exactly once,
//! with its core, task id, spawn location and backtrace, and counted in `CoreStats::stalls`; the
//! `block_on` future's stall too; a stall after the whole runtime idled (the watchdog asleep)
//! is still seen; a busy core of short polls, a parked core and a runtime without the detector
//! are never reported.
//!
//! Counts only. The positive tests block for 200 ms against a 20 or 50 ms threshold: the
//! watchdog needs two checks in that time, which even a loaded machine gives it. The negative
//! tests use thresholds that load cannot reach (a second), or no detector at all.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tickless::runtime::StallReport;
use tickless::{spawn, yield_now, Builder, Runtime};

/// Taken by every test: they count watchdog threads, and each is alone on the machine's CPUs.
static SERIAL: Mutex<()> = Mutex::new(());

/// This test's turn.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The reports a runtime's hook received.
type Reports = Arc<Mutex<Vec<StallReport>>>;

/// A runtime of `cores` cores with stall threshold `threshold`, recording its reports.
fn recording(cores: usize, threshold: Option<Duration>) -> (Runtime, Reports) {
    recording_with(cores, threshold, false)
}

/// As [`recording`], with a tokio context on each core if `tokio`.
fn recording_with(cores: usize, threshold: Option<Duration>, tokio: bool) -> (Runtime, Reports) {
    let reports: Reports = Arc::default();
    let seen = reports.clone();
    let rt = Builder::new()
        .cores(cores)
        .tokio_context(tokio)
        .stall_threshold(threshold)
        .on_stall(move |r| {
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(r.clone())
        })
        .build()
        .unwrap();
    (rt, reports)
}

/// Blocks the calling thread (and so its core) for 200 ms. Never inlined, and not a tail
/// call (the `black_box` after the sleep): a frame of its own in the stalled thread's stack
/// in release builds too, which the report names.
#[inline(never)]
fn block() {
    std::thread::sleep(Duration::from_millis(200));
    std::hint::black_box(());
}

/// `rt`'s counters once `settled` holds of them, or as they are after 10 s: a core other than
/// core 0 publishes its counters when it parks, which may come just after the `block_on` that
/// waited for it returns.
fn stats_when(rt: &Runtime, settled: impl Fn(&tickless::Stats) -> bool) -> tickless::Stats {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let stats = rt.stats();
        if settled(&stats) || std::time::Instant::now() >= deadline {
            return stats;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether this process has a thread named as the watchdog.
fn watchdog_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter(|t| {
            let comm = std::fs::read_to_string(t.as_ref().unwrap().path().join("comm"));
            comm.is_ok_and(|c| c.trim() == "tickless-watchd")
        })
        .count()
}

#[test]
fn a_task_that_blocks_four_thresholds_is_reported_once() {
    let _serial = serial();
    let (rt, reports) = recording(1, Some(Duration::from_millis(50)));
    let (line, id) = rt.block_on(async {
        let (line, task) = (line!(), spawn(async { block() }));
        let id = task.id();
        task.await.unwrap();
        (line, id)
    });
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let r = &reports[0];
    assert_eq!(r.core(), 0);
    assert_eq!(r.task_id(), Some(id));
    let at = r.spawned_at().unwrap();
    assert_eq!((at.file(), at.line()), (file!(), line));
    assert!(r.elapsed() >= r.threshold());
    assert_eq!(rt.stats().cores[0].stalls, 1);
    assert!(!r.in_tokio() && r.task_name().is_none());
    // Asleep in `std::thread::sleep` is a stall, not a preemption: the thread was neither
    // running nor waiting for a CPU.
    assert_eq!(rt.stats().cores[0].preemptions, 0);
    if let Some(times) = r.thread_times() {
        assert!(!times.is_preempted(r.threshold()), "{times:?}");
        assert!(
            times.blocked() > times.running() + times.waiting(),
            "{times:?}"
        );
    }
    let line = r.to_string();
    assert!(
        line.contains(&format!("task {id} (spawned at {at})")),
        "{line}"
    );
    match r.backtrace() {
        Some(trace) => {
            let frames = trace.frames();
            assert!(
                frames
                    .iter()
                    .any(|(name, _)| name.contains("rt_stall::block")),
                "the stalled thread's own stack: {trace}"
            );
            assert!(line.contains("in rt_stall::block"), "{line}");
        }
        None => eprintln!("no backtrace on this system: {line}"),
    }
}

#[test]
fn the_block_on_future_stalls_too_and_each_stall_counts_once() {
    let _serial = serial();
    let (rt, reports) = recording(2, Some(Duration::from_millis(20)));
    rt.block_on(async {
        block();
        yield_now().await;
        block();
    });
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert!(reports
        .iter()
        .all(|r| r.core() == 0 && r.task_id().is_none()));
    assert!(reports[0].to_string().contains("the block_on future"));
    assert_eq!(rt.stats().cores[0].stalls, 2);
}

#[test]
fn a_stall_after_the_runtime_idled_is_seen() {
    let _serial = serial();
    let (rt, reports) = recording(2, Some(Duration::from_millis(20)));
    rt.block_on(async {
        // Every core parks: the watchdog parks too, until a core wakes.
        tickless::time::sleep(Duration::from_millis(300)).await;
        rt_handle_spawn_block().await;
    });
    // And with no thread in `block_on` (core 0 idle by being run by nobody).
    std::thread::sleep(Duration::from_millis(100));
    rt.handle(1).spawn(async { block() }).join().unwrap();
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert!(reports
        .iter()
        .all(|r| r.core() == 1 && r.task_id().is_some()));
}

/// Blocks core 1 from a task of its own.
async fn rt_handle_spawn_block() {
    let core1 = tickless::runtime::Handle::all_current().unwrap()[1].clone();
    core1.spawn(async { block() }).await.unwrap();
}

#[test]
fn a_busy_core_of_short_polls_and_a_parked_core_are_never_reported() {
    let _serial = serial();
    // A second: no poll of a few microseconds gets there, however loaded the machine.
    let (rt, reports) = recording(2, Some(Duration::from_secs(1)));
    let before = rt.stats().cores[0];
    rt.block_on(async {
        let busy = spawn(async {
            let start = std::time::Instant::now();
            while start.elapsed() < Duration::from_millis(2_500) {
                yield_now().await;
            }
        });
        busy.await.unwrap();
        // Core 1 has been parked all along; now core 0 parks too.
        tickless::time::sleep(Duration::from_millis(2_500)).await;
    });
    assert!(
        rt.stats().cores[0].polls - before.polls > 1_000,
        "it was busy"
    );
    assert!(reports.lock().unwrap().is_empty());
    assert_eq!(rt.stats().total.stalls, 0);
}

#[test]
fn none_turns_it_off_and_starts_no_thread() {
    let _serial = serial();
    let (off, reports) = recording(1, None);
    let with_off = watchdog_threads();
    off.block_on(async { spawn(async { block() }).await.unwrap() });
    assert!(reports.lock().unwrap().is_empty());
    assert_eq!(off.stats().total.stalls, 0);
    let on = Builder::new().cores(1).build().unwrap(); // on by default
                                                       // The thread names itself once it runs: give it the time to.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while watchdog_threads() == with_off && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(watchdog_threads(), with_off + 1);
    drop(on);
    assert_eq!(watchdog_threads(), with_off, "joined at drop");
}

#[test]
fn a_threshold_under_a_millisecond_is_an_error() {
    let _serial = serial();
    let err = Builder::new()
        .stall_threshold(Some(Duration::from_micros(500)))
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("stall threshold"), "{err}");
}

#[test]
fn a_panicking_stall_hook_costs_only_its_call() {
    let _serial = serial();
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = calls.clone();
    let rt = Builder::new()
        .cores(1)
        .stall_threshold(Some(Duration::from_millis(20)))
        .on_stall(move |_| {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            panic!("stall hook");
        })
        .build()
        .unwrap();
    // The hook's panics silenced (the tests run one at a time): the default panic hook's
    // backtrace, under RUST_BACKTRACE, would keep the watchdog busy for seconds on a loaded
    // machine, long enough to miss the next stall.
    std::panic::set_hook(Box::new(|_| {}));
    for n in 1..=2 {
        rt.block_on(async { block() });
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while calls.load(std::sync::atomic::Ordering::SeqCst) < n
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    drop(std::panic::take_hook()); // the default hook back
                                   // The watchdog lived through the first panic to report the second stall.
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(rt.stats().cores[0].stalls, 2);
}

#[test]
fn a_tokio_task_that_blocks_is_reported_once_on_each_core() {
    let _serial = serial();
    let (rt, reports) = recording_with(2, Some(Duration::from_millis(50)), true);
    rt.block_on(async {
        // Core 0: a tokio task run while core 0 is parked in tokio (its `block_on` future
        // waits for it).
        tokio::spawn(async { block() }).await.unwrap();
        // Core 1: the same, from a task of core 1.
        let core1 = tickless::runtime::Handle::all_current().unwrap()[1].clone();
        core1
            .spawn(async { tokio::spawn(async { block() }).await.unwrap() })
            .await
            .unwrap();
    });
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 2, "{reports:?}");
    for (core, r) in reports.iter().enumerate() {
        assert_eq!(r.core(), core);
        assert!(r.in_tokio(), "{r}");
        assert_eq!(r.task_id(), None);
        let line = r.to_string();
        assert!(line.contains("tokio runtime"), "{line}");
        if let Some(trace) = r.backtrace() {
            assert!(line.contains("in rt_stall::block"), "{line}\n{trace}");
        }
    }
    let stats = stats_when(&rt, |s| s.cores[1].stalls == 1);
    assert_eq!((stats.cores[0].stalls, stats.cores[1].stalls), (1, 1));
}

#[test]
fn a_core_parked_in_tokio_is_not_stalled() {
    let _serial = serial();
    let (rt, reports) = recording_with(2, Some(Duration::from_millis(20)), true);
    rt.block_on(async {
        // Core 0 parks in tokio's runtime for 15 thresholds, a tokio timer pending, with a
        // tokio task of its own waiting too; core 1 parks in its tokio runtime all along.
        let waiting = tokio::spawn(tokio::time::sleep(Duration::from_millis(300)));
        tokio::time::sleep(Duration::from_millis(300)).await;
        waiting.await.unwrap();
        tickless::time::sleep(Duration::from_millis(100)).await;
    });
    assert!(reports.lock().unwrap().is_empty(), "{:?}", reports.lock());
    assert_eq!(rt.stats().total.stalls, 0);
}

#[test]
fn a_named_task_s_report_gives_its_name() {
    let _serial = serial();
    let (rt, reports) = recording(1, Some(Duration::from_millis(50)));
    let (line, id) = rt.block_on(async {
        let builder = tickless::task::Builder::new().name("hasher");
        let (line, task) = (line!(), builder.spawn(async { block() }).unwrap());
        let id = task.id();
        task.await.unwrap();
        (line, id)
    });
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let r = &reports[0];
    assert_eq!((r.task_id(), r.task_name()), (Some(id), Some("hasher")));
    let at = r.spawned_at().unwrap();
    assert_eq!((at.file(), at.line()), (file!(), line));
    assert!(
        r.to_string()
            .contains(&format!("task {id} \"hasher\" (spawned at {at})")),
        "{r}"
    );
}

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): what it has run, not the wall.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec`, which `ts` is.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Pins the calling thread to CPU `cpu`; `false` where the system refuses.
fn pin_to(cpu: usize) -> bool {
    // SAFETY: a zeroed `cpu_set_t` is an empty set; `CPU_SET` and `sched_setaffinity` (0: the
    // calling thread) read and write only it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The first CPU this process may run on.
fn first_allowed_cpu() -> usize {
    // SAFETY: as in `pin_to`, reading the calling thread's mask into a zeroed set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .find(|&cpu| libc::CPU_ISSET(cpu, &set))
            .expect("some CPU is allowed")
    }
}

#[test]
fn a_core_thread_kept_off_its_cpu_is_a_preemption_not_a_stall() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let _serial = serial();
    let (rt, reports) = recording(2, Some(Duration::from_millis(20)));
    let cpu = first_allowed_cpu();
    // A thread that keeps `cpu` busy, at normal priority.
    let (started, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let hog = {
        let (started, stop) = (started.clone(), stop.clone());
        std::thread::spawn(move || {
            let pinned = pin_to(cpu);
            started.store(true, Ordering::SeqCst);
            while pinned && !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
            pinned
        })
    };
    while !started.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let preempted = rt.block_on(async {
        let core1 = tickless::runtime::Handle::all_current().unwrap()[1].clone();
        core1
            .spawn(async move {
                // Core 1's thread, on the hog's CPU at the lowest priority (`SCHED_IDLE`, which
                // any thread may take for itself): the kernel runs it only when the hog lets it,
                // a fraction of a percent of the time.
                let param = libc::sched_param { sched_priority: 0 };
                // SAFETY: `sched_setscheduler` on the calling thread (0) with a valid param.
                let idle = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0;
                if !(idle && pin_to(cpu)) {
                    return false;
                }
                // One poll of 2 ms of CPU time, which the hog stretches far past the threshold
                // in wall time: the thread was runnable all along, and ran little.
                let (start, wall) = (thread_cpu_time(), std::time::Instant::now());
                while thread_cpu_time() - start < Duration::from_millis(2) {
                    std::hint::spin_loop();
                }
                // Whether the poll lasted long enough for the watchdog to see it (its checks
                // come every half threshold): with the other CPU's load, the kernel may
                // let the thread run sooner (seen: 10-12 ms with two busy loops running).
                wall.elapsed() >= Duration::from_millis(60)
            })
            .await
            .unwrap()
    });
    stop.store(true, Ordering::SeqCst);
    let hog_pinned = hog.join().unwrap();
    if !(preempted && hog_pinned) {
        eprintln!(
            "this system refused SCHED_IDLE or the CPU affinity, or ran the poll within three \
             thresholds anyway: nothing to test"
        );
        return;
    }
    let reports = reports.lock().unwrap();
    assert!(reports.is_empty(), "{reports:?}");
    let stats = stats_when(&rt, |s| s.cores[1].preemptions >= 1);
    assert_eq!(stats.total.stalls, 0);
    assert!(stats.cores[1].preemptions >= 1, "{:?}", stats.cores[1]);
}

#[test]
fn a_core_woken_every_millisecond_leaves_the_watchdog_awake_and_an_idle_one_lets_it_sleep() {
    let _serial = serial();
    let (rt, _reports) = recording(1, Some(Duration::from_millis(25)));
    let rouses = || rt.stats().cores[0].watchdog_rouses;
    rt.block_on(async {
        // Let the watchdog see a quiet period first: it lies down.
        tickless::time::sleep(Duration::from_millis(200)).await;
    });
    let before = rouses();
    assert!(
        before >= 1,
        "the idle runtime's watchdog slept, and the core's wake rang it"
    );
    rt.block_on(async {
        // About a second of 1 ms timers: the core is idle at almost every check (every
        // 12.5 ms), and polls between any two. Each check used to lie down, and the next
        // wake to ring the watchdog awake: about 80 rouses.
        for _ in 0..600 {
            tickless::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let busy = rouses() - before;
    assert!(
        busy <= 15,
        "{busy} rouses while the core woke every millisecond"
    );
    rt.block_on(tickless::time::sleep(Duration::from_millis(200)));
    assert!(
        rouses() > before + busy,
        "idle again: the watchdog slept again"
    );
}
