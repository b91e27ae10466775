//! The user-space cost of a timer fire, free of the clock and the kernel: `compare`'s
//! timer_churn (1,000 tasks, each sleeping a pseudo-random 1-100 ms in a loop) on a paused
//! clock, which jumps from one expiry to the next without a system call. Run it under
//! callgrind with two sleep counts and subtract, for instructions per fire:
//!
//! ```text
//! cargo build --release -p tickless-benches --example churn_paused
//! B=target/release/examples/churn_paused
//! for n in 10 30; do valgrind --tool=callgrind --callgrind-out-file=/tmp/cp.$n $B tickless $n; done
//! # (Collected(30) - Collected(10)) / (1,000 x 20) = instructions per fire
//! ```
//!
//! The same on tokio's current-thread runtime needs tokio's paused clock, its `test-util`
//! feature, which `compare`'s tokio must not have: build with `--features tokio-test-util` and
//! run `churn_paused tokio N`.
//!
//! Prints the fires and the paused time they spanned.

use std::time::Duration;

const TASKS: u64 = 1_000;

/// Task `i`'s `n` sleep lengths, 1 to 100 ms, as timer_churn draws them.
fn lengths(i: u64, n: u32) -> impl Iterator<Item = Duration> {
    let mut x = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n).map(move |_| {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        Duration::from_micros(1_000 + x.wrapping_mul(0x2545_F491_4F6C_DD1D) % 99_001)
    })
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (runtime, n) = match args.as_slice() {
        [r, n] => (r.as_str(), n.parse().expect("a sleep count")),
        _ => panic!("usage: churn_paused <tickless|tokio> <sleeps per task>"),
    };
    let span = match runtime {
        "tickless" => {
            let mut b = tickless::Builder::new();
            b.cores(1).start_paused(true);
            // `TICKLESS_BENCH_BUILDER`'s settings, as `compare`'s runtimes take them.
            tickless_benches::rt::tickless::from_env(&mut b);
            let rt = b.build()?;
            rt.block_on(async {
                let start = tickless::time::Instant::now();
                let tasks: Vec<_> = (0..TASKS)
                    .map(|i| {
                        tickless::spawn_local(async move {
                            for d in lengths(i, n) {
                                let deadline = tickless::time::Instant::now() + d;
                                tickless::time::sleep_until(deadline).await;
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await.expect("a churn task");
                }
                start.elapsed()
            })
        }
        #[cfg(feature = "tokio-test-util")]
        "tokio" => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()?;
            rt.block_on(async {
                let start = tokio::time::Instant::now();
                let tasks: Vec<_> = (0..TASKS)
                    .map(|i| {
                        tokio::spawn(async move {
                            for d in lengths(i, n) {
                                let deadline = tokio::time::Instant::now() + d;
                                tokio::time::sleep_until(deadline).await;
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await.expect("a churn task");
                }
                start.elapsed()
            })
        }
        other => panic!("unknown runtime {other}"),
    };
    println!("fires={} paused_span={span:?}", TASKS * u64::from(n));
    Ok(())
}
