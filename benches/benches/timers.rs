//! Timer queue costs: an insert+cancel pair (a request timeout that never fires) and an
//! insert+fire, with 0, 1,000 and 1,000,000 timers already pending.
//!
//! `cargo bench -p tickless-benches --bench timers`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
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

criterion_group!(benches, timers);
criterion_main!(benches);
