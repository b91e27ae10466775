//! The clock event device: the one-shot alarm a core sleeps on.

/// A one-shot alarm that a [`TimerQueue`](crate::TimerQueue) programs.
///
/// In the runtime this is a `timerfd`; in tests it is a [`FakeDevice`]. The timer crate only
/// ever says "wake me at T" or "don't wake me": it never touches a file descriptor.
///
/// Each call is one re-programming of the device (one `timerfd_settime` on Linux), which is
/// what the re-arm policies exist to save.
pub trait ClockDevice {
    /// Programs the device to fire once at `deadline` (nanoseconds on the queue's clock),
    /// replacing any earlier programming. A deadline in the past fires at once.
    fn arm(&mut self, deadline: u64);

    /// Cancels any programming: the device will not fire until armed again.
    fn disarm(&mut self);
}

/// A device that only counts: for tests of the re-arm policies.
///
/// # Examples
///
/// ```
/// use tickless_timer::{ClockDevice, FakeDevice};
///
/// let mut dev = FakeDevice::default();
/// dev.arm(100);
/// dev.disarm();
/// assert_eq!((dev.arms, dev.disarms, dev.armed), (1, 1, None));
/// ```
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FakeDevice {
    /// The deadline the device is programmed for, if any.
    pub armed: Option<u64>,
    /// How many times [`arm`](ClockDevice::arm) was called.
    pub arms: u64,
    /// How many times [`disarm`](ClockDevice::disarm) was called.
    pub disarms: u64,
}

impl FakeDevice {
    /// Every re-programming, arm or disarm.
    pub fn reprograms(&self) -> u64 {
        self.arms + self.disarms
    }
}

impl ClockDevice for FakeDevice {
    fn arm(&mut self, deadline: u64) {
        self.armed = Some(deadline);
        self.arms += 1;
    }

    fn disarm(&mut self) {
        self.armed = None;
        self.disarms += 1;
    }
}
