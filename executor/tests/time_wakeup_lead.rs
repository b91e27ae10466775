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
    // A wakeup always comes some time after the device's instant (at least the return from
    // the wait and a clock read): three make a lead.
    assert!((100..=100_000).contains(&lead), "lead {lead} ns: {s:?}");
    // An exact timer's window is a point: a wakeup the lead brought ahead of it finds nothing
    // due, and the core waits it out awake (unless the loop's next clock reading, before it
    // goes idle, finds it due already).
    assert!(s.lead_spins > 0, "no wakeup came ahead of its timer: {s:?}");
    assert!(s.lead_spins <= s.timer_early, "{s:?}");
    assert!(s.spins >= s.lead_spins, "{s:?}");
    assert_eq!(s.device_spurious, 0, "{s:?}");
    // Waiting out the lead does not poll I/O: about one poll a sleep, as without it.
    assert!(s.io_polls <= 2 * SLEEPS, "{s:?}");
    // And it ends with the timer due, on the core's own clock: one park a sleep, never a
    // second one for a device re-armed in the past.
    assert_eq!(s.parks, SLEEPS, "{s:?}");
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
fn only_a_park_that_began_before_the_device_fired_teaches_the_lead() {
    use futures_lite::AsyncReadExt;
    use std::io::Write;

    for device in [ClockDevice::TimerFd, ClockDevice::Epoll] {
        let rt = runtime(device, tickless::runtime::MAX_WAKEUP_LEAD);
        exact_sleeps(&rt); // learn
        let lead = rt.stats().total.wakeup_lead_ns;
        let before = rt.stats().total;
        let late = rt.block_on(async {
            let (r, w) = std::io::pipe().expect("a pipe");
            let mut r = tickless::io::PipeReader::from_owned_fd(r.into()).expect("registered");
            let w = std::fs::File::from(std::os::fd::OwnedFd::from(w));
            let mut late = 0;
            for _ in 0..20 {
                // Armed for 2 ms; the core parks, and a byte from another thread wakes it
                // long before that. (Where the machine is too busy for that, the core may
                // first run after the device fired too, whose wakeup then teaches the lead
                // legitimately: counted, and allowed for.)
                let start = std::time::Instant::now();
                let mut nap = std::pin::pin!(sleep(Duration::from_millis(2)).slack(Duration::ZERO));
                assert!(futures_lite::future::poll_once(nap.as_mut())
                    .await
                    .is_none());
                let wake = std::thread::spawn({
                    let mut w = w.try_clone().expect("a second write end");
                    move || w.write_all(b"x").expect("the byte")
                });
                let mut byte = [0u8; 1];
                r.read_exact(&mut byte).await.expect("the byte");
                if start.elapsed() >= Duration::from_micros(1_800) {
                    late += 1;
                }
                wake.join().expect("the writer");
                // Then the thread is held past the device's instant before the core parks
                // again: that park finds the device fired, and its wakeup says nothing of the
                // latency (the lesson would be milliseconds, and raise the lead).
                std::thread::sleep(Duration::from_millis(3));
                nap.await;
            }
            late
        });
        let s = rt.stats().total - before;
        assert_eq!(s.timer_fires, 20, "{device:?}: {s:?}");
        let after = rt.stats().total.wakeup_lead_ns;
        assert!(
            after <= lead + late * tickless_timer::internal::LEAD_UP_NS,
            "{device:?}: learned from parks that began late: {after} > {lead} \
             ({late} byte(s) late): {s:?}"
        );
    }
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
