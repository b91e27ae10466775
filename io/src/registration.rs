//! One descriptor's registration: readiness, wakers, and the try-then-wait discipline that
//! every I/O type follows.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, OnceLock};
use std::task::{ready, Context, Poll, Waker};

use crate::home::Home;
use crate::reactor::Reactor;
use crate::ready::{Direction, Ready, ReadyEvent};

/// The state a registration shares with its reactor's slab.
///
/// The reactor writes it while dispatching events; the I/O type reads and clears it while a
/// task polls. Both happen on the core's one thread, never at the same time.
///
/// It is shared through an `Arc` only so that a [`Registration`] can be sent to, and dropped
/// on, another thread; its cells are touched on the reactor's thread alone (see the `Send`
/// and `Sync` impls below).
pub(crate) struct ScheduledIo {
    /// Readiness reported by epoll and not yet disproved by a `WouldBlock`.
    ///
    /// Starts as readable and writable: a new descriptor is tried before anyone waits, and an
    /// edge-triggered registration of a ready descriptor still reports it on the next poll.
    readiness: Cell<Ready>,
    /// Bumped on every event dispatched here; a clear applies only if it has not moved.
    tick: Cell<u32>,
    /// Tasks waiting to read (index 0) and to write (index 1, see [`Waiters::of`]); all the
    /// tasks of a direction are woken, and its list emptied, by readiness in that direction.
    /// One cell for both, so that an event borrows once.
    waiters: RefCell<[Waiters; 2]>,
    /// A level-triggered registration's interest (`None`: edge-triggered, registered by mio).
    level: Option<Level>,
}

/// The tasks waiting in one direction: the first in a slot of its own, so that the usual lone
/// waiter costs no list; any others (tasks sharing a stream) in a list after it, in the order
/// they came. `more` is empty whenever `first` is.
#[derive(Default)]
struct Waiters {
    /// The first task to wait.
    first: Option<Waker>,
    /// The tasks that waited after it.
    more: Vec<Waker>,
}

impl Waiters {
    /// The index of `dir`'s waiters in [`ScheduledIo::waiters`].
    #[inline]
    fn of(dir: Direction) -> usize {
        match dir {
            Direction::Read => 0,
            Direction::Write => 1,
        }
    }

    /// Whether no task waits.
    #[inline]
    fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Adds the task of `waker`, unless a waker that wakes it is stored already.
    #[inline]
    fn add(&mut self, waker: &Waker) {
        match &self.first {
            None => self.first = Some(waker.clone()),
            Some(first) if first.will_wake(waker) => {}
            Some(_) => {
                if !self.more.iter().any(|w| w.will_wake(waker)) {
                    self.more.push(waker.clone());
                }
            }
        }
    }

    /// Moves every waker into `wake`, in the order the tasks waited.
    #[inline]
    fn move_into(&mut self, wake: &mut VecDeque<Waker>) {
        if let Some(first) = self.first.take() {
            wake.push_back(first);
            if !self.more.is_empty() {
                wake.extend(self.more.drain(..));
            }
        }
    }
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
    in_set: Cell<bool>,
}

impl Level {
    /// Adds `fd` to the epoll set `epfd` level-triggered under token `data`, for `interest`:
    /// read interest armed at once, write interest only once a task waits to write (a
    /// writable descriptor would otherwise be reported at every poll).
    pub(crate) fn add(
        epfd: RawFd,
        fd: RawFd,
        data: u64,
        interest: mio::Interest,
    ) -> io::Result<Level> {
        let mut wanted = Ready::EMPTY;
        if interest.is_readable() {
            wanted |= Ready::READABLE;
        }
        if interest.is_writable() {
            wanted |= Ready::WRITABLE;
        }
        let armed = wanted.intersection(Ready::READABLE);
        epoll_ctl(
            epfd,
            libc::EPOLL_CTL_ADD,
            fd,
            Level::epoll_events(armed),
            data,
        )?;
        Ok(Level {
            fd,
            data,
            interest: wanted,
            armed: Cell::new(armed),
            in_set: Cell::new(true),
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
    /// something changes, none otherwise. False if epoll refused (no event will come).
    fn arm(&self, dir: Direction, home: &Home) -> bool {
        let armed = self.armed.get();
        let want = armed | Level::bit(dir).intersection(self.interest);
        if want == armed && self.in_set.get() {
            return true;
        }
        let op = if self.in_set.get() {
            libc::EPOLL_CTL_MOD
        } else {
            libc::EPOLL_CTL_ADD
        };
        home.counters.epoll_ctls.incr();
        match epoll_ctl(
            home.epoll_fd(),
            op,
            self.fd,
            Level::epoll_events(want),
            self.data,
        ) {
            Ok(()) => {
                self.armed.set(want);
                self.in_set.set(true);
                true
            }
            Err(_) => false,
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
    fn settle(&self, ready: Ready, waiting: Ready, home: &Home) {
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
        home.counters.epoll_ctls.incr();
        if keep.is_empty() {
            let _gone = epoll_ctl(home.epoll_fd(), libc::EPOLL_CTL_DEL, self.fd, 0, 0);
            self.in_set.set(false);
        } else {
            let _gone = epoll_ctl(
                home.epoll_fd(),
                libc::EPOLL_CTL_MOD,
                self.fd,
                Level::epoll_events(keep),
                self.data,
            );
        }
        self.armed.set(keep);
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

// SAFETY: the cells and the waker lists are only read or written on the reactor's thread: by
// the reactor, which is `!Send`, and through a `Registration`, whose every access goes through
// `Registration::io`, which checks that the reactor is the one entered on the calling thread
// (`Home::is_current`; a `Reactor` is `!Send`, so it is entered only on its own thread). From any other
// thread the value can only be dropped, as the last `Arc`, and then nothing else can touch it;
// what its drop releases (wakers) is itself `Send`.
unsafe impl Send for ScheduledIo {}
// SAFETY: as above: a shared reference is used on the reactor's thread only.
unsafe impl Sync for ScheduledIo {}

impl ScheduledIo {
    /// A fresh, optimistically ready registration state; `level` for a level-triggered
    /// registration, `None` for an edge-triggered one.
    pub(crate) fn new(level: Option<Level>) -> ScheduledIo {
        ScheduledIo {
            readiness: Cell::new(Ready::READABLE | Ready::WRITABLE),
            tick: Cell::new(0),
            waiters: RefCell::new([Waiters::default(), Waiters::default()]),
            level,
        }
    }

    /// Whether the descriptor is in the epoll set (an edge-triggered one always is; a
    /// level-triggered one leaves it while nothing is armed).
    pub(crate) fn in_epoll_set(&self) -> bool {
        self.level.as_ref().is_none_or(|l| l.in_set.get())
    }

    /// Records an event and moves the wakers it concerns into `wake`; for a level-triggered
    /// registration, first disarms what nobody waits for ([`Level::settle`]).
    ///
    /// Waking happens later, outside every reactor borrow: a waker may run arbitrary code,
    /// including code that registers or drops I/O on this reactor.
    pub(crate) fn dispatch(&self, ready: Ready, wake: &mut VecDeque<Waker>, home: &Home) {
        let mut waiters = self.waiters.borrow_mut();
        if let Some(level) = &self.level {
            let mut waiting = Ready::EMPTY;
            if !waiters[Waiters::of(Direction::Read)].is_empty() {
                waiting |= Ready::READABLE;
            }
            if !waiters[Waiters::of(Direction::Write)].is_empty() {
                waiting |= Ready::WRITABLE;
            }
            level.settle(ready, waiting, home);
        }
        if ready.is_empty() {
            return;
        }
        self.readiness.set(self.readiness.get() | ready);
        self.tick.set(self.tick.get().wrapping_add(1));
        for dir in [Direction::Read, Direction::Write] {
            if !ready.intersection(dir.mask()).is_empty() {
                waiters[Waiters::of(dir)].move_into(wake);
            }
        }
    }

    /// The readiness in `dir` right now, or `None` if there is none.
    fn ready_now(&self, dir: Direction) -> Option<ReadyEvent> {
        let ready = self.readiness.get().intersection(dir.mask());
        (!ready.is_empty()).then(|| ReadyEvent {
            tick: self.tick.get(),
            ready,
        })
    }

    /// Ready if `dir` has readiness; otherwise stores the task's waker and returns pending,
    /// arming `dir` first if the registration is level-triggered and it is not armed.
    ///
    /// Inlined, so that the ready case costs its callers a load and a test; the wait is a call.
    #[inline]
    fn poll_ready(&self, cx: &mut Context<'_>, dir: Direction, home: &Home) -> Poll<ReadyEvent> {
        match self.ready_now(dir) {
            Some(event) => Poll::Ready(event),
            None => {
                self.wait(cx, dir, home);
                Poll::Pending
            }
        }
    }

    /// The pending half of [`poll_ready`](Self::poll_ready): stores the task's waker, and arms
    /// `dir` if the registration is level-triggered.
    #[inline(never)]
    fn wait(&self, cx: &mut Context<'_>, dir: Direction, home: &Home) {
        // No event can be dispatched between the readiness check and this push: the reactor
        // runs on this thread, and not while a task is being polled.
        self.waiters.borrow_mut()[Waiters::of(dir)].add(cx.waker());
        if let Some(level) = &self.level {
            if !level.arm(dir, home) {
                // epoll refused (out of memory or watches): no event will come, so the task
                // retries through its scheduler rather than waiting for ever.
                cx.waker().wake_by_ref();
            }
        }
    }

    /// Clears the bits of `event` except `keep`, unless an event arrived since it was taken.
    fn clear(&self, event: ReadyEvent, keep: Ready) {
        if self.tick.get() == event.tick {
            let bits = event.ready.difference(keep);
            self.readiness.set(self.readiness.get().difference(bits));
        }
    }

    /// Clears `dir`'s bits except the closed ones, whatever the tick.
    fn clear_direction(&self, dir: Direction) {
        let bits = dir.mask().difference(Ready::ALL_CLOSED);
        self.readiness.set(self.readiness.get().difference(bits));
    }
}

/// A descriptor registered with a core's [`Reactor`]: the building block of every I/O type.
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
/// A registration belongs to the core that first uses it: the crate's I/O types make theirs
/// unbound, and the first poll, wherever a reactor is current,
/// registers the descriptor with that reactor. So a stream accepted on one core and handed to a
/// task on another is driven by the other. ([`new`](Self::new) and [`new_in`](Self::new_in)
/// register at once, with the current or the given reactor.)
///
/// It is `Send` and `Sync`, so that the types built on it can live in `Send` futures, but once
/// bound it must be used where its reactor is current: anywhere else it panics with a message
/// saying so, while that reactor lives; once the reactor is gone (its runtime was shut down or
/// dropped), every use returns an error instead of waiting for an event that will never come.
/// First used where no reactor is current, it returns an error. It may be dropped anywhere:
/// away from its reactor the descriptor leaves the epoll set at once and the reactor frees the
/// rest at its next poll.
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
    /// Its place in the reactor of the core that first used it; set once, by that use.
    /// Reached through [`io`](Self::io) only, which checks the reactor is current.
    bound: OnceLock<Bound>,
}

/// A registration's place in a reactor.
struct Bound {
    /// The reactor's cross-thread part: whether it is current here, where a drop elsewhere goes.
    home: Arc<Home>,
    /// Readiness and wakers, shared with the reactor's slab.
    io: Arc<ScheduledIo>,
    /// This registration's key in the reactor's slab.
    key: usize,
}

/// The error of a first use where no reactor is current.
fn no_runtime(fd: RawFd) -> io::Error {
    io::Error::other(format!(
        "no tickless runtime is running on this thread: an I/O object (fd {fd}) is driven by \
         the core that first polls it, and none runs here"
    ))
}

impl Registration {
    /// Registers `fd` with this thread's current reactor, for the given interest, at once.
    ///
    /// # Errors
    ///
    /// No reactor is current on this thread, or epoll refused the descriptor (for example
    /// `EPERM` for a regular file, `EEXIST` if it is already registered).
    pub fn new(fd: RawFd, interest: mio::Interest) -> io::Result<Registration> {
        Reactor::with_current(|reactor| Registration::new_in(reactor, fd, interest))
            .map_err(|_| no_runtime(fd))?
    }

    /// Registers `fd` with `reactor`, for the given interest, at once.
    ///
    /// # Errors
    ///
    /// As for [`new`](Self::new), less the missing reactor.
    pub fn new_in(
        reactor: &Reactor,
        fd: RawFd,
        interest: mio::Interest,
    ) -> io::Result<Registration> {
        let registration = Registration::unbound(fd, interest, false);
        registration.bind(reactor)?;
        Ok(registration)
    }

    /// A registration of `fd` for `interest` that registers with the reactor current where it
    /// is first used (level-triggered if `level`: the byte streams, whose reads through
    /// [`poll_read_io`](Self::poll_read_io) then never pay a read that says `WouldBlock` after
    /// one that filled the buffer).
    pub(crate) fn unbound(fd: RawFd, interest: mio::Interest, level: bool) -> Registration {
        Registration {
            fd,
            interest,
            level,
            bound: OnceLock::new(),
        }
    }

    /// Registers the descriptor with `reactor` (current on this thread, or about to be
    /// polled here), unless another thread bound it first.
    fn bind(&self, reactor: &Reactor) -> io::Result<&Bound> {
        let (key, io) = reactor.register(self.fd, self.interest, self.level)?;
        let home = Arc::clone(reactor.home());
        match self.bound.set(Bound { home, io, key }) {
            Ok(()) => Ok(self.bound.get().expect("set just now")),
            Err(ours) => {
                // Used on two threads at once, and the other bound it first: it is the other
                // core's. Undo ours; using it here is then a misuse.
                reactor.deregister(ours.key, self.fd);
                let theirs = self.bound.get().expect("set by the other thread");
                Err(theirs.home.used_elsewhere(self.fd))
            }
        }
    }

    /// Its place in the reactor current here: bound by this first use, or checked to be this
    /// reactor's (once per call of the public methods: the loops below hold on to it).
    ///
    /// # Errors
    ///
    /// First used where no reactor is current; bound to a reactor that is gone; epoll refused
    /// the descriptor at the first use.
    ///
    /// # Panics
    ///
    /// Bound to another reactor that still lives (another core's, or a runtime on this thread
    /// that is not the one running), with a message naming the descriptor.
    #[inline(always)]
    #[track_caller]
    fn io(&self) -> io::Result<&Bound> {
        match self.here() {
            Some(bound) => Ok(bound),
            None => self.first_use(),
        }
    }

    /// Its place in the reactor current here, if it is bound to that one: the fast path of
    /// [`io`](Self::io), a load of the binding and a compare with one thread-local.
    #[inline(always)]
    fn here(&self) -> Option<&Bound> {
        let bound = self.bound.get()?;
        bound.home.is_current().then_some(bound)
    }

    /// [`io`](Self::io) when the registration is not bound to the current reactor: bind it,
    /// or say why it cannot be used here.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn first_use(&self) -> io::Result<&Bound> {
        if let Some(bound) = self.bound.get() {
            return Err(bound.home.used_elsewhere(self.fd));
        }
        Reactor::with_current(|reactor| self.bind(reactor)).map_err(|_| no_runtime(self.fd))?
    }

    /// The readiness recorded right now (all directions); empty before the first use, and
    /// where the registration cannot be used.
    ///
    /// # Panics
    ///
    /// Bound to another core's live reactor, as every method that looks at readiness.
    pub fn readiness(&self) -> Ready {
        self.io().map_or(Ready::EMPTY, |b| b.io.readiness.get())
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
        let b = match self.here() {
            Some(b) => b,
            None => self.first_use()?,
        };
        b.io.poll_ready(cx, dir, &b.home).map(Ok)
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
        if let Some(b) = self.bound.get() {
            b.home.counters.accepts.incr();
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
        if let Ok(b) = self.io() {
            b.io.clear(event, Ready::ALL_CLOSED);
        }
    }

    /// Clears every bit `event` observed, closed ones included, unless an event has arrived
    /// since: what a `WouldBlock` proves.
    pub(crate) fn clear_would_block(&self, event: ReadyEvent) {
        if let Ok(b) = self.io() {
            b.io.clear(event, Ready::EMPTY);
        }
    }

    /// Clears read readiness (except the closed bit) whatever arrived since.
    ///
    /// Sound only when no `.await` separates the `WouldBlock` from this call, so that the
    /// reactor cannot have run in between; otherwise use
    /// [`clear_readiness`](Self::clear_readiness).
    pub fn clear_read_ready(&self) {
        if let Ok(b) = self.io() {
            b.io.clear_direction(Direction::Read);
        }
    }

    /// Clears write readiness (except the closed bit) whatever arrived since.
    ///
    /// The same caveat as [`clear_read_ready`](Self::clear_read_ready) applies.
    pub fn clear_write_ready(&self) {
        if let Ok(b) = self.io() {
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
        let b = match self.here() {
            Some(b) => b,
            None => self.first_use()?,
        };
        loop {
            let event = ready!(b.io.poll_ready(cx, dir, &b.home));
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
        let b = match self.here() {
            Some(b) => b,
            None => self.first_use()?,
        };
        let io = &b.io;
        loop {
            let event = ready!(io.poll_ready(cx, Direction::Read, &b.home));
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
        let b = match self.here() {
            Some(b) => b,
            None => self.first_use()?,
        };
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

impl Drop for Registration {
    fn drop(&mut self) {
        // Never used on a core: nothing was registered.
        let Some(b) = self.bound.take() else { return };
        if b.home.is_current() {
            // The current reactor is this registration's (the thread-local says so).
            let removed = Reactor::with_current(|r| r.deregister(b.key, self.fd));
            if removed.is_ok() {
                return;
            }
        }
        // Another thread, or the reactor is no longer current here (a thread-local destructor,
        // after the runtime's loop): leave the slot to the reactor.
        b.home.orphan(b.key, self.fd);
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Registration");
        d.field("fd", &self.fd);
        match self.bound.get() {
            None => d.field("bound", &false),
            Some(b) => {
                d.field("key", &b.key).field("home", &b.home);
                if b.home.is_current() {
                    d.field("readiness", &b.io.readiness.get());
                }
                &mut d
            }
        };
        d.finish_non_exhaustive()
    }
}
