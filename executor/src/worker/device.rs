//! The core's clock event device: its timerfd, or its epoll wait's own timeout.

use std::rc::Rc;
use std::sync::Arc;

use tickless_io::internal::TimerFd;
use tickless_timer::internal::RemoteDevice;
use tickless_timer::ClockDevice as ClockDeviceTrait;

use crate::worker::clock::{Clock, MonoMap};
use crate::worker::shared::Shared;

/// What a core sleeps on until its next timer: see
/// [`Builder::clock_device`](crate::Builder::clock_device).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::{Builder, ClockDevice};
///
/// assert_eq!(ClockDevice::default(), ClockDevice::TimerFd);
/// let rt = Builder::new().cores(1).clock_device(ClockDevice::Epoll).build()?;
/// rt.block_on(tickless::time::sleep(Duration::from_micros(100))); // no timerfd to program
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockDevice {
    /// A timerfd per core, programmed with `timerfd_settime` (a system call each time the
    /// re-arm policy decides to) and waited on with `epoll_wait`.
    #[default]
    TimerFd,
    /// No timerfd: the core's `epoll_pwait2` (Linux 5.11) times out at the deadline, given
    /// in nanoseconds. Arming is free (the queue remembers the deadline; the core reads the
    /// clock once before it sleeps, and once after each poll while a deadline is armed), so
    /// the re-arm policy only decides how often the deadline is recomputed.
    ///
    /// The kernel ends an epoll wait anywhere in a window after its timeout, as long as the
    /// larger of the thread's timer slack and a thousandth of the timeout (a two-hundredth on
    /// a niced thread, at most 100 ms, none on a real-time one): a 1 s wait given as such ends
    /// up to a millisecond late, and on an idle machine it does. So the core's threads get a
    /// kernel timer slack of 1 ns while they run the runtime, and the core gives the kernel a
    /// timeout shortened by the thousandth
    /// ([`Reactor::poll_precise`](tickless_io::internal::Reactor::poll_precise)): the window ends at
    /// the deadline, and the timer is as late as the wakeup's latency, as on the timerfd.
    /// When another interrupt ends the wait within the window, before the deadline, the core
    /// parks again for the rest, a wait a thousandth as long: an extra park per timer at
    /// most (1.02 to 1.82 parks per exact 1 s sleep, 1.02 to 1.05 per 100 ms one, on a busy
    /// 2-core virtual machine; `benches/examples/device_lateness.rs`).
    ///
    /// Where the thread cannot use `epoll_pwait2` (no such call before Linux 5.11, `ENOSYS`;
    /// a seccomp filter older than it, `EPERM`), the core uses [`TimerFd`](Self::TimerFd).
    Epoll,
}

/// Programs the core's timerfd with deadlines in the core's nanoseconds, or, without one,
/// does nothing: the queue's armed deadline is what the core's epoll wait times out at.
///
/// It owns the timerfd (the reactor only reports its events), so the timer queue that owns
/// this device is the only code that can program it, and the only place that knows what is
/// armed. The epoch and the paused flag are the clock's: the device asks it.
pub(crate) struct Device {
    /// The timerfd, registered with the core's reactor; `None` for [`ClockDevice::Epoll`].
    /// Shared with the remote device installed in the inbox (`RemoteTimer`).
    timer: Option<Arc<TimerFd>>,
    /// The core's clock, which converts deadlines to `CLOCK_MONOTONIC`.
    clock: Rc<Clock>,
    /// Where the lock the timerfd is programmed under lives: other threads program it too,
    /// while the core sleeps, when the timer they hand over shrinks its sleep
    /// (`tickless_timer::internal::RemoteArming`).
    shared: Arc<Shared>,
}

impl Device {
    /// The device over `timer` (`None`: the epoll wait's timeout), on `clock`'s time, with the
    /// timerfd offered to threads that hand `shared`'s core a timer.
    pub(crate) fn new(timer: Option<TimerFd>, clock: Rc<Clock>, shared: Arc<Shared>) -> Device {
        let device = Device {
            timer: timer.map(Arc::new),
            clock,
            shared,
        };
        device.allow_remote();
        device
    }

    /// Which device this is.
    pub(crate) fn kind(&self) -> ClockDevice {
        match self.timer {
            Some(_) => ClockDevice::TimerFd,
            None => ClockDevice::Epoll,
        }
    }

    /// Publishes the wakeup lead for threads that program the timerfd.
    pub(crate) fn publish_lead(&self, ns: u64) {
        self.shared.inbox.remote().set_lead(ns);
    }

    /// Whether another thread programmed the timerfd since the core last did (or looked).
    pub(crate) fn touched(&self) -> bool {
        self.timer.is_some() && self.shared.inbox.remote().take_touched()
    }

    /// Lets other threads program the timerfd while the core sleeps, converting deadlines as
    /// the clock does now; or stops them where they cannot (no timerfd; paused time, which
    /// never arms it). Called again when the clock pauses or resumes, so it also publishes
    /// whether the clock is paused (`Shared::keeps_work_while_paused`, for a wake that would
    /// move a task).
    pub(crate) fn allow_remote(&self) {
        self.shared.set_paused(self.clock.is_paused());
        let remote = self
            .timer
            .clone()
            .zip(self.clock.mono_map())
            .map(|(timer, map)| Box::new(RemoteTimer { timer, map }) as Box<dyn RemoteDevice>);
        self.shared.inbox.remote().install(remote);
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // The timerfd closes with the core, not with the last handle to its shared half.
        self.shared.inbox.remote().install(None);
    }
}

impl ClockDeviceTrait for Device {
    fn arm(&mut self, deadline: u64) {
        if let (Some(timer), Some(mono)) = (&self.timer, self.clock.to_mono(deadline)) {
            self.shared.inbox.remote().arm_local(|| timer.arm(mono));
        }
    }

    fn disarm(&mut self) {
        if let Some(timer) = &self.timer {
            if !self.clock.is_paused() {
                self.shared.inbox.remote().arm_local(|| timer.disarm());
            }
        }
    }
}

/// The timerfd as a thread handing a timer over programs it.
struct RemoteTimer {
    timer: Arc<TimerFd>,
    /// The clock's deadline-to-`CLOCK_MONOTONIC` conversion when it was installed.
    map: MonoMap,
}

impl RemoteDevice for RemoteTimer {
    fn arm_remote(&self, at: u64) {
        self.timer.arm(self.map.mono(at));
    }
}
