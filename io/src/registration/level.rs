//! Level-triggered interest: what a byte stream's registration keeps armed in the epoll set.

use std::cell::Cell;
use std::io;
use std::os::fd::RawFd;

use crate::ready::{Direction, Ready};
use crate::stats::SharedCounters;

/// The epoll set a registration's reactor reads (its home's duplicate descriptor, open as long
/// as the home), and the counters its `epoll_ctl` calls go to: what a level-triggered
/// registration changes, from whichever thread holds its home's key.
#[derive(Clone, Copy)]
pub(crate) struct EpollSet<'a> {
    /// The epoll descriptor.
    pub(crate) fd: RawFd,
    /// The reactor's shared counters.
    pub(crate) counters: &'a SharedCounters,
}

/// The interest a level-triggered registration has in the epoll set, changed only when a task
/// waits in a direction that is not armed, or an event finds nobody waiting in an armed one.
///
/// Level-triggered, epoll reports a readable descriptor at every `epoll_wait` until it is
/// drained, so a read that filled its buffer can clear read readiness and let the next wait
/// say whether more is there, instead of paying a read that returns `WouldBlock`. The price is
/// that a direction nobody waits in would be reported at every poll: the reactor disarms it
/// when an event finds no waiter (libuv's approach), and the next wait arms it again. A
/// descriptor with nothing armed leaves the epoll set, because hang-ups and errors are reported
/// whatever the interest.
pub(crate) struct Level {
    /// The registered descriptor.
    fd: RawFd,
    /// The epoll token (the reactor's slab key and generation).
    data: u64,
    /// The directions registered for ([`Ready::READABLE`], [`Ready::WRITABLE`]).
    interest: Ready,
    /// The directions armed in the epoll set now.
    armed: Cell<Ready>,
    /// Whether the descriptor is in the epoll set at all.
    pub(super) in_set: Cell<bool>,
}

impl Level {
    /// Adds `fd` to the epoll set `epfd` level-triggered under token `data`, for `interest`,
    /// if `join_now`: read interest armed at once, write interest only once a task waits to
    /// write (a writable descriptor would otherwise be reported at every poll). Otherwise the
    /// descriptor joins the set at the first wait (a registration that moved here, tried
    /// before it waits: no `epoll_ctl` here when it never waits).
    pub(crate) fn add(
        epfd: RawFd,
        fd: RawFd,
        data: u64,
        interest: mio::Interest,
        join_now: bool,
        counters: &SharedCounters,
    ) -> io::Result<Level> {
        let mut wanted = Ready::EMPTY;
        if interest.is_readable() {
            wanted |= Ready::READABLE;
        }
        if interest.is_writable() {
            wanted |= Ready::WRITABLE;
        }
        let armed = if join_now {
            wanted.intersection(Ready::READABLE)
        } else {
            Ready::EMPTY
        };
        if join_now {
            counters.epoll_ctls.incr();
            epoll_ctl(
                epfd,
                libc::EPOLL_CTL_ADD,
                fd,
                Level::epoll_events(armed),
                data,
            )?;
        }
        Ok(Level {
            fd,
            data,
            interest: wanted,
            armed: Cell::new(armed),
            in_set: Cell::new(join_now),
        })
    }

    /// The epoll event mask that arms `dirs`, level-triggered.
    fn epoll_events(dirs: Ready) -> u32 {
        let mut events = 0;
        if dirs.is_readable() {
            events |= (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
        }
        if dirs.is_writable() {
            events |= libc::EPOLLOUT as u32;
        }
        events
    }

    /// The readiness bit naming `dir` in `interest` and `armed`.
    fn bit(dir: Direction) -> Ready {
        match dir {
            Direction::Read => Ready::READABLE,
            Direction::Write => Ready::WRITABLE,
        }
    }

    /// Makes sure an event will come for a task waiting in `dir`: arms `dir` (if it is in the
    /// interest) and puts the descriptor back in the set if it left it. One `epoll_ctl` when
    /// something changes, none otherwise. `Some(true)` if it put the descriptor back in the set
    /// (`EPOLL_CTL_ADD`), `None` if epoll refused (no event will come).
    pub(super) fn arm(&self, dir: Direction, set: EpollSet<'_>) -> Option<bool> {
        let armed = self.armed.get();
        let want = armed | Level::bit(dir).intersection(self.interest);
        if want == armed && self.in_set.get() {
            return Some(false);
        }
        let op = if self.in_set.get() {
            libc::EPOLL_CTL_MOD
        } else {
            libc::EPOLL_CTL_ADD
        };
        set.counters.epoll_ctls.incr();
        match epoll_ctl(set.fd, op, self.fd, Level::epoll_events(want), self.data) {
            Ok(()) => {
                self.armed.set(want);
                self.in_set.set(true);
                Some(op == libc::EPOLL_CTL_ADD)
            }
            Err(_) => None,
        }
    }

    /// After an event reporting `ready`: disarms the directions it concerns that nobody waits
    /// in (`waiting`: the directions with waiters), so that they stop coming at every poll,
    /// and takes the descriptor out of the set once nothing is armed. An event whose bits name
    /// no direction counts for both.
    ///
    /// Errors are ignored: they can only mean the descriptor has left the set already (its
    /// registration was dropped on another thread, which removed it; the reactor frees the slot
    /// at this poll or the next).
    #[inline]
    pub(super) fn settle(&self, ready: Ready, waiting: Ready, set: EpollSet<'_>) {
        let mut idle = Ready::EMPTY;
        for dir in [Direction::Read, Direction::Write] {
            let concerned = ready.is_empty() || !ready.intersection(dir.mask()).is_empty();
            if concerned && !waiting.contains(Level::bit(dir)) {
                idle |= Level::bit(dir);
            }
        }
        let armed = self.armed.get();
        let keep = armed.difference(idle);
        if !self.in_set.get() || (keep == armed && !keep.is_empty()) {
            return;
        }
        self.rearm(keep, set);
    }

    /// [`settle`](Self::settle)'s change of the armed interest to `keep` (out of the set if
    /// empty): a system call, out of line so that the usual event, which changes nothing,
    /// costs its caller no call.
    #[inline(never)]
    fn rearm(&self, keep: Ready, set: EpollSet<'_>) {
        set.counters.epoll_ctls.incr();
        if keep.is_empty() {
            let _gone = epoll_ctl(set.fd, libc::EPOLL_CTL_DEL, self.fd, 0, 0);
            self.in_set.set(false);
        } else {
            let _gone = epoll_ctl(
                set.fd,
                libc::EPOLL_CTL_MOD,
                self.fd,
                Level::epoll_events(keep),
                self.data,
            );
        }
        self.armed.set(keep);
    }

    /// Takes the descriptor out of the set if it is in, whatever is armed: the registration
    /// moved away from this reactor (see `Registration`'s protocol).
    pub(super) fn leave(&self, set: EpollSet<'_>) {
        if self.in_set.get() {
            set.counters.epoll_ctls.incr();
            let _gone = epoll_ctl(set.fd, libc::EPOLL_CTL_DEL, self.fd, 0, 0);
            self.in_set.set(false);
            self.armed.set(Ready::EMPTY);
        }
    }
}

/// One `epoll_ctl(epfd, op, fd, {events, data})`.
fn epoll_ctl(epfd: RawFd, op: libc::c_int, fd: RawFd, events: u32, data: u64) -> io::Result<()> {
    let mut event = libc::epoll_event { events, u64: data };
    // SAFETY: `event` is an initialised `epoll_event` that lives across the call, and the
    // kernel only reads it (`EPOLL_CTL_DEL` ignores it). The descriptors are plain integers to
    // the kernel: a closed or foreign one makes the call fail with `EBADF`/`ENOENT`, which the
    // callers handle; no memory is shared with the kernel beyond the call.
    let rc = unsafe { libc::epoll_ctl(epfd, op, fd, &mut event) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
