//! Counters a timer queue and its hand-over keep.

use std::ops::{Add, AddAssign};

/// What a core's timers did, as counts. Tests assert on these, not on time.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TimerStats {
    /// Timers inserted.
    pub inserts: u64,
    /// Pending timers cancelled (cancels of stale handles are not counted).
    pub cancels: u64,
    /// Of those, timers cancelled before the queue ever placed them in the wheel: inserted
    /// while the device was armed no later than the end of their window, and cancelled before
    /// it fired (a request's timeout, typically). They cost no wheel list and no re-arm.
    pub cancels_detached: u64,
    /// Timers that expired and were handed back.
    pub fires: u64,
    /// Times the clock event device was re-programmed (armed or disarmed).
    pub rearms: u64,
    /// Device expirations that found no timer due (not counting early ones).
    pub spurious: u64,
    /// Device expirations that came ahead of the armed instant, by the wakeup lead, and found
    /// no timer due yet: the driver waits out the rest awake.
    pub early: u64,
    /// Hand-overs that had to wake the sleeping core.
    pub remote_wakes_sent: u64,
    /// Hand-overs that left the core alone (it was running, or would wake early enough).
    pub remote_wakes_avoided: u64,
    /// Of those, hand-overs that shrank the sleeping core's sleep and programmed its device
    /// instead of waking it: it wakes once, at the deadline.
    pub remote_arms: u64,
}

impl Add for TimerStats {
    type Output = TimerStats;

    fn add(self, o: TimerStats) -> TimerStats {
        TimerStats {
            inserts: self.inserts + o.inserts,
            cancels: self.cancels + o.cancels,
            cancels_detached: self.cancels_detached + o.cancels_detached,
            fires: self.fires + o.fires,
            rearms: self.rearms + o.rearms,
            spurious: self.spurious + o.spurious,
            early: self.early + o.early,
            remote_wakes_sent: self.remote_wakes_sent + o.remote_wakes_sent,
            remote_wakes_avoided: self.remote_wakes_avoided + o.remote_wakes_avoided,
            remote_arms: self.remote_arms + o.remote_arms,
        }
    }
}

impl AddAssign for TimerStats {
    fn add_assign(&mut self, o: TimerStats) {
        *self = *self + o;
    }
}
