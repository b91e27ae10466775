//! The core's clock event device: one `timerfd` on `CLOCK_MONOTONIC`, armed at absolute
//! instants.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;

use crate::sys::cvt;

/// Nanoseconds in a second.
const NANOS_PER_SEC: u64 = 1_000_000_000;

/// The one timerfd of a core, registered with its `Reactor` and owned by
/// the timer driver: `Reactor::with_timer` hands it out once, and
/// nothing else can reach it.
///
/// The driver arms it for the earliest deadline it wants a wakeup for;
/// `Reactor::poll` reports that the descriptor became readable
/// (`Polled::timer_event`). The descriptor is never read: the
/// driver, which knows what it armed, compares its armed deadline with a clock reading to tell
/// an expiry from a stale event. Only one deadline is armed at a time: arming replaces the
/// previous one. What is armed is the driver's to remember (it is stored once, there).
///
/// # Implementation
///
/// `timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)`, armed one-shot with
/// `TFD_TIMER_ABSTIME`, so a deadline already past fires at once rather than being lost, and
/// no relative-time conversion (with its extra clock read) is needed. The expiration count is
/// never read (every timer wakeup saves a `read`): the descriptor is registered
/// edge-triggered, the kernel signals every expiration whatever the unread count, and the next
/// `timerfd_settime` resets the count anyway.
pub struct TimerFd {
    /// The timerfd, as a `File` so reading its expiration count needs no `unsafe`.
    ///
    /// # Invariant
    ///
    /// A valid timerfd for `self`'s whole life, which makes `timerfd_settime` on it infallible
    /// with the well-formed arguments `settime` builds.
    file: File,
}

impl TimerFd {
    /// Creates the timerfd, disarmed.
    pub(crate) fn new() -> io::Result<TimerFd> {
        let flags = libc::TFD_NONBLOCK | libc::TFD_CLOEXEC;
        // SAFETY: timerfd_create takes no pointers; the result is checked before use.
        let raw = cvt(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, flags) })?;
        // SAFETY: timerfd_create succeeded, so `raw` is open and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(TimerFd {
            file: File::from(fd),
        })
    }

    /// Arms the timer to fire at `deadline_mono_ns`, a `CLOCK_MONOTONIC` instant in
    /// nanoseconds (see [`now_mono_ns`](Self::now_mono_ns)), replacing any earlier arming.
    ///
    /// A deadline of 0 or in the past fires at the next poll. Each call is one syscall: the
    /// caller decides when re-programming is worth it (and counts it).
    ///
    /// # Panics
    ///
    /// If `timerfd_settime` fails, which it cannot with a valid timerfd and a normalised
    /// deadline (a broken invariant).
    pub fn arm(&self, deadline_mono_ns: u64) {
        // An all-zero it_value would disarm; 1 ns is in the past just the same.
        let deadline = deadline_mono_ns.max(1);
        self.settime(deadline, libc::TFD_TIMER_ABSTIME);
    }

    /// Disarms the timer: it will not fire until armed again. Also one syscall.
    ///
    /// # Panics
    ///
    /// As for [`arm`](Self::arm).
    pub fn disarm(&self) {
        self.settime(0, 0);
    }

    /// The current `CLOCK_MONOTONIC` time in nanoseconds.
    ///
    /// # Panics
    ///
    /// If `clock_gettime(CLOCK_MONOTONIC)` fails, which Linux guarantees it does not.
    #[inline]
    pub fn now_mono_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is valid for writes of a timespec; CLOCK_MONOTONIC always exists.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        assert!(
            rc == 0,
            "clock_gettime(CLOCK_MONOTONIC) failed: {}",
            io::Error::last_os_error()
        );
        // The monotonic clock is never negative, and tv_nsec is below one second.
        ts.tv_sec as u64 * NANOS_PER_SEC + ts.tv_nsec as u64
    }

    /// One `timerfd_settime` for an absolute (`TFD_TIMER_ABSTIME`) or zero (disarm) value.
    fn settime(&self, value_ns: u64, flags: libc::c_int) {
        let secs = value_ns / NANOS_PER_SEC;
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                // Saturates where time_t is 32 bits: a deadline past 2038 is "never" there.
                tv_sec: libc::time_t::try_from(secs).unwrap_or(libc::time_t::MAX),
                // Below one second, so it fits any tv_nsec type.
                tv_nsec: (value_ns % NANOS_PER_SEC) as _,
            },
        };
        // SAFETY: `file` is a valid timerfd (the field's invariant); `spec` is a valid
        // itimerspec for reads during the call; a null old_value is allowed.
        let rc =
            unsafe { libc::timerfd_settime(self.file.as_raw_fd(), flags, &spec, ptr::null_mut()) };
        assert!(
            rc == 0,
            "timerfd_settime failed on a valid timerfd (value {value_ns} ns, flags {flags}): {}",
            io::Error::last_os_error()
        );
    }

    /// The timerfd, for registering it with epoll.
    pub(crate) fn raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

impl fmt::Debug for TimerFd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerFd")
            .field("fd", &self.file.as_raw_fd())
            .finish()
    }
}
