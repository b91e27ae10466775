//! Timer queue costs: an insert+cancel pair (a request timeout that never fires) and an
//! insert+fire, with 0, 1,000 and 1,000,000 timers already pending; and beside them the same
//! timeout through the public path (`tickless::time::timeout` in a task, clock read, registration
//! and all), so that the gap between the wheel and what a user pays stays in view; and that
//! timeout on tokio (`public_tokio`), measured in the same run.
//!
//! `cargo bench -p tickless-benches --bench timers`

use std::future::{poll_fn, Future};
use std::hint::black_box;
use std::task::Poll;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use tickless_timer::{Config, FakeDevice, Slack, TimerQueue};

const MS: u64 = 1_000_000;

/// A queue at the default policy with `pending` timers spread over 1,000 to 1,100 s.
fn queue(pending: u64) -> TimerQueue<u64, FakeDevice> {
    let mut q = TimerQueue::new(FakeDevice::default(), Config::default());
    for i in 0..pending {
        let spread = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % (100_000 * MS);
        q.insert(1_000_000 * MS + spread, Slack::None, i);
    }
    q.on_idle();
    q
}

fn timers(c: &mut Criterion) {
    let mut group = c.benchmark_group("timers");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for pending in [0u64, 1_000, 1_000_000] {
        let mut q = queue(pending);
        let mut i = 0u64;
        group.bench_function(BenchmarkId::new("insert_cancel", pending), |b| {
            b.iter(|| {
                i += 1;
                // A 1 s timeout, 1 µs later each time: as a server's request timeouts are.
                let h = q.insert(1_000 * MS + i * 1_000, Slack::None, i);
                black_box(q.cancel(h))
            })
        });
        let mut q = queue(pending);
        let mut now = 0u64;
        group.bench_function(BenchmarkId::new("insert_fire", pending), |b| {
            b.iter(|| {
                now += 1_000;
                q.insert(now, Slack::None, now);
                q.advance(now);
                black_box(q.pop_expired())
            })
        });
    }
    group.finish();
}

/// A future that is pending at its first poll (waking its task at once) and ready at its
/// second: a read whose data comes a moment later, as a request's.
fn pending_once() -> impl Future<Output = u64> {
    let mut polled = false;
    poll_fn(move |cx| {
        if polled {
            return Poll::Ready(1);
        }
        polled = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
}

/// A runtime that runs a future to completion on the calling thread.
trait BlockOn {
    fn run<F: Future>(&self, future: F) -> F::Output;
}

impl BlockOn for tickless::Runtime {
    fn run<F: Future>(&self, future: F) -> F::Output {
        self.block_on(future)
    }
}

impl BlockOn for tokio::runtime::Runtime {
    fn run<F: Future>(&self, future: F) -> F::Output {
        self.block_on(future)
    }
}

/// `iters` awaits of `make(i)` in `rt`'s `block_on`, timed from inside it (generic: no boxed
/// future in the loop).
fn awaits<R: BlockOn, F: Future>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    rt: &R,
    make: impl Fn(u64) -> F,
) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            rt.run(async {
                let start = Instant::now();
                for i in 0..iters {
                    black_box(&make(i).await);
                }
                start.elapsed()
            })
        })
    });
}

/// A group of the public path's timeouts, `name`.
fn public_group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    group
}

fn public(c: &mut Criterion) {
    let mut group = public_group(c, "public");
    let rt = tickless::Builder::new()
        .cores(1)
        .build()
        .expect("a runtime");
    let second = Duration::from_secs(1);
    // Ready at the first poll: nothing registered.
    awaits(&mut group, "timeout_ready", &rt, |i| {
        tickless::time::timeout(second, async move { i })
    });
    // Pending once: registered, the task woken and polled again, cancelled on drop.
    awaits(&mut group, "timeout_pending_once", &rt, |_| {
        tickless::time::timeout(second, pending_once())
    });
    // The same future without a timeout: what the timeout adds is the difference.
    awaits(&mut group, "pending_once", &rt, |_| pending_once());
    group.finish();
}

/// The `public` group's three on tokio (a current-thread runtime, timers enabled), in the same
/// run: what a tokio user pays for the same timeout.
fn public_tokio(c: &mut Criterion) {
    let mut group = public_group(c, "public_tokio");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let second = Duration::from_secs(1);
    awaits(&mut group, "timeout_ready", &rt, |i| {
        tokio::time::timeout(second, async move { i })
    });
    awaits(&mut group, "timeout_pending_once", &rt, |_| {
        tokio::time::timeout(second, pending_once())
    });
    awaits(&mut group, "pending_once", &rt, |_| pending_once());
    group.finish();
}

criterion_group!(benches, timers, public, public_tokio);
criterion_main!(benches);
