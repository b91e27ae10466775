//! `AsyncFd`: readiness-based async access to any file descriptor.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::os::fd::AsRawFd;
use std::task::{ready, Context, Poll};

use mio::Interest;

use crate::reactor::Reactor;
use crate::ready::{Direction, Ready, ReadyEvent};
use crate::registration::Registration;

/// A value owning a file descriptor, registered with a core's reactor.
///
/// For descriptors this crate has no type for (a netlink socket, a tty, a signalfd): wait for
/// readiness with [`readable`](Self::readable) / [`writable`](Self::writable), try the syscall,
/// and on `WouldBlock` clear the readiness through the guard so the next wait blocks. The
/// descriptor must be non-blocking, or the syscall blocks the whole core.
///
/// The crate's own I/O types are built on it.
///
/// # Examples
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// use std::io::Read;
/// use std::os::unix::net::UnixStream;
/// use tickless_io::AsyncFd;
///
/// let (a, _b) = UnixStream::pair()?;
/// a.set_nonblocking(true)?;
/// let fd = AsyncFd::new(a)?;
/// let mut buf = [0u8; 64];
/// let n = loop {
///     let mut guard = fd.readable().await?;
///     match guard.try_io(|fd| fd.get_ref().read(&mut buf)) {
///         Ok(result) => break result?,
///         Err(_would_block) => continue,
///     }
/// };
/// # let _ = n; Ok(()) }
/// ```
pub struct AsyncFd<T: AsRawFd> {
    /// The registration; declared first so it is dropped, deregistering the descriptor, before
    /// `inner` closes it (the [`Registration`] invariant).
    registration: Registration,
    /// The value that owns the descriptor.
    inner: T,
}

impl<T: AsRawFd> AsyncFd<T> {
    /// Registers `inner`'s descriptor with the current reactor for reading and writing.
    ///
    /// # Errors
    ///
    /// No reactor is current, or epoll refused the descriptor (regular files, for instance).
    pub fn new(inner: T) -> io::Result<Self> {
        Self::with_interest(inner, Interest::READABLE | Interest::WRITABLE)
    }

    /// Registers `inner`'s descriptor with the current reactor for `interest`.
    ///
    /// # Errors
    ///
    /// As for [`new`](Self::new).
    pub fn with_interest(inner: T, interest: Interest) -> io::Result<Self> {
        Reactor::with_current(|reactor| Self::new_in(reactor, inner, interest))?
    }

    /// Registers `inner`'s descriptor with `reactor` for `interest`.
    ///
    /// # Errors
    ///
    /// As for [`new`](Self::new), less the missing reactor.
    pub fn new_in(reactor: &Reactor, inner: T, interest: Interest) -> io::Result<Self> {
        let registration = Registration::new_in(reactor, inner.as_raw_fd(), interest)?;
        Ok(AsyncFd {
            registration,
            inner,
        })
    }

    /// Wraps `inner` for the crate's I/O types: registered with the reactor current where it is
    /// first used (see [`Registration`]'s threads), level-triggered if `stream` (the byte
    /// streams: pipes and stream sockets; see [`Registration::poll_read_io`]).
    pub(crate) fn unbound(inner: T, interest: Interest, stream: bool) -> Self {
        AsyncFd {
            registration: Registration::unbound(inner.as_raw_fd(), interest, stream),
            inner,
        }
    }

    /// The wrapped value.
    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// The wrapped value, mutably. Replacing or closing its descriptor is a logic error: the
    /// registration refers to it by number.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Deregisters the descriptor and returns the value, still open.
    pub fn into_inner(self) -> T {
        let AsyncFd {
            registration,
            inner,
        } = self;
        drop(registration);
        inner
    }

    /// The registration, for building I/O on [`Registration::poll_io`].
    pub fn registration(&self) -> &Registration {
        &self.registration
    }

    /// Ready once the descriptor may be readable (or is closed, or has an error).
    ///
    /// # Errors
    ///
    /// None at present; the `Result` keeps the signature of tokio's `AsyncFd`.
    pub fn poll_read_ready<'a>(
        &'a self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyGuard<'a, T>>> {
        self.poll_ready(cx, Direction::Read)
    }

    /// Ready once the descriptor may be writable (or is closed, or has an error).
    ///
    /// # Errors
    ///
    /// As for [`poll_read_ready`](Self::poll_read_ready).
    pub fn poll_write_ready<'a>(
        &'a self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyGuard<'a, T>>> {
        self.poll_ready(cx, Direction::Write)
    }

    /// Waits until the descriptor may be readable.
    ///
    /// # Errors
    ///
    /// As for [`poll_read_ready`](Self::poll_read_ready).
    pub async fn readable(&self) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        poll_fn(|cx| self.poll_read_ready(cx)).await
    }

    /// Waits until the descriptor may be writable.
    ///
    /// # Errors
    ///
    /// As for [`poll_read_ready`](Self::poll_read_ready).
    pub async fn writable(&self) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        poll_fn(|cx| self.poll_write_ready(cx)).await
    }

    /// Runs `f` each time `dir` is ready until it does not return `WouldBlock`.
    ///
    /// # Errors
    ///
    /// Whatever `f` returns other than `WouldBlock` and `Interrupted` (retried).
    pub async fn async_io<R>(
        &self,
        dir: Direction,
        mut f: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        poll_fn(|cx| self.registration.poll_io(cx, dir, || f(&self.inner))).await
    }

    /// Shared by the two `poll_*_ready`.
    fn poll_ready<'a>(
        &'a self,
        cx: &mut Context<'_>,
        dir: Direction,
    ) -> Poll<io::Result<AsyncFdReadyGuard<'a, T>>> {
        let event = ready!(self.registration.poll_ready(cx, dir))?;
        Poll::Ready(Ok(AsyncFdReadyGuard {
            fd: self,
            event: Some(event),
        }))
    }
}

impl<T: AsRawFd> AsRawFd for AsyncFd<T> {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.inner.as_raw_fd()
    }
}

impl<T: AsRawFd + fmt::Debug> fmt::Debug for AsyncFd<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncFd")
            .field("inner", &self.inner)
            .field("registration", &self.registration)
            .finish()
    }
}

/// Readiness observed by [`AsyncFd::readable`] or [`AsyncFd::writable`].
///
/// Dropping it keeps the readiness. After a syscall returned `WouldBlock`, call
/// [`clear_ready`](Self::clear_ready), or use [`try_io`](Self::try_io), which does it.
pub struct AsyncFdReadyGuard<'a, T: AsRawFd> {
    /// The descriptor whose readiness this is.
    fd: &'a AsyncFd<T>,
    /// The readiness seen; `None` once cleared.
    event: Option<ReadyEvent>,
}

/// The error of [`AsyncFdReadyGuard::try_io`] when the operation would block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TryIoError(());

impl<'a, T: AsRawFd> AsyncFdReadyGuard<'a, T> {
    /// The readiness observed (empty once cleared).
    pub fn ready(&self) -> Ready {
        self.event.map_or(Ready::EMPTY, |e| e.ready())
    }

    /// Clears the readiness observed, unless an event arrived since: the next wait blocks until
    /// the descriptor is ready again. The closed bits are kept.
    pub fn clear_ready(&mut self) {
        if let Some(event) = self.event.take() {
            self.fd.registration.clear_readiness(event);
        }
    }

    /// Keeps the readiness (what dropping the guard does too).
    pub fn retain_ready(&mut self) {
        self.event = None;
    }

    /// The `AsyncFd` this guard is for.
    pub fn get_ref(&self) -> &'a AsyncFd<T> {
        self.fd
    }

    /// The wrapped value.
    pub fn get_inner(&self) -> &'a T {
        self.fd.get_ref()
    }

    /// Runs `f`; if it returns `WouldBlock`, clears the readiness (closed bits included, since
    /// the descriptor just showed it cannot make progress) and returns `Err`.
    ///
    /// # Errors
    ///
    /// [`TryIoError`] when `f` would block: wait for readiness again.
    pub fn try_io<R>(
        &mut self,
        f: impl FnOnce(&'a AsyncFd<T>) -> io::Result<R>,
    ) -> Result<io::Result<R>, TryIoError> {
        match f(self.fd) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if let Some(event) = self.event.take() {
                    self.fd.registration.clear_would_block(event);
                }
                Err(TryIoError(()))
            }
            result => Ok(result),
        }
    }
}

impl<T: AsRawFd> fmt::Debug for AsyncFdReadyGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncFdReadyGuard")
            .field("ready", &self.ready())
            .finish()
    }
}
