//! The core's timerfd as the timer queue's clock event device.

use std::rc::Rc;

use tickless_io::Reactor;
use tickless_timer::ClockEventDevice;

/// Programs the reactor's timerfd with deadlines in the core's nanoseconds.
pub(crate) struct TimerFdDevice {
    /// The reactor that owns the timerfd.
    pub(crate) reactor: Rc<Reactor>,
    /// `CLOCK_MONOTONIC` at the core clock's epoch.
    pub(crate) epoch_mono: u64,
    /// Paused time never arms the real timerfd: the loop advances the clock instead.
    pub(crate) paused: bool,
}

impl ClockEventDevice for TimerFdDevice {
    fn arm(&mut self, deadline: u64) {
        if !self.paused {
            self.reactor
                .timer()
                .arm(self.epoch_mono.saturating_add(deadline));
        }
    }

    fn disarm(&mut self) {
        if !self.paused {
            self.reactor.timer().disarm();
        }
    }
}
