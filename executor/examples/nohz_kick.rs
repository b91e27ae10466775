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
        timer_fires: a.timer_fires - before.timer_fires,
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
            "setting={name} inserts={inserts} wakeups={} kicks={} kicks_avoided={} fires={}",
            c.parks, c.remote_wakes_sent, c.remote_wakes_avoided, c.timer_fires
        );
    }
    Ok(())
}
