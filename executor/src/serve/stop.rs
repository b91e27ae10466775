//! The stop request a [`Server`](super::Server) sends its accept loops, from any thread.

use std::io;
use std::os::fd::RawFd;
use std::task::{Context, Poll, Waker};

use crate::sync::{lock, AtomicBool, Mutex, Ordering};

/// A one-shot, cross-thread stop request with a drain deadline, that one task per core waits
/// for; the request also shuts every core's listening socket down at once, on the requesting
/// thread, so that new connections are refused from that moment whichever cores run.
/// `loom-tests/tests/serve_stop.rs` checks a request racing the waiters, and racing a loop that
/// closes its listener.
#[derive(Debug)]
pub struct Stop {
    /// Set (once) by [`request`](Self::request).
    requested: AtomicBool,
    /// When open connections are aborted; set before `requested`.
    deadline: Mutex<Option<std::time::Instant>>,
    /// Each core's accept loop's waker, by core index.
    ///
    /// # Invariant
    ///
    /// Read and written only under this lock, and `requested` is checked under it by
    /// [`poll`](Self::poll): a request made after a poller found it unset finds that poller's
    /// waker here, so no wakeup is lost.
    wakers: Mutex<Vec<Option<Waker>>>,
    /// Each core's listening descriptor, by core index, from the bind until its loop closes
    /// it or the request shuts it down.
    ///
    /// # Invariant
    ///
    /// A descriptor is here only while it is open: a loop takes its own out
    /// ([`unlist`](Self::unlist)) before closing it, and [`request`](Self::request) shuts the
    /// listed sockets down under this lock, so it never shuts a closed descriptor (or another
    /// socket that reused its number).
    listeners: Mutex<Vec<Option<RawFd>>>,
}

impl Stop {
    /// A request not made yet, for `cores` waiters, no listener listed.
    pub fn new(cores: usize) -> Stop {
        Stop {
            requested: AtomicBool::new(false),
            deadline: Mutex::new(None),
            wakers: Mutex::new(vec![None; cores]),
            listeners: Mutex::new(vec![None; cores]),
        }
    }

    /// Lists core `core`'s listening descriptor `fd`, for the request to shut down. The caller
    /// [`unlist`](Self::unlist)s it before closing it.
    pub fn list(&self, core: usize, fd: RawFd) {
        lock(&self.listeners)[core] = Some(fd);
    }

    /// Takes core `core`'s listener out of the list (its descriptor is about to close);
    /// whether it was still there (not shut down by a request).
    pub fn unlist(&self, core: usize) -> bool {
        lock(&self.listeners)[core].take().is_some()
    }

    /// Asks every accept loop to stop, and open connections to end by `deadline`; shuts every
    /// listed listener down first (new connections are refused from here on, on every core,
    /// whether its loop runs or not).
    pub fn request(&self, deadline: std::time::Instant) {
        self.request_with(deadline, shut_listener);
    }

    /// [`request`](Self::request), shutting each listed descriptor down with `shut` (the loom
    /// model checks with it that no closed descriptor is shut); returns how many it shut.
    pub fn request_with(&self, deadline: std::time::Instant, shut: impl Fn(RawFd)) -> usize {
        let mut deadline_slot = lock(&self.deadline);
        deadline_slot.get_or_insert(deadline);
        drop(deadline_slot);
        let wakers: Vec<Waker> = {
            let mut slots = lock(&self.wakers);
            self.requested.store(true, Ordering::Release);
            slots.iter_mut().filter_map(Option::take).collect()
        };
        // After `requested` is set: a loop whose `accept` fails on a socket shut here finds
        // the request, and stops instead of reporting the error. Under the lock: see the
        // invariant.
        let mut shut_down = 0;
        for fd in lock(&self.listeners).iter_mut().filter_map(Option::take) {
            shut(fd);
            shut_down += 1;
        }
        // Wake outside the lock: a wake may run the core's hand-over code.
        for w in wakers {
            w.wake();
        }
        shut_down
    }

    /// Whether the stop was requested.
    pub fn is_requested(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }

    /// The drain deadline, once requested.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        *lock(&self.deadline)
    }

    /// Ready once the stop was requested; otherwise keeps core `core`'s waker.
    pub fn poll(&self, core: usize, cx: &mut Context<'_>) -> Poll<()> {
        if self.requested.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        let mut slots = lock(&self.wakers);
        if self.requested.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        match &mut slots[core] {
            Some(w) if w.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

/// Shuts a listening socket down: it leaves the port's listening set at once (queued and new
/// connections are reset, refused; with `SO_REUSEPORT`, new ones go to the port's other
/// listeners), whichever thread holds its descriptors, and its `accept` fails from then on.
fn shut_listener(fd: RawFd) {
    // SAFETY: `fd` is open (the invariant on `Stop::listeners`); `shutdown` takes no pointers
    // and only changes the socket's state. Its error (not a socket) changes nothing to act on.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

/// A core's listener while it is listed with its server's [`Stop`]: out of the list before its
/// descriptor closes, however the loop ends (stopped, failed, or its task dropped unrun).
pub(super) struct Listed {
    /// The stop it is listed with.
    stop: std::sync::Arc<Stop>,
    /// Its core (its index in the list).
    core: usize,
    /// The socket, as bound, then registered with the core; `None` once closed.
    socket: Option<Socket>,
}

/// A [`Listed`] socket.
enum Socket {
    /// Bound on the starting thread, not registered yet.
    Bound(std::net::TcpListener),
    /// Registered with the core that runs the loop.
    Registered(crate::net::TcpListener),
}

impl Listed {
    /// Lists `listener` as core `core`'s with `stop`.
    pub(super) fn new(
        stop: std::sync::Arc<Stop>,
        core: usize,
        listener: std::net::TcpListener,
    ) -> Listed {
        use std::os::fd::AsRawFd;
        stop.list(core, listener.as_raw_fd());
        Listed {
            stop,
            core,
            socket: Some(Socket::Bound(listener)),
        }
    }

    /// The socket, registered with the current core (the first call registers it).
    ///
    /// # Errors
    ///
    /// Making it non-blocking failed (the listener is closed when this is dropped).
    pub(super) fn registered(&mut self) -> io::Result<&crate::net::TcpListener> {
        if let Some(Socket::Bound(l)) = &self.socket {
            // Here, so that an error leaves the socket open until `drop` unlists it. Then
            // `from_std`, which does the same, cannot fail.
            l.set_nonblocking(true)?;
        }
        if let Some(Socket::Bound(l)) = self.socket.take() {
            self.socket = Some(Socket::Registered(crate::net::TcpListener::from_std(l)?));
        }
        match &self.socket {
            Some(Socket::Registered(l)) => Ok(l),
            _ => Err(io::Error::other("the listener was closed")),
        }
    }

    /// Closes the socket now (after unlisting it).
    pub(super) fn close(&mut self) {
        self.stop.unlist(self.core);
        self.socket = None;
    }
}

impl Drop for Listed {
    fn drop(&mut self) {
        self.close();
    }
}
