//! Pipe ping-pong: two tasks exchange a 4-byte message over two pipes, `N` round trips per
//! iteration, on every contender.
//!
//! - `same_core`: both tasks on one core (one thread pinned to the first CPU).
//! - `cross_core`: one side per core, each pinned to its own CPU (tokio, smol and monoio: one
//!   current-thread runtime per pinned thread; tickless: a two-core runtime, pinned, and
//!   again with `spin_before_park` of 50 µs).
//! - `same_core_timeout`: as `same_core`, every read under a 1 s timeout that never fires (the
//!   blocking threads `poll(2)` with a 1 s timeout before each read; the floor has no timeout).
//!
//! Baselines: `threads`, two blocking threads (pipe-test), and `floor`, one thread doing the
//! round trip's four system calls back to back. io_uring may be unavailable (seccomp, a
//! sysctl): `monoio_uring` is then skipped with a note.
//!
//! `cargo bench -p tickless-benches --bench pingpong` (about a minute);
//! `cargo bench -p tickless-benches --bench pingpong -- --test` runs each once (a smoke test).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tickless_benches::rt::Contender;
use tickless_benches::workload::pingpong::{Mode, Plan};

/// Round trips per iteration.
const N: u32 = 1_000;

/// Everyone but the cross-core spinning variant.
const CONTENDERS: [&str; 7] = [
    "tickless",
    "tokio",
    "smol",
    "monoio_legacy",
    "monoio_uring",
    "threads",
    "floor",
];

fn group(c: &mut Criterion, name: &str, mode: Mode, extra: &[&str]) {
    let mut g = c.benchmark_group(name);
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(10)
        .throughput(Throughput::Elements(u64::from(N)));
    for &who in CONTENDERS.iter().chain(extra) {
        let contender = Contender::named(who).expect("a known contender");
        if let Err(e) = contender.available() {
            println!("{name}/{who}: skipped, not available here: {e}");
            continue;
        }
        g.bench_function(who, |b| {
            b.iter_custom(|iters| {
                // One runtime (and its threads) per sample; only the round trips are timed.
                let rtts = u32::try_from(iters.saturating_mul(u64::from(N))).unwrap_or(u32::MAX);
                let plan = Plan {
                    mode,
                    warmup: N / 10,
                    rtts,
                };
                contender
                    .pingpong(&plan)
                    .unwrap_or_else(|e| panic!("{name}/{who}: {e}"))
                    .elapsed
            })
        });
    }
    g.finish();
}

fn pingpong(c: &mut Criterion) {
    group(c, "same_core", Mode::Same, &[]);
    group(c, "cross_core", Mode::Cross, &["tickless_spin50us"]);
    group(c, "same_core_timeout", Mode::Timeout, &[]);
}

criterion_group!(benches, pingpong);
criterion_main!(benches);
