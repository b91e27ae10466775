//! How late an exact sleep fires on each clock event device (`Builder::clock_device`): `N`
//! sleeps of each length, one after the other, with `.slack(Duration::ZERO)` on a one-core
//! runtime; the median, 90th and 99th percentile and worst lateness (the time from the deadline
//! to the task's wakeup, by `CLOCK_MONOTONIC`), and what the sleeps cost in the core's counters.
//!
//! ```text
//! cargo run --release -p tickless-benches --example device_lateness -- 20 100
//! ```
//!
//! The arguments: how many 1 s sleeps, and how many 100 ms sleeps (default 20 and 100).
//! The first few sleeps of a runtime teach its wakeup lead: they count like the others.

use std::time::{Duration, Instant};

use tickless::{Builder, ClockDevice, CoreStats};

/// Runs `n` exact sleeps of `length` on a fresh runtime with `device`; prints one line.
fn measure(device: ClockDevice, length: Duration, n: usize) -> std::io::Result<()> {
    let rt = Builder::new().cores(1).clock_device(device).build()?;
    let before = rt.stats().total;
    let mut late: Vec<Duration> = rt.block_on(async {
        let mut late = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            tickless::time::sleep(length).slack(Duration::ZERO).await;
            // Never negative: a timer never fires before its deadline.
            late.push(start.elapsed().saturating_sub(length));
        }
        late
    });
    let cost: CoreStats = rt.stats().total - before;
    late.sort_unstable();
    let at = |p: usize| late[(late.len() * p / 100).min(late.len() - 1)];
    println!(
        "{device:<8?} {:>6.0?} x{n:<4} late: p50 {:>9.1?} p90 {:>9.1?} p99 {:>9.1?} max {:>9.1?} | \
         per sleep: parks {:.2} io_polls {:.2} timer_early {:.2} lead_spins {:.2} spurious {:.2} \
         | lead {} ns",
        length,
        at(50),
        at(90),
        at(99),
        late[late.len() - 1],
        cost.parks as f64 / n as f64,
        cost.io_polls as f64 / n as f64,
        cost.timer_early as f64 / n as f64,
        cost.lead_spins as f64 / n as f64,
        cost.device_spurious as f64 / n as f64,
        rt.stats().total.wakeup_lead_ns,
    );
    Ok(())
}

fn main() -> std::io::Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a sleep count"))
        .collect();
    let long = args.first().copied().unwrap_or(20);
    let short = args.get(1).copied().unwrap_or(100);
    for device in [ClockDevice::TimerFd, ClockDevice::Epoll] {
        if long > 0 {
            measure(device, Duration::from_secs(1), long)?;
        }
        if short > 0 {
            measure(device, Duration::from_millis(100), short)?;
        }
    }
    Ok(())
}
