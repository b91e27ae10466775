//! Readiness bits, the two directions a task can wait in, and the snapshot a wait returns.

use std::fmt;
use std::ops::{BitOr, BitOrAssign};

/// A set of readiness bits for one registration.
///
/// The reactor ORs in what each epoll event reports; I/O types clear bits when a syscall says
/// `WouldBlock`. The closed bits mean the condition is permanent, so a short read never clears
/// them (see `Registration::clear_readiness`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Ready(u8);

impl Ready {
    /// No readiness.
    pub const EMPTY: Ready = Ready(0);
    /// A read may make progress.
    pub const READABLE: Ready = Ready(1);
    /// A write may make progress.
    pub const WRITABLE: Ready = Ready(1 << 1);
    /// The read side is closed: reads return end of file (or an error) from now on.
    pub const READ_CLOSED: Ready = Ready(1 << 2);
    /// The write side is closed: writes fail from now on.
    pub const WRITE_CLOSED: Ready = Ready(1 << 3);
    /// The descriptor has a pending error; the next syscall returns it.
    pub const ERROR: Ready = Ready(1 << 4);
    /// Both closed bits: the part of readiness a short read leaves in place.
    pub const ALL_CLOSED: Ready = Ready(Self::READ_CLOSED.0 | Self::WRITE_CLOSED.0);

    /// The readiness an epoll event reports.
    pub(crate) fn from_epoll(bits: u32) -> Ready {
        // The bits as mio reads them (its `Event::is_*`), so that readiness means the same
        // whichever way it was fetched.
        let has = |flag: libc::c_int| bits & flag as u32 != 0;
        let mut ready = Ready::EMPTY;
        if has(libc::EPOLLIN) || has(libc::EPOLLPRI) {
            ready |= Ready::READABLE;
        }
        if has(libc::EPOLLOUT) {
            ready |= Ready::WRITABLE;
        }
        if has(libc::EPOLLHUP) || (has(libc::EPOLLIN) && has(libc::EPOLLRDHUP)) {
            ready |= Ready::READ_CLOSED;
        }
        if has(libc::EPOLLHUP)
            || (has(libc::EPOLLOUT) && has(libc::EPOLLERR))
            || bits == libc::EPOLLERR as u32
        {
            ready |= Ready::WRITE_CLOSED;
        }
        if has(libc::EPOLLERR) {
            ready |= Ready::ERROR;
        }
        ready
    }

    /// The bits, for an atomic word that keeps them.
    #[inline(always)]
    pub(crate) const fn bits(self) -> u8 {
        self.0
    }

    /// The readiness of `bits` read back from [`bits`](Self::bits).
    #[inline(always)]
    pub(crate) const fn from_bits(bits: u8) -> Ready {
        Ready(bits)
    }

    /// True if no bit is set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// True if every bit of `other` is set in `self`.
    pub fn contains(self, other: Ready) -> bool {
        self.0 & other.0 == other.0
    }

    /// True if [`READABLE`](Self::READABLE) is set.
    pub fn is_readable(self) -> bool {
        self.contains(Ready::READABLE)
    }

    /// True if [`WRITABLE`](Self::WRITABLE) is set.
    pub fn is_writable(self) -> bool {
        self.contains(Ready::WRITABLE)
    }

    /// True if [`READ_CLOSED`](Self::READ_CLOSED) is set.
    pub fn is_read_closed(self) -> bool {
        self.contains(Ready::READ_CLOSED)
    }

    /// True if [`WRITE_CLOSED`](Self::WRITE_CLOSED) is set.
    pub fn is_write_closed(self) -> bool {
        self.contains(Ready::WRITE_CLOSED)
    }

    /// True if [`ERROR`](Self::ERROR) is set.
    pub fn is_error(self) -> bool {
        self.contains(Ready::ERROR)
    }

    /// The bits set in both.
    pub fn intersection(self, other: Ready) -> Ready {
        Ready(self.0 & other.0)
    }

    /// The bits of `self` not set in `other`.
    pub fn difference(self, other: Ready) -> Ready {
        Ready(self.0 & !other.0)
    }
}

impl BitOr for Ready {
    type Output = Ready;

    fn bitor(self, rhs: Ready) -> Ready {
        Ready(self.0 | rhs.0)
    }
}

impl BitOrAssign for Ready {
    fn bitor_assign(&mut self, rhs: Ready) {
        self.0 |= rhs.0;
    }
}

impl fmt::Debug for Ready {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (Ready::READABLE, "READABLE"),
            (Ready::WRITABLE, "WRITABLE"),
            (Ready::READ_CLOSED, "READ_CLOSED"),
            (Ready::WRITE_CLOSED, "WRITE_CLOSED"),
            (Ready::ERROR, "ERROR"),
        ];
        let mut set = f.debug_set();
        for (bit, name) in names {
            if self.contains(bit) {
                set.entry(&format_args!("{name}"));
            }
        }
        set.finish()
    }
}

/// Which side of a registration a task waits on; each has its own waker slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Reads, accepts and receives.
    Read,
    /// Writes, sends and connects.
    Write,
}

impl Direction {
    /// The readiness bits that let a task waiting in this direction make progress.
    ///
    /// Closed and error bits are included: the syscall then reports end of file or the error,
    /// which is progress too.
    pub fn mask(self) -> Ready {
        match self {
            Direction::Read => Ready::READABLE | Ready::READ_CLOSED | Ready::ERROR,
            Direction::Write => Ready::WRITABLE | Ready::WRITE_CLOSED | Ready::ERROR,
        }
    }
}

/// What a readiness wait observed: the bits, and the registration's tick when it saw them.
///
/// Handing it back to `Registration::clear_readiness`
/// clears those bits only if no event arrived since: the tick is how an event that lands between
/// a `WouldBlock` and the clear is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadyEvent {
    /// The registration's event count when this readiness was read.
    pub(crate) tick: u32,
    /// The bits observed, already masked to the direction waited on.
    pub(crate) ready: Ready,
}

impl ReadyEvent {
    /// The readiness bits observed.
    pub fn ready(&self) -> Ready {
        self.ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_share_only_error() {
        let both = Direction::Read.mask().intersection(Direction::Write.mask());
        assert_eq!(both, Ready::ERROR);
    }

    #[test]
    fn epoll_bits_read_as_mio_reads_them() {
        let bits = |flags: &[libc::c_int]| flags.iter().fold(0u32, |b, &f| b | f as u32);
        let r = |flags: &[libc::c_int]| Ready::from_epoll(bits(flags));
        assert_eq!(r(&[]), Ready::EMPTY);
        assert_eq!(r(&[libc::EPOLLIN]), Ready::READABLE);
        assert_eq!(r(&[libc::EPOLLPRI]), Ready::READABLE);
        assert_eq!(r(&[libc::EPOLLOUT]), Ready::WRITABLE);
        // A peer's shutdown of its write side: readable, and read-closed.
        assert_eq!(
            r(&[libc::EPOLLIN, libc::EPOLLRDHUP]),
            Ready::READABLE | Ready::READ_CLOSED
        );
        // RDHUP alone (no IN) is not read-closed for mio.
        assert_eq!(r(&[libc::EPOLLRDHUP]), Ready::EMPTY);
        // A hang-up closes both sides.
        assert_eq!(r(&[libc::EPOLLHUP]), Ready::ALL_CLOSED);
        // A reset: error, and write-closed (with OUT), or write-closed by ERR alone.
        assert_eq!(
            r(&[libc::EPOLLOUT, libc::EPOLLERR]),
            Ready::WRITABLE | Ready::WRITE_CLOSED | Ready::ERROR
        );
        assert_eq!(r(&[libc::EPOLLERR]), Ready::WRITE_CLOSED | Ready::ERROR);
        assert_eq!(
            r(&[libc::EPOLLIN, libc::EPOLLERR]),
            Ready::READABLE | Ready::ERROR
        );
    }

    #[test]
    fn difference_keeps_closed_bits() {
        let r = Ready::READABLE | Ready::READ_CLOSED;
        let cleared = r.difference(r.difference(Ready::ALL_CLOSED));
        assert_eq!(cleared, Ready::READ_CLOSED);
        assert_eq!(format!("{cleared:?}"), "{READ_CLOSED}");
    }
}
