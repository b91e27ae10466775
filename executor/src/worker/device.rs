//! The core's timerfd as the timer queue's clock event device.

use std::rc::Rc;

use tickless_io::TimerFd;
use tickless_timer::ClockEventDevice;

use crate::worker::clock::Clock;

/// Programs the core's timerfd with deadlines in the core's nanoseconds.
///
/// It owns the timerfd (the reactor only reports its events), so the timer queue that owns
/// this device is the only code that can program it, and the only place that knows what is
/// armed. The epoch and the paused flag are the clock's: the device asks it.
pub(crate) struct TimerFdDevice {
    /// The timerfd, registered with the core's reactor.
    timer: TimerFd,
    /// The core's clock, which converts deadlines to `CLOCK_MONOTONIC`.
    clock: Rc<Clock>,
}

impl TimerFdDevice {
    /// The device over `timer`, on `clock`'s time.
    pub(crate) fn new(timer: TimerFd, clock: Rc<Clock>) -> TimerFdDevice {
        TimerFdDevice { timer, clock }
    }
}

impl ClockEventDevice for TimerFdDevice {
    fn arm(&mut self, deadline: u64) {
        if let Some(mono) = self.clock.to_mono(deadline) {
            self.timer.arm(mono);
        }
    }

    fn disarm(&mut self) {
        if !self.clock.is_paused() {
            self.timer.disarm();
        }
    }
}
