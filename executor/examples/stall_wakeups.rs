//! What the stall detector's watchdog costs in wakeups: its thread's context switches over
//! 2 s of an idle runtime (every core parked), 2 s of a busy one (a task yielding in a loop),
//! and 2 s with no thread in `block_on` (core 0 run by nobody), at the default 25 ms threshold.
//!
//! ```text
//! cargo run --release -p tickless --example stall_wakeups
//! ```
//!
//! Expect about 2 / threshold a second while busy (80 at 25 ms), and next to none otherwise: the
//! watchdog parks while every core does.

use std::time::{Duration, Instant};

/// The watchdog thread's context switches so far (voluntary and not), from `/proc`.
fn watchdog_switches() -> u64 {
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let path = task.expect("a thread's entry").path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if comm.trim() == "tickless-watchd" {
            let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
            return status
                .lines()
                .filter(|l| l.contains("ctxt_switches"))
                .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
                .sum();
        }
    }
    panic!("no watchdog thread: is the stall detector off?")
}

fn main() -> std::io::Result<()> {
    const SPAN: Duration = Duration::from_secs(2);
    let rt = tickless::Builder::new().cores(2).build()?;
    std::thread::sleep(Duration::from_millis(300)); // the watchdog has started
    let start = watchdog_switches();
    rt.block_on(tickless::time::sleep(SPAN));
    let idle = watchdog_switches();
    rt.block_on(async {
        let t = Instant::now();
        while t.elapsed() < SPAN {
            tickless::yield_now().await;
        }
    });
    let busy = watchdog_switches();
    std::thread::sleep(SPAN);
    let none = watchdog_switches();
    println!(
        "watchdog context switches in {SPAN:?}: idle {}, busy {}, no block_on {}",
        idle - start,
        busy - idle,
        none - busy
    );
    Ok(())
}
