//! Timer workloads: sleep precision, an idle runtime full of long sleeps, and timer churn.
//!
//! The runtimes are single-threaded here (tickless with one core): each runs on one thread
//! pinned to the first CPU, while the calling thread measures from outside through `/proc` and
//! `getrusage`, asleep meanwhile, so that it perturbs nothing it counts.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::sys;

/// A runtime's `sleep_until`, taking a `std` instant.
pub trait SleepUntil: Fn(Instant) -> Self::Sleep + Clone + 'static {
    /// The runtime's sleep future.
    type Sleep: Future<Output = ()>;
}

impl<F, S> SleepUntil for F
where
    F: Fn(Instant) -> S + Clone + 'static,
    S: Future<Output = ()>,
{
    type Sleep = S;
}

/// What the measuring thread and the runtime's tasks share.
#[derive(Debug, Default)]
pub struct Probe {
    /// Set by the runtime once its tasks are spawned and registered.
    pub ready: AtomicBool,
    /// Set by the measurer while its window is open: tasks record only then.
    pub record: AtomicBool,
    /// Timers that fired (sleeps that completed) while recording.
    pub fires: AtomicU64,
}

thread_local! {
    /// Lateness of each sleep completed while recording, in ns, on the runtime's thread. A
    /// thread-local costs every runtime the same and needs no `Send` from its tasks.
    static LATENESS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Records one lateness on this thread.
fn record(late: Duration) {
    let ns = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
    LATENESS.with(|l| l.borrow_mut().push(ns));
}

/// Takes the lateness recorded on this thread.
fn take_lateness() -> Vec<u64> {
    LATENESS.with(|l| std::mem::take(&mut *l.borrow_mut()))
}

/// Percentiles of lateness, in microseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lateness {
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Largest.
    pub max_us: f64,
    /// Samples.
    pub count: usize,
}

impl Lateness {
    /// From samples in ns (sorted here).
    pub fn of(mut ns: Vec<u64>) -> Lateness {
        ns.sort_unstable();
        let us = |v: u64| v as f64 / 1_000.0;
        Lateness {
            p50_us: us(crate::stats::percentile_sorted(&ns, 50.0)),
            p99_us: us(crate::stats::percentile_sorted(&ns, 99.0)),
            max_us: us(ns.last().copied().unwrap_or(0)),
            count: ns.len(),
        }
    }
}

// ---- sleep_precision -------------------------------------------------------------------------

/// Sleeps in a row: for each `(length, count)`, `count` sleeps of `length`, one after another.
#[derive(Debug, Clone)]
pub struct SleepPlan {
    /// The series, in order.
    pub series: Vec<(Duration, u32)>,
}

/// The body of `sleep_precision`, inside a runtime: each sleep's deadline is taken from a fresh
/// clock read, its lateness is the time from the deadline to the task running again. Returns
/// the lateness of each series, in ns.
pub async fn sleep_series<S: SleepUntil>(sleep_until: S, plan: &SleepPlan) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    for &(length, count) in &plan.series {
        let mut late = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let deadline = Instant::now() + length;
            sleep_until(deadline).await;
            late.push(u64::try_from(deadline.elapsed().as_nanos()).unwrap_or(u64::MAX));
        }
        out.push(late);
    }
    out
}

/// `sleep_precision` on a thread pinned to the first CPU: `run` builds the runtime and blocks on
/// [`sleep_series`].
///
/// # Errors
///
/// `run`'s error, or pinning failed.
pub fn sleep_precision(
    plan: &SleepPlan,
    run: impl FnOnce(&SleepPlan) -> io::Result<Vec<Vec<u64>>> + Send,
) -> io::Result<Vec<Lateness>> {
    let cpu = crate::workload::cpus(1)?[0];
    let series = crate::workload::on_fresh_thread(|| {
        sys::pin_current_thread(cpu)?;
        run(plan)
    })?;
    Ok(series.into_iter().map(Lateness::of).collect())
}

// ---- idle ------------------------------------------------------------------------------------

/// `idle`: many tasks asleep for long, and a window in which nothing should wake the runtime.
#[derive(Debug, Clone, Copy)]
pub struct IdlePlan {
    /// Tasks, each sleeping [`IDLE_SLEEP`].
    pub tasks: u32,
    /// How long the wakeups are counted.
    pub window: Duration,
}

/// How long each idle task sleeps: far past the window.
pub const IDLE_SLEEP: Duration = Duration::from_secs(60);

/// What `idle` found.
#[derive(Debug, Clone, Copy)]
pub struct IdleResult {
    /// Voluntary context switches of the runtime's threads per second of the window.
    pub wakeups_per_s: f64,
    /// Threads of the process other than the measurer.
    pub threads: usize,
}

/// The body of `idle`'s main future: spawn the sleepers (with `spawn`), let them register,
/// say so, then sleep past the end of the window.
pub async fn idle_main<S: SleepUntil>(
    sleep_until: S,
    mut spawn: impl FnMut(S::Sleep),
    plan: IdlePlan,
    probe: &Probe,
) {
    let start = Instant::now();
    for _ in 0..plan.tasks {
        spawn(sleep_until(start + IDLE_SLEEP));
    }
    // The spawned tasks run (and register their timers) before this sleep completes.
    sleep_until(Instant::now() + Duration::from_millis(20)).await;
    probe.ready.store(true, Ordering::Release);
    sleep_until(Instant::now() + SETTLE + plan.window + Duration::from_millis(100)).await;
}

/// How long the measurer waits after `ready` before it opens the window, for the runtime to
/// go back to sleep.
const SETTLE: Duration = Duration::from_millis(100);

/// `idle` with the runtime on a thread pinned to the first CPU: `run` builds the runtime and
/// blocks on [`idle_main`].
///
/// # Errors
///
/// `run`'s error, pinning failed, or `/proc` could not be read.
pub fn idle(
    plan: IdlePlan,
    run: impl FnOnce(IdlePlan, Arc<Probe>) -> io::Result<()> + Send,
) -> io::Result<IdleResult> {
    let cpu = crate::workload::cpus(1)?[0];
    let probe = Arc::new(Probe::default());
    thread::scope(|s| {
        let p = probe.clone();
        let rt = s.spawn(move || {
            sys::pin_current_thread(cpu)?;
            run(plan, p)
        });
        wait_ready(&probe, &rt)?;
        thread::sleep(SETTLE);
        let me = sys::gettid();
        let threads = sys::thread_count()? - 1;
        let c0 = sys::voluntary_switches(me)?;
        let t0 = Instant::now();
        thread::sleep(plan.window);
        let c1 = sys::voluntary_switches(me)?;
        let secs = t0.elapsed().as_secs_f64();
        rt.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        Ok(IdleResult {
            wakeups_per_s: c1.saturating_sub(c0) as f64 / secs,
            threads,
        })
    })
}

/// Waits for the runtime to set `ready`, or to end first (with an error, most likely).
fn wait_ready<T>(
    probe: &Probe,
    rt: &thread::ScopedJoinHandle<'_, io::Result<T>>,
) -> io::Result<()> {
    let give_up = Instant::now() + Duration::from_secs(30);
    while !probe.ready.load(Ordering::Acquire) {
        if rt.is_finished() {
            return Ok(()); // its error comes out of `join`
        }
        if Instant::now() > give_up {
            return Err(io::Error::other("the runtime never became ready"));
        }
        thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

// ---- timer_churn -----------------------------------------------------------------------------

/// `timer_churn`: tasks looping on sleeps of random length.
#[derive(Debug, Clone, Copy)]
pub struct ChurnPlan {
    /// Tasks.
    pub tasks: u32,
    /// Shortest sleep.
    pub min: Duration,
    /// Longest sleep.
    pub max: Duration,
    /// Time before the window opens, for the sleeps to spread out.
    pub warmup: Duration,
    /// How long wakeups, CPU time, fires and lateness are counted.
    pub window: Duration,
}

/// What `timer_churn` found.
#[derive(Debug, Clone, Copy)]
pub struct ChurnResult {
    /// Voluntary context switches of the runtime's threads per second.
    pub wakeups_per_s: f64,
    /// Sleeps completed per second.
    pub fires_per_s: f64,
    /// User + system CPU time of the runtime's threads per completed sleep, in µs.
    pub cpu_us_per_fire: f64,
    /// How late the sleeps completed.
    pub late: Lateness,
}

/// A small, fast, deterministic generator (xorshift64*): every runtime sees the same sleeps.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator of task `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A duration in `[min, max]`, at microsecond granularity.
    pub fn between(&mut self, min: Duration, max: Duration) -> Duration {
        let (lo, hi) = (min.as_micros() as u64, max.as_micros() as u64);
        Duration::from_micros(lo + self.next_u64() % (hi - lo + 1))
    }
}

/// One churning task: forever, sleep a random 1-100 ms and, while the window is open, record
/// how late the sleep completed.
pub async fn churn_task<S: SleepUntil>(
    index: u32,
    sleep_until: S,
    plan: ChurnPlan,
    probe: Arc<Probe>,
) {
    let mut rng = Rng::new(u64::from(index) + 1);
    loop {
        let deadline = Instant::now() + rng.between(plan.min, plan.max);
        sleep_until(deadline).await;
        if probe.record.load(Ordering::Relaxed) {
            record(deadline.elapsed());
            probe.fires.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The body of `timer_churn`'s main future once the tasks are spawned: say so, and sleep past
/// the end of the window (the runtime then drops the tasks).
pub async fn churn_main<S: SleepUntil>(sleep_until: S, plan: ChurnPlan, probe: &Probe) {
    probe.ready.store(true, Ordering::Release);
    sleep_until(Instant::now() + plan.warmup + plan.window + Duration::from_millis(100)).await;
}

/// `timer_churn` with the runtime on a thread pinned to the first CPU: `run` builds the
/// runtime, spawns [`ChurnPlan::tasks`] [`churn_task`]s and blocks on [`churn_main`].
///
/// # Errors
///
/// `run`'s error, pinning failed, or `/proc` or `getrusage` could not be read.
pub fn churn(
    plan: ChurnPlan,
    run: impl FnOnce(ChurnPlan, Arc<Probe>) -> io::Result<()> + Send,
) -> io::Result<ChurnResult> {
    let cpu = crate::workload::cpus(1)?[0];
    let probe = Arc::new(Probe::default());
    thread::scope(|s| {
        let p = probe.clone();
        let rt = s.spawn(move || {
            sys::pin_current_thread(cpu)?;
            run(plan, p)?;
            Ok(take_lateness())
        });
        wait_ready(&probe, &rt)?;
        thread::sleep(plan.warmup);
        let me = sys::gettid();
        let (c0, cpu0, mine0) = (
            sys::voluntary_switches(me)?,
            sys::process_cpu()?,
            sys::thread_cpu()?,
        );
        let f0 = probe.fires.load(Ordering::Relaxed);
        let t0 = Instant::now();
        probe.record.store(true, Ordering::Relaxed);
        thread::sleep(plan.window);
        probe.record.store(false, Ordering::Relaxed);
        let secs = t0.elapsed().as_secs_f64();
        let (c1, cpu1, mine1) = (
            sys::voluntary_switches(me)?,
            sys::process_cpu()?,
            sys::thread_cpu()?,
        );
        let fires = probe.fires.load(Ordering::Relaxed) - f0;
        let late = rt.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        let cpu = (cpu1 - cpu0).saturating_sub(mine1 - mine0);
        Ok(ChurnResult {
            wakeups_per_s: c1.saturating_sub(c0) as f64 / secs,
            fires_per_s: fires as f64 / secs,
            cpu_us_per_fire: cpu.as_secs_f64() * 1e6 / fires.max(1) as f64,
            late: Lateness::of(late),
        })
    })
}
