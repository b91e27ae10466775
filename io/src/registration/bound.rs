//! Binding a registration to a reactor and its home: at the first use, checked at every use,
//! undone by the drop (on the reactor's thread, or from elsewhere through the home).

use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, OnceLock};

use super::scheduled::ScheduledIo;
use super::Registration;
use crate::home::Home;
use crate::reactor::Reactor;

/// A registration's place in a reactor.
pub(super) struct Bound {
    /// The reactor's cross-thread part: whether it is current here, where a drop elsewhere goes.
    pub(super) home: Arc<Home>,
    /// Readiness and wakers, shared with the reactor's slab.
    pub(super) io: Arc<ScheduledIo>,
    /// This registration's key in the reactor's slab.
    pub(super) key: usize,
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
    pub(super) fn io(&self) -> io::Result<&Bound> {
        match self.here() {
            Some(bound) => Ok(bound),
            None => self.first_use(),
        }
    }

    /// Its place in the reactor current here, if it is bound to that one: the fast path of
    /// [`io`](Self::io), a load of the binding and a compare with one thread-local.
    #[inline(always)]
    pub(super) fn here(&self) -> Option<&Bound> {
        let bound = self.bound.get()?;
        bound.home.is_current().then_some(bound)
    }

    /// [`io`](Self::io) when the registration is not bound to the current reactor: bind it,
    /// or say why it cannot be used here.
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub(super) fn first_use(&self) -> io::Result<&Bound> {
        if let Some(bound) = self.bound.get() {
            return Err(bound.home.used_elsewhere(self.fd));
        }
        Reactor::with_current(|reactor| self.bind(reactor)).map_err(|_| no_runtime(self.fd))?
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
