//! Anonymous pipes: `pipe()`, `PipeReader`, `PipeWriter`.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_io::{AsyncRead, AsyncWrite};
use mio::Interest;

use crate::async_fd::AsyncFd;
use crate::ready::Direction;
use crate::sys;

/// Creates a pipe: `(writer, reader)`, the order of tokio's `pipe` and of data flow. Each end
/// registers with the core that first polls it (see `Registration`'s
/// threads), so the two ends may be driven by different cores.
///
/// Both ends are `O_NONBLOCK | O_CLOEXEC` (`pipe2`).
///
/// # Errors
///
/// `pipe2` failed (typically `EMFILE`).
pub fn pipe() -> io::Result<(PipeWriter, PipeReader)> {
    let (read, write) = sys::pipe()?;
    Ok((PipeWriter::register(write), PipeReader::register(read)))
}

/// The read end of a pipe.
///
/// Reads return `Ok(0)` once every write end is closed and the pipe is drained.
#[derive(Debug)]
pub struct PipeReader {
    /// The read end, registered for reading.
    pub(crate) io: AsyncFd<File>,
}

impl PipeReader {
    /// Takes over a pipe's read end (or any readable stream descriptor), setting it
    /// non-blocking; it registers with the core that first polls it.
    ///
    /// # Errors
    ///
    /// `fcntl` failed.
    pub fn from_owned_fd(fd: OwnedFd) -> io::Result<PipeReader> {
        sys::set_nonblocking(fd.as_fd())?;
        Ok(PipeReader::register(fd))
    }

    /// Wraps a descriptor already non-blocking.
    fn register(fd: OwnedFd) -> PipeReader {
        let io = AsyncFd::unbound(File::from(fd), Interest::READABLE, true);
        PipeReader { io }
    }
}

impl AsyncRead for PipeReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let fd = self.io.get_ref().as_fd();
        let len = buf.len();
        self.io
            .registration()
            .poll_read_io(cx, len, || sys::read(fd, buf))
    }
}

impl AsFd for PipeReader {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get_ref().as_fd()
    }
}

impl AsRawFd for PipeReader {
    fn as_raw_fd(&self) -> RawFd {
        self.io.as_raw_fd()
    }
}

/// The write end of a pipe.
///
/// Writing when every read end is closed returns `BrokenPipe` (the reactor makes sure `SIGPIPE`
/// does not kill the process). [`poll_close`](AsyncWrite::poll_close) closes the descriptor, so
/// the reader sees end of file; later writes return `BrokenPipe`.
#[derive(Debug)]
pub struct PipeWriter {
    /// The write end, registered for writing; `None` once closed.
    io: Option<AsyncFd<File>>,
}

impl PipeWriter {
    /// Takes over a pipe's write end (or any writable stream descriptor), setting it
    /// non-blocking; it registers with the core that first polls it.
    ///
    /// # Errors
    ///
    /// `fcntl` failed.
    pub fn from_owned_fd(fd: OwnedFd) -> io::Result<PipeWriter> {
        sys::set_nonblocking(fd.as_fd())?;
        Ok(PipeWriter::register(fd))
    }

    /// Wraps a descriptor already non-blocking.
    fn register(fd: OwnedFd) -> PipeWriter {
        let io = AsyncFd::unbound(File::from(fd), Interest::WRITABLE, true);
        PipeWriter { io: Some(io) }
    }

    /// The open descriptor, or the error for writing after close.
    fn io(&self) -> io::Result<&AsyncFd<File>> {
        self.io
            .as_ref()
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "pipe writer is closed"))
    }
}

impl AsFd for PipeWriter {
    /// # Panics
    ///
    /// After [`poll_close`](AsyncWrite::poll_close), which closed the descriptor (so that the
    /// reader sees end of file): there is no descriptor left to borrow.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io
            .as_ref()
            .expect("`PipeWriter::as_fd` after `poll_close` closed the descriptor")
            .get_ref()
            .as_fd()
    }
}

impl AsRawFd for PipeWriter {
    /// # Panics
    ///
    /// After [`poll_close`](AsyncWrite::poll_close), as [`as_fd`](AsFd::as_fd).
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}

impl AsyncWrite for PipeWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let io = self.io()?;
        let fd = io.get_ref().as_fd();
        io.registration()
            .poll_io(cx, Direction::Write, || sys::write(fd, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Pipe writes are unbuffered in user space: once written, the reader can read them.
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Deregisters, then closes the descriptor: the reader sees end of file.
        self.io = None;
        Poll::Ready(Ok(()))
    }
}
