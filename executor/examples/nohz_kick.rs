//! The 2015 lazy-nohz-kick experiment, on tickless: one thread hands timers with random
//! deadlines (1 to 100 ms) to a sleeping core, for a fixed number of inserts; we count the
//! core's wakeups with the sleep-word rule (wake a core only if the timer shortens its sleep)
//! and with "always wake". (The kernel experiment had four target CPUs; this machine has two,
//! one of which inserts.) A core's wakeups are its parks: each ends in one.
//!
//! ```text
//! cargo run --release -p tickless --example nohz_kick -- [--inserts N]
//! ```
//!
//! The kernel thread (background/003) saw wakeups fall from 135/238/157/172 to 88/43/83/70 on
//! four CPUs.
//!
//! Then the remote shrink (`shrinks`): a timer handed to a core that sleeps past it. Woken to
//! re-arm, the core wakes twice (now, then at the deadline); with its timerfd programmed by the
//! handing thread, once. It runs `inserts / 10` hand-overs each way, on a core that has
//! learned its wakeup lead first: the handing thread programs the timerfd that lead ahead of
//! the deadline, and the core, woken that early, waits the rest out awake (`lead_spins`)
//! rather than parking again.

use std::io;
use std::time::Duration;

use tickless::time::Instant;
use tickless::{Builder, CoreStats};

/// Runs the experiment: this thread hands `inserts` timers to core 1 (core 0 is this
/// thread, which is busy inserting; with 2 CPUs that leaves one core to sleep). Returns core
/// 1's counters over the experiment.
pub fn experiment(always_wake: bool, inserts: u32) -> io::Result<CoreStats> {
    let rt = Builder::new()
        .cores(2)
        .always_wake_remote(always_wake)
        // The core's own wait (a core parked in tokio's reactor wakes otherwise).
        .tokio_context(false)
        .build()?;
    let core1 = rt.handle(1);
    let before = rt.stats().cores[1];
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut joins = Vec::new();
    for _ in 0..inserts {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let delay = Duration::from_micros(1_000 + x % 99_000);
        joins.push(core1.spawn_at(Instant::now() + delay, async {}));
        std::thread::sleep(Duration::from_micros(20));
    }
    for j in joins {
        j.join().map_err(io::Error::other)?;
    }
    // A core publishes its counters as it goes to sleep: wait for that.
    while !core1.is_parked() {
        std::thread::yield_now();
    }
    let a = rt.stats().cores[1];
    Ok(CoreStats {
        parks: a.parks - before.parks,
        remote_wakes_sent: a.remote_wakes_sent - before.remote_wakes_sent,
        remote_wakes_avoided: a.remote_wakes_avoided - before.remote_wakes_avoided,
        remote_arms: a.remote_arms - before.remote_arms,
        timer_fires: a.timer_fires - before.timer_fires,
        ..CoreStats::default()
    })
}

/// The one-wakeup remote shrink: core 1 sleeps with its device armed a minute out (a timer of
/// its own), and this thread hands it a timer 2 ms out and waits for it to fire, `count` times.
/// Each hand-over shrinks the core's sleep. Returns core 1's counters over the experiment:
/// with the sleep-word rule the handing thread programs the core's timerfd (`remote_arms`) and
/// the core wakes once per timer, at its deadline; with `always_wake` it is woken to re-arm,
/// then again at the deadline: two wakeups.
pub fn shrinks(always_wake: bool, count: u32) -> io::Result<CoreStats> {
    let rt = Builder::new()
        .cores(2)
        .always_wake_remote(always_wake)
        // The core's own wait (a core parked in tokio's reactor wakes otherwise).
        .tokio_context(false)
        .build()?;
    let core1 = rt.handle(1);
    // First core 1 learns its wakeup lead from timers of its own (a handing thread programs
    // the timerfd that far ahead of a handed timer's deadline, as the core would): 2 ms
    // sleeps, each a park the device ends.
    core1
        .spawn(async {
            for _ in 0..30 {
                tickless::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .join()
        .map_err(io::Error::other)?;
    let far = core1.spawn_at(Instant::now() + Duration::from_secs(60), async {});
    let parked = || {
        while !core1.is_parked() {
            std::thread::yield_now();
        }
    };
    parked();
    let before = rt.stats().cores[1];
    for _ in 0..count {
        core1
            .spawn_at(Instant::now() + Duration::from_millis(2), async {})
            .join()
            .map_err(io::Error::other)?;
        parked();
    }
    let a = rt.stats().cores[1];
    far.abort();
    Ok(CoreStats {
        parks: a.parks - before.parks,
        remote_wakes_sent: a.remote_wakes_sent - before.remote_wakes_sent,
        remote_wakes_avoided: a.remote_wakes_avoided - before.remote_wakes_avoided,
        remote_arms: a.remote_arms - before.remote_arms,
        timer_fires: a.timer_fires - before.timer_fires,
        lead_spins: a.lead_spins - before.lead_spins,
        wakeup_lead_ns: a.wakeup_lead_ns,
        ..CoreStats::default()
    })
}

fn main() -> io::Result<()> {
    let mut inserts = 2_000;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--inserts", Some(n)) => {
                inserts = n
                    .parse()
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{e}")))?
            }
            _ => {
                eprintln!("usage: nohz_kick [--inserts N]");
                std::process::exit(2)
            }
        }
    }
    for (name, always) in [("always_wake", true), ("sleep_word_rule", false)] {
        let c = experiment(always, inserts)?;
        println!(
            "setting={name} inserts={inserts} wakeups={} kicks={} kicks_avoided={} remote_arms={} fires={}",
            c.parks, c.remote_wakes_sent, c.remote_wakes_avoided, c.remote_arms, c.timer_fires
        );
    }
    let count = (inserts / 10).max(1);
    for (name, always) in [("always_wake", true), ("sleep_word_rule", false)] {
        let c = shrinks(always, count)?;
        println!(
            "shrinks setting={name} shrinks={count} wakeups={} wakeups_per_shrink={:.2} lead_us={} lead_spins={} kicks={} remote_arms={} fires={}",
            c.parks,
            c.parks as f64 / f64::from(count),
            c.wakeup_lead_ns / 1_000,
            c.lead_spins,
            c.remote_wakes_sent,
            c.remote_arms,
            c.timer_fires
        );
    }
    Ok(())
}
