//! The handle other threads use to wake a core blocked in `epoll_wait`: an eventfd.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use crate::sys::cvt;

/// Wakes one core's `Reactor` out of a blocking
/// `poll`, from any thread.
///
/// Cloning is cheap (one reference count). Unparking a core that is not blocked makes its next
/// poll return at once with `unparked == true`; many unparks before that poll cost one wakeup.
/// Deciding *whether* a wake is needed (is the core asleep, is the new deadline earlier) is the
/// caller's job: each `unpark` is a `write(2)`.
///
/// # Implementation
///
/// A non-blocking, close-on-exec eventfd registered for reading. `unpark` adds 1 to its counter;
/// the reactor reads it back to zero when the event arrives. The descriptor is shared through an
/// `Arc`, so an `Unparker` that outlives its reactor writes harmlessly into an unwatched eventfd.
#[derive(Clone)]
pub struct Unparker {
    /// The eventfd, as a `File` so reads and writes need no `unsafe`.
    eventfd: Arc<File>,
}

impl Unparker {
    /// Creates the eventfd, with a zero counter.
    pub(crate) fn new() -> io::Result<Unparker> {
        let flags = libc::EFD_NONBLOCK | libc::EFD_CLOEXEC;
        // SAFETY: eventfd takes no pointers; the result is checked before use.
        let raw = cvt(unsafe { libc::eventfd(0, flags) })?;
        // SAFETY: eventfd succeeded, so `raw` is open and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(Unparker {
            eventfd: Arc::new(File::from(fd)),
        })
    }

    /// Makes the reactor's current or next `poll` return, reporting
    /// `unparked == true`.
    ///
    /// # Panics
    ///
    /// If writing the eventfd fails with anything but `WouldBlock` (the counter is saturated,
    /// so a wakeup is pending anyway) or `Interrupted` (retried): an eventfd write of 1 has no
    /// other failure (a broken invariant).
    pub fn unpark(&self) {
        loop {
            match (&*self.eventfd).write(&1u64.to_ne_bytes()) {
                Ok(_) => return,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => panic!("writing the unparker's eventfd failed: {e}"),
            }
        }
    }

    /// The eventfd, for registering it with epoll.
    pub(crate) fn raw_fd(&self) -> RawFd {
        self.eventfd.as_raw_fd()
    }

    /// Resets the counter to zero; true if it was non-zero (someone unparked).
    ///
    /// # Panics
    ///
    /// On a read error other than `WouldBlock` or `Interrupted` (a broken invariant).
    pub(crate) fn drain(&self) -> bool {
        let mut count = [0u8; 8];
        loop {
            match (&*self.eventfd).read(&mut count) {
                Ok(8) => return true,
                Ok(n) => panic!("eventfd read returned {n} bytes, expected 8"),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => panic!("reading the unparker's eventfd failed: {e}"),
            }
        }
    }
}

impl fmt::Debug for Unparker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unparker")
            .field("eventfd", &self.eventfd.as_raw_fd())
            .finish()
    }
}
