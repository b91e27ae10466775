//! The core's timerfd: absolute arming, events reported by poll, disarming.

use std::io;
use std::time::Duration;

use tickless_io::internal::{Reactor, TimerFd};

/// Blocks until the reactor reports an event of the timerfd, tolerating unrelated wakeups.
fn poll_until_timer_event(reactor: &Reactor) -> io::Result<()> {
    while !reactor.poll(None)?.timer_event {}
    Ok(())
}

#[test]
fn a_deadline_in_the_past_fires_once() -> io::Result<()> {
    let (reactor, timer) = Reactor::with_timer()?;
    timer.arm(TimerFd::now_mono_ns() - 1);
    poll_until_timer_event(&reactor)?;
    // Edge-triggered and never read: the expiration is not reported again.
    let again = reactor.poll(Some(Duration::ZERO))?;
    assert!(!again.timer_event, "{again:?}");
    assert_eq!(reactor.stats().timer_events, 1);
    Ok(())
}

#[test]
fn a_zero_deadline_still_fires() -> io::Result<()> {
    let (reactor, timer) = Reactor::with_timer()?;
    timer.arm(0);
    poll_until_timer_event(&reactor)?;
    assert_eq!(reactor.stats().timer_events, 1);
    Ok(())
}

#[test]
fn rearming_replaces_the_deadline() -> io::Result<()> {
    let (reactor, timer) = Reactor::with_timer()?;
    let hour = 3_600 * 1_000_000_000;
    timer.arm(TimerFd::now_mono_ns() + hour);
    timer.arm(1);
    poll_until_timer_event(&reactor)?;
    // A second expiry after re-arming is a new edge.
    timer.arm(1);
    poll_until_timer_event(&reactor)?;
    assert_eq!(reactor.stats().timer_events, 2);
    Ok(())
}

#[test]
fn a_disarmed_timer_does_not_fire() -> io::Result<()> {
    let (reactor, timer) = Reactor::with_timer()?;
    timer.arm(TimerFd::now_mono_ns() + 3_600 * 1_000_000_000);
    timer.disarm();
    assert!(!reactor.poll(Some(Duration::ZERO))?.timer_event);
    assert_eq!(reactor.stats().timer_events, 0);
    Ok(())
}

#[test]
fn a_reactor_without_a_timer_reports_no_timer_event() -> io::Result<()> {
    let reactor = Reactor::new()?;
    assert!(!reactor.poll(Some(Duration::ZERO))?.timer_event);
    Ok(())
}

#[test]
fn the_monotonic_clock_does_not_go_back() {
    let a = TimerFd::now_mono_ns();
    let b = TimerFd::now_mono_ns();
    assert!(a > 0 && b >= a);
}
