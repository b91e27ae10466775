//! One descriptor's registration: readiness, wakers, and the try-then-wait discipline that
//! every I/O type follows.
//!
//! [`Registration`] here is the public face: its try-then-wait loops. The concepts behind it
//! have a file each:
//!
//! - `bound`: binding each direction to the reactors that poll it, at the first use, moving it
//!   where it is polled or, polled from several cores, keeping it registered with each (its
//!   `# Protocol`), the check at every use, and the drop, on the reactor's thread or elsewhere;
//! - `scheduled`: [`ScheduledIo`], the state shared with the reactor's slab: readiness, its
//!   tick, and the clears that a `WouldBlock` makes;
//! - `waiters`: the tasks waiting in each direction;
//! - `level`: a level-triggered registration's interest, and the `epoll_ctl` calls that keep
//!   it to what tasks wait for.

mod bound;
mod level;
mod scheduled;
mod waiters;

use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::task::{ready, Context, Poll};

use crate::home::Home;
use crate::ready::{Direction, Ready, ReadyEvent};

#[cfg(loom)]
use loom::sync::atomic::AtomicBool;
#[cfg(not(loom))]
use std::sync::atomic::AtomicBool;

use bound::{Bindings, Bound};
pub(crate) use level::{EpollSet, Level};
pub(crate) use scheduled::ScheduledIo;

/// A descriptor registered with a core's [`Reactor`](crate::reactor::Reactor): the building
/// block of every I/O type.
///
/// It holds the descriptor's readiness and a waker list per [`Direction`], and deregisters the
/// descriptor when dropped. It does not own the descriptor.
///
/// I/O follows the edge-triggered discipline: try the syscall first, and wait for readiness only
/// when it says `WouldBlock`, clearing the readiness it disproved. [`poll_io`](Self::poll_io)
/// does all of that, retrying `Interrupted`; the I/O types of this crate are thin wrappers
/// around it.
///
/// # Threads
///
/// Each direction of a registration is driven by the core that polls it: the crate's I/O types
/// make theirs unbound, and the first poll, wherever a reactor is current, registers the
/// descriptor with that reactor for both directions. Polled later where another reactor is
/// current, that direction registers there too, and then:
///
/// - it *moves* there when no task waits in it where it was (the task that owns it moved, or
///   was spawned on another core after the stream's first use, or a split stream's halves run
///   on two cores): the descriptor leaves the old reactor's epoll set once no direction is left
///   there (two `epoll_ctl` calls, counted in `IoStats::rebinds` of the reactor it joins; the
///   tasks still waiting on the old core are woken to poll again). So a stream accepted on one
///   core and handed to a task on another is driven by the other, and the two halves of a
///   split stream wait each on the core that polls it;
/// - it *stays* registered with both when a task waits in it on the core it was on, or when it
///   comes back to a core it left: it is polled from several cores (an `Arc<UdpSocket>` with a
///   `recv` loop on each, as tokio shares a socket). From then on it stays registered with
///   every core where it is polled, the descriptor in each of their epoll sets, each core's
///   waiters woken by its own reactor's events (an event reaches every core that registered
///   it, and the tasks there that find nothing to read wait again). So it costs one
///   registration a core, whatever the traffic, instead of a move at almost every use.
///
/// What a registration keeps grows with the cores that poll it, never with its traffic: one
/// binding (about 200 bytes, with its state) for each core it is registered with, and at most
/// two for each core it left. ([`new`](Self::new) and [`new_in`](Self::new_in) register at
/// once, with the current or the given reactor.) The same-core path is one load and one
/// compare with a thread-local, as before moves existed; a core other than the last one to
/// register it walks the list of its bindings (a few loads, no lock).
///
/// It is `Send` and `Sync`, so that the types built on it can live in `Send` futures and be
/// shared by tasks. Once the reactor a direction is bound to is gone (its runtime was shut down
/// or dropped), every use in that direction returns an error instead of waiting for an event
/// that will never come; used where no reactor is current, it returns an error. It may be
/// dropped anywhere: away from its reactor the descriptor leaves the epoll set at once and the
/// reactor frees the rest at its next poll.
///
/// # Invariant
///
/// The descriptor stays open, and keeps its number, until the registration is dropped: the drop
/// deregisters it by number. [`AsyncFd`](crate::AsyncFd) upholds this by dropping its
/// registration before the value that owns the descriptor.
pub struct Registration {
    /// The registered descriptor (see the invariant above).
    fd: RawFd,
    /// The directions it is registered for.
    interest: mio::Interest,
    /// Level-triggered (the byte streams, see [`Level`]) rather than edge-triggered.
    level: bool,
    /// Shared by the two halves of a split stream: a direction that moves leaves the other
    /// where it is (`bound`'s protocol, step 7).
    split: AtomicBool,
    /// Where each direction is bound, and every binding it made (see `bound`'s protocol).
    /// Reached through [`here`](Self::here) only, which checks the reactor is current.
    bindings: Bindings,
}

impl Registration {
    /// The readiness recorded right now by the reactor current here, in the directions bound
    /// to it; empty in the others (before the first use, or driven by another core).
    pub fn readiness(&self) -> Ready {
        let mut ready = Ready::EMPTY;
        for dir in [Direction::Read, Direction::Write] {
            if let Some(b) = self.here(dir) {
                ready |= b.io.readiness().intersection(dir.mask());
            }
        }
        ready
    }

    /// Ready once `dir` has readiness; otherwise registers the task's waker.
    ///
    /// Every task that polls while not ready is woken by the next event in that direction.
    ///
    /// # Errors
    ///
    /// As every method that uses the registration: first used where no reactor is current,
    /// bound to a reactor that is gone, or refused by epoll at its first use.
    pub fn poll_ready(&self, cx: &mut Context<'_>, dir: Direction) -> Poll<io::Result<ReadyEvent>> {
        let b = self.io(dir)?;
        self.poll_ready_in(b, cx, dir).map(Ok)
    }

    /// [`poll_ready`](Self::poll_ready) for [`Direction::Read`].
    ///
    /// # Errors
    ///
    /// As [`poll_ready`](Self::poll_ready).
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<ReadyEvent>> {
        self.poll_ready(cx, Direction::Read)
    }

    /// [`poll_ready`](Self::poll_ready) for [`Direction::Write`].
    ///
    /// # Errors
    ///
    /// As [`poll_ready`](Self::poll_ready).
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<ReadyEvent>> {
        self.poll_ready(cx, Direction::Write)
    }

    /// Counts a connection accepted through this (listening) registration, which is bound to
    /// the current reactor: the accept just succeeded through it.
    pub(crate) fn count_accept(&self) {
        if let Some(b) = self.here(Direction::Read) {
            b.home.counters.accepts.incr();
        }
    }

    /// `b`'s readiness in `dir`, or the task's waker stored under its home's key; a wait that
    /// put the descriptor back in the epoll set then checks that `dir` did not move meanwhile
    /// (`bound`'s protocol, step 6). Inlined, so that the ready case costs its callers a load
    /// and a test; the wait is a call.
    #[inline(always)]
    fn poll_ready_in(&self, b: &Bound, cx: &mut Context<'_>, dir: Direction) -> Poll<ReadyEvent> {
        let word = b.io.word();
        match ScheduledIo::event_in(word, dir) {
            Some(event) => Poll::Ready(event),
            None => {
                self.wait_in(b, cx, dir, word);
                Poll::Pending
            }
        }
    }

    /// [`poll_ready_in`](Self::poll_ready_in)'s wait: under the home's key, which the owner
    /// finds free unless another core is harvesting this reactor's events right now; then the
    /// task does not wait for the harvester but is woken to poll again (the harvester's
    /// events may be the ones it waits for).
    #[inline(never)]
    fn wait_in(&self, b: &Bound, cx: &mut Context<'_>, dir: Direction, seen: u64) {
        let Some(key) = b.home.try_key() else {
            cx.waker().wake_by_ref();
            return;
        };
        let joined = b.io.wait(cx, dir, seen, b.home.epoll_set());
        drop(key);
        if joined {
            self.check_still_bound(b, dir, cx);
        }
    }

    /// Counts a `WouldBlock` in `dir` (see `IoStats`).
    #[inline]
    fn count_would_block(home: &Home, dir: Direction) {
        let counters = &home.counters;
        match dir {
            Direction::Read => counters.read_would_blocks.incr(),
            Direction::Write => counters.write_would_blocks.incr(),
        }
    }

    /// Clears the readiness `event` observed, unless an event has arrived since.
    ///
    /// The closed bits are kept: they are permanent, and after a short read on a closed stream
    /// the next read must still run (and return end of file) instead of waiting for an edge that
    /// will never come. Call this after a syscall returned `WouldBlock`.
    pub fn clear_readiness(&self, event: ReadyEvent) {
        if let Some(b) = self.here_any() {
            b.io.clear(event, Ready::ALL_CLOSED);
        }
    }

    /// Clears every bit `event` observed, closed ones included, unless an event has arrived
    /// since: what a `WouldBlock` proves.
    pub(crate) fn clear_would_block(&self, event: ReadyEvent) {
        if let Some(b) = self.here_any() {
            b.io.clear(event, Ready::EMPTY);
        }
    }

    /// Clears read readiness (except the closed bit) whatever arrived since.
    ///
    /// Sound only when no `.await` separates the `WouldBlock` from this call, so that the
    /// reactor cannot have run in between; otherwise use
    /// [`clear_readiness`](Self::clear_readiness).
    pub fn clear_read_ready(&self) {
        if let Some(b) = self.here(Direction::Read) {
            b.io.clear_direction(Direction::Read);
        }
    }

    /// Clears write readiness (except the closed bit) whatever arrived since.
    ///
    /// The same caveat as [`clear_read_ready`](Self::clear_read_ready) applies.
    pub fn clear_write_ready(&self) {
        if let Some(b) = self.here(Direction::Write) {
            b.io.clear_direction(Direction::Write);
        }
    }

    /// Runs the syscall `f` once `dir` is ready, until it does not say `WouldBlock`.
    ///
    /// `WouldBlock` clears the readiness the attempt was based on (every bit, closed ones
    /// included: the syscall has just shown that this direction cannot make progress) and
    /// waits for the next event; `Interrupted` retries at once. Any other result is returned.
    ///
    /// # Errors
    ///
    /// Those of `f`, and as [`poll_ready`](Self::poll_ready).
    #[inline]
    pub fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        mut f: impl FnMut() -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        let b = self.io(dir)?;
        loop {
            let event = ready!(self.poll_ready_in(b, cx, dir));
            match f() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    Self::count_would_block(&b.home, dir);
                    b.io.clear(event, Ready::EMPTY);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                result => return Poll::Ready(result),
            }
        }
    }

    /// [`poll_io`](Self::poll_io) for a read from a byte stream into a buffer of `len` bytes.
    ///
    /// A short read (`0 < n < len`) means the stream's buffer was drained, so read readiness is
    /// cleared as well and the next read waits for an edge instead of paying a syscall that
    /// would say `WouldBlock`. On a level-triggered registration (the crate's streams) any read
    /// that returned data clears it: a read that filled the buffer exactly cannot tell
    /// "drained" from "more to read", and the next `epoll_wait` can, at no cost when the loop
    /// goes there anyway. Not for datagram sockets, where a short read says nothing about the
    /// queue.
    ///
    /// # Errors
    ///
    /// As [`poll_io`](Self::poll_io).
    #[inline]
    pub fn poll_read_io(
        &self,
        cx: &mut Context<'_>,
        len: usize,
        mut f: impl FnMut() -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        let b = self.io(Direction::Read)?;
        let io = &b.io;
        loop {
            let event = ready!(self.poll_ready_in(b, cx, Direction::Read));
            match f() {
                Ok(n) if n > 0 && (n < len || io.level.is_some()) => {
                    io.clear(event, Ready::ALL_CLOSED);
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    Self::count_would_block(&b.home, Direction::Read);
                    io.clear(event, Ready::EMPTY);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                result => return Poll::Ready(result),
            }
        }
    }

    /// Runs `f` now if `dir` has readiness, without registering a waker.
    ///
    /// # Errors
    ///
    /// `WouldBlock` if `dir` is not ready or `f` said so (the readiness is then cleared), or
    /// any other error of `f`. `Interrupted` is retried. And as [`poll_ready`](Self::poll_ready).
    pub fn try_io<R>(&self, dir: Direction, mut f: impl FnMut() -> io::Result<R>) -> io::Result<R> {
        let b = self.io(dir)?;
        loop {
            let Some(event) = b.io.ready_now(dir) else {
                return Err(io::ErrorKind::WouldBlock.into());
            };
            match f() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    Self::count_would_block(&b.home, dir);
                    b.io.clear(event, Ready::EMPTY);
                    return Err(e);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                result => return result,
            }
        }
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Registration");
        d.field("fd", &self.fd);
        match self.bound_somewhere() {
            None => d.field("bound", &false),
            Some(b) => {
                d.field("key", &b.key).field("home", &b.home);
                if b.home.is_current() {
                    d.field("readiness", &b.io.readiness());
                }
                &mut d
            }
        };
        d.finish_non_exhaustive()
    }
}
