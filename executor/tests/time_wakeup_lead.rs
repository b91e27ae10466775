//! The wakeup lead (`Builder::wakeup_lead_max`) on real cores, through the counters: each core
//! learns one, within its cap, on either clock event device; an expiry it brings ahead of an
//! exact timer is waited out awake, never fired early; no cap, or paused time, never leads.

use std::time::Duration;

use tickless::time::{sleep, Instant};
use tickless::{Builder, ClockDevice, CoreStats, Runtime};

fn runtime(device: ClockDevice, lead_max: Duration) -> Runtime {
    Builder::new()
        .cores(1)
        .clock_device(device)
        .wakeup_lead_max(lead_max)
        .build()
        .expect("a one-core runtime")
}

const SLEEPS: u64 = 100;

/// `SLEEPS` exact 200 µs sleeps one after the other, each its own wakeup; asserts that none
/// ended before its deadline, and returns the counters they cost.
fn exact_sleeps(rt: &Runtime) -> CoreStats {
    let before = rt.stats().total;
    rt.block_on(async {
        for i in 0..SLEEPS {
            let deadline = Instant::now() + Duration::from_micros(200);
            tickless::time::sleep_until(deadline)
                .slack(Duration::ZERO)
                .await;
            let now = Instant::now();
            assert!(
                now >= deadline,
                "sleep {i} ended early: {now:?} < {deadline:?}"
            );
        }
    });
    rt.stats().total - before
}

fn learns_a_lead_and_never_fires_early(device: ClockDevice) {
    let cap = Duration::from_micros(100);
    let rt = runtime(device, cap);
    let s = exact_sleeps(&rt);
    assert_eq!(s.timer_fires, SLEEPS, "{s:?}");
    let lead = rt.stats().total.wakeup_lead_ns;
    // A wakeup always comes some time after the device's instant: three make a lead.
    assert!(lead > 0 && lead <= 100_000, "lead {lead} ns: {s:?}");
    // An exact timer's window is a point: a wakeup the lead brought ahead of it finds nothing
    // due, and the core waits it out awake (unless the loop's next clock reading, before it
    // goes idle, finds it due already).
    assert!(s.lead_spins > 0, "no wakeup came ahead of its timer: {s:?}");
    assert!(s.lead_spins <= s.timer_early, "{s:?}");
    assert!(s.spins >= s.lead_spins, "{s:?}");
    assert_eq!(s.timerfd_spurious, 0, "{s:?}");
    // Waiting out the lead does not poll I/O: about one poll a sleep, as without it.
    assert!(s.io_polls <= 2 * SLEEPS, "{s:?}");
}

#[test]
fn the_timerfd_device_learns_a_lead_and_never_fires_early() {
    learns_a_lead_and_never_fires_early(ClockDevice::TimerFd);
}

#[test]
fn the_epoll_device_learns_a_lead_and_never_fires_early() {
    learns_a_lead_and_never_fires_early(ClockDevice::Epoll);
}

#[test]
fn a_cap_of_zero_never_leads() {
    for device in [ClockDevice::TimerFd, ClockDevice::Epoll] {
        let rt = runtime(device, Duration::ZERO);
        let s = exact_sleeps(&rt);
        assert_eq!(s.timer_fires, SLEEPS);
        assert_eq!(
            (s.wakeup_lead_ns, s.timer_early, s.lead_spins),
            (0, 0, 0),
            "{device:?}: {s:?}"
        );
    }
}

#[test]
fn a_timer_with_a_window_wider_than_the_lead_needs_no_spin() {
    let rt = runtime(ClockDevice::TimerFd, Duration::from_micros(100));
    exact_sleeps(&rt); // learn
    let before = rt.stats().total;
    rt.block_on(async {
        for _ in 0..20 {
            // 2 ms of slack: the device fires inside the window, where the timer is due.
            sleep(Duration::from_millis(1))
                .slack(Duration::from_millis(2))
                .await;
        }
    });
    let s = rt.stats().total - before;
    assert_eq!(s.timer_fires, 20);
    assert_eq!((s.timer_early, s.lead_spins), (0, 0), "{s:?}");
}

#[test]
fn paused_time_never_leads() {
    let rt = Builder::new()
        .cores(1)
        .start_paused(true)
        .build()
        .expect("a paused runtime");
    let s = exact_sleeps(&rt);
    assert_eq!(s.timer_fires, SLEEPS);
    assert_eq!(
        (s.wakeup_lead_ns, s.timer_early, s.lead_spins, s.parks),
        (0, 0, 0, 0),
        "{s:?}"
    );
}

#[test]
fn a_cap_above_the_largest_is_a_build_error() {
    Builder::new()
        .cores(1)
        .wakeup_lead_max(tickless::runtime::MAX_WAKEUP_LEAD)
        .build()
        .expect("the largest cap is accepted");
    let err = Builder::new()
        .cores(1)
        .wakeup_lead_max(tickless::runtime::MAX_WAKEUP_LEAD + Duration::from_nanos(1))
        .build()
        .expect_err("rejected");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("wakeup lead"), "{err}");
}
