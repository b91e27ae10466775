//! The core's timerfd: absolute arming, consumption by poll, disarming, counters.

use std::io;
use std::time::Duration;

use tickless_io::{Reactor, TimerFd};

/// Blocks until the reactor reports the timer fired, tolerating unrelated wakeups.
fn poll_until_fired(reactor: &Reactor) -> io::Result<()> {
    while !reactor.poll(None)?.timer_fired {}
    Ok(())
}

#[test]
fn a_deadline_in_the_past_fires_once_and_is_consumed() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let now = TimerFd::now_mono_ns();
    reactor.timer().arm(now - 1);
    assert_eq!(reactor.timer().armed(), Some(now - 1));

    poll_until_fired(&reactor)?;
    assert_eq!(reactor.timer().armed(), None);
    // The expiration was read by the poll above: it is not reported again.
    let again = reactor.poll(Some(Duration::ZERO))?;
    assert!(!again.timer_fired, "{again:?}");

    let stats = reactor.stats();
    assert_eq!((stats.timerfd_arms, stats.timerfd_fires), (1, 1));
    Ok(())
}

#[test]
fn a_zero_deadline_still_fires() -> io::Result<()> {
    let reactor = Reactor::new()?;
    reactor.timer().arm(0);
    assert_eq!(reactor.timer().armed(), Some(1));
    poll_until_fired(&reactor)?;
    assert_eq!(reactor.stats().timerfd_fires, 1);
    Ok(())
}

#[test]
fn rearming_replaces_the_deadline() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let hour = 3_600 * 1_000_000_000;
    reactor.timer().arm(TimerFd::now_mono_ns() + hour);
    reactor.timer().arm(1);
    poll_until_fired(&reactor)?;
    let stats = reactor.stats();
    assert_eq!((stats.timerfd_arms, stats.timerfd_fires), (2, 1));
    Ok(())
}

#[test]
fn a_disarmed_timer_does_not_fire() -> io::Result<()> {
    let reactor = Reactor::new()?;
    let timer = reactor.timer();
    timer.arm(TimerFd::now_mono_ns() + 3_600 * 1_000_000_000);
    timer.disarm();
    assert_eq!(timer.armed(), None);
    assert!(!reactor.poll(Some(Duration::ZERO))?.timer_fired);

    // Even an arming that has already expired is forgotten: disarming resets the count.
    timer.arm(1);
    timer.disarm();
    assert!(!reactor.poll(Some(Duration::ZERO))?.timer_fired);

    let stats = reactor.stats();
    assert_eq!(
        (
            stats.timerfd_arms,
            stats.timerfd_disarms,
            stats.timerfd_fires
        ),
        (2, 2, 0)
    );
    Ok(())
}

#[test]
fn the_monotonic_clock_does_not_go_back() {
    let a = TimerFd::now_mono_ns();
    let b = TimerFd::now_mono_ns();
    assert!(a > 0 && b >= a);
}
