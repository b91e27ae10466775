//! Every contender runs every workload, tiny: the glue is right (answers checked, no hang),
//! whatever the figures. No assertion on time.

use std::io;
use std::time::Duration;

use tickless_benches::rt::{Contender, ALL};
use tickless_benches::workload::pingpong::{Mode, Plan};
use tickless_benches::workload::timers::{ChurnPlan, IdlePlan, SleepPlan};

/// The contenders that can run here (io_uring may be disabled).
fn contenders() -> Vec<(&'static str, Contender)> {
    ALL.iter()
        .copied()
        .filter(|(name, c)| match c.available() {
            Ok(()) => true,
            Err(e) => {
                eprintln!("{name} skipped: {e}");
                false
            }
        })
        .collect()
}

#[test]
fn pingpong_in_every_mode() -> io::Result<()> {
    let two_cpus = tickless_benches::sys::allowed_cpus()?.len() >= 2;
    for (name, c) in contenders() {
        for mode in [Mode::Same, Mode::Cross, Mode::Timeout, Mode::Paired] {
            if mode == Mode::Cross && !two_cpus {
                continue;
            }
            // Paired: one block each way.
            let rtts = if mode == Mode::Paired { 2_000 } else { 50 };
            let run = c.pingpong(&Plan {
                mode,
                warmup: 10,
                rtts,
            })?;
            assert!(!run.elapsed.is_zero(), "{name} {mode:?}");
            assert_eq!(
                run.tickless.is_some(),
                name.starts_with("tickless"),
                "{name}: tickless's counters, and only tickless's"
            );
        }
    }
    Ok(())
}

#[test]
fn timer_workloads() -> io::Result<()> {
    let sleeps = SleepPlan {
        series: vec![
            (Duration::from_micros(100), 3),
            (Duration::from_millis(1), 2),
        ],
    };
    let idle = IdlePlan {
        tasks: 100,
        window: Duration::from_millis(20),
    };
    let churn = ChurnPlan {
        tasks: 20,
        min: Duration::from_millis(1),
        max: Duration::from_millis(5),
        warmup: Duration::from_millis(10),
        window: Duration::from_millis(50),
    };
    // tickless's policies and spinning change nothing here that the others don't cover.
    let timer_contenders = contenders()
        .into_iter()
        .filter(|(name, _)| !name.starts_with("tickless_") || *name == "tickless_slack1ms");
    for (name, c) in timer_contenders {
        if matches!(c, Contender::Floor) {
            assert!(c.sleeps(&sleeps).is_err(), "the floor has no timers");
            continue;
        }
        let late = c.sleeps(&sleeps)?;
        assert_eq!(
            late.iter().map(|l| l.count).collect::<Vec<_>>(),
            [3, 2],
            "{name}"
        );
        if matches!(c, Contender::Threads) {
            continue;
        }
        c.idle(idle)?;
        let r = c.churn(churn)?;
        assert!(r.late.count > 0, "{name}: no sleep completed in the window");
    }
    Ok(())
}
