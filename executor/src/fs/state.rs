//! The state machine behind [`File`](super::File): idle with a buffer, or busy with one
//! blocking job; the poll methods of the I/O traits, and the settling of outcomes nobody waits
//! for.

use std::fs::Metadata;
use std::future::Future;
use std::io::{self, Seek, SeekFrom};
use std::mem;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll, Waker};

use super::buf::{rewind, Buf};
use crate::context::with_current;
use crate::task::{spawn_blocking, JoinHandle};

/// The std file, as the blocking jobs use it.
pub(super) type StdFile = std::fs::File;

/// What a [`File`](super::File) is doing.
pub(super) struct Inner {
    /// Idle or busy.
    state: State,
    /// The error of an operation nobody waited for (a write reported done, or a job the pool
    /// failed), returned by the next operation that reads, writes, seeks, flushes or syncs.
    pub(super) error: Option<io::Error>,
    /// Where the last seek landed: what tokio's `poll_complete` reports with no seek in flight.
    pos: u64,
    /// The target of the futures-io seek whose job is in flight, `None` if that job is not one.
    seeking: Option<SeekFrom>,
    /// A `&self` method holds the turn: it alone drives `state`.
    pub(super) turn_taken: bool,
    /// The tasks waiting for the turn.
    pub(super) turn_waiters: Vec<Waker>,
}

/// Idle, with the buffer, or busy with one job, which has it.
pub(super) enum State {
    /// No job in flight; the buffer holds the read-ahead, if any.
    Idle(Buf),
    /// A job in flight, which gives back its outcome and the buffer.
    Busy(JoinHandle<(Operation, Buf)>),
}

/// What a job did, and its outcome.
pub(super) enum Operation {
    /// A read into the buffer: how many bytes (0 at the end).
    Read(io::Result<usize>),
    /// A write of the buffer.
    Write(io::Result<()>),
    /// A seek: the new position.
    Seek(io::Result<u64>),
    /// `set_len`, `sync_all`, `sync_data`, `set_permissions`.
    Done(io::Result<()>),
    /// `metadata`.
    Metadata(io::Result<Metadata>),
    /// `try_clone`.
    Clone(io::Result<StdFile>),
}

impl Inner {
    /// An idle file, holding nothing.
    pub(super) fn new() -> Inner {
        Inner {
            state: State::Idle(Buf::default()),
            error: None,
            pos: 0,
            seeking: None,
            turn_taken: false,
            turn_waiters: Vec::new(),
        }
    }

    /// Starts `job` on the pool with the file and the buffer: idle to busy.
    pub(super) fn start(
        &mut self,
        std: &Arc<StdFile>,
        job: impl FnOnce(&StdFile, &mut Buf) -> Operation + Send + 'static,
    ) {
        let State::Idle(buf) = &mut self.state else {
            panic!("invariant: a job starts only on an idle file");
        };
        let (mut buf, file) = (mem::take(buf), std.clone());
        // `file` is dropped when the closure returns, before its result is delivered.
        self.state = State::Busy(spawn_blocking(move || (job(&file, &mut buf), buf)));
    }

    /// Waits for the job in flight: `None` if idle, else its operation (now idle again, with
    /// the buffer back); a job the pool failed (a panic, a cancel at shutdown) is an error.
    pub(super) fn poll_job(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Operation>>> {
        let State::Busy(job) = &mut self.state else {
            return Poll::Ready(None);
        };
        let out = ready!(Pin::new(job).poll(cx));
        self.seeking = None;
        Poll::Ready(Some(match out {
            Ok((op, buf)) => {
                self.state = State::Idle(buf);
                Ok(op)
            }
            Err(e) => {
                self.state = State::Idle(Buf::default());
                Err(e.into())
            }
        }))
    }

    /// Keeps what matters of an operation nobody waits for any more: a write's error (for the
    /// next operation), a seek's position; a read's bytes stay in the buffer.
    pub(super) fn settle(&mut self, outcome: io::Result<Operation>) {
        match outcome {
            Ok(Operation::Write(Err(e))) | Err(e) => {
                self.error.get_or_insert(e);
            }
            Ok(Operation::Seek(Ok(pos))) => self.pos = pos,
            // An abandoned `try_clone`'s file: closed on the pool too.
            Ok(Operation::Clone(Ok(file))) => close_on_pool(file),
            Ok(_) => {}
        }
    }

    /// Waits until no job is in flight, settling what completes.
    pub(super) fn poll_idle(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while let Some(outcome) = ready!(self.poll_job(cx)) {
            self.settle(outcome);
        }
        Poll::Ready(())
    }

    /// The buffer, once idle.
    pub(super) fn buf(&mut self) -> &mut Buf {
        match &mut self.state {
            State::Idle(buf) => buf,
            State::Busy(_) => panic!("invariant: the buffer is reached only when idle"),
        }
    }

    /// futures-io's `poll_read`.
    pub(super) fn poll_read(
        &mut self,
        std: &Arc<StdFile>,
        cx: &mut Context<'_>,
        dst: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            match ready!(self.poll_job(cx)) {
                // The bytes this read (or an abandoned one) asked for: as many as fit.
                Some(Ok(Operation::Read(Ok(_)))) => {
                    return Poll::Ready(Ok(self.buf().copy_to(dst)))
                }
                Some(Ok(Operation::Read(Err(e)))) => return Poll::Ready(Err(e)),
                Some(outcome) => self.settle(outcome),
                None => {
                    if let Some(e) = self.error.take() {
                        return Poll::Ready(Err(e));
                    }
                    if !self.buf().is_empty() || dst.is_empty() {
                        return Poll::Ready(Ok(self.buf().copy_to(dst)));
                    }
                    let len = dst.len();
                    self.start(std, move |file, buf| {
                        Operation::Read(buf.read_from(file, len))
                    });
                }
            }
        }
    }

    /// futures-io's `poll_write`: Ready as soon as the bytes are handed to the pool.
    pub(super) fn poll_write(
        &mut self,
        std: &Arc<StdFile>,
        cx: &mut Context<'_>,
        src: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_idle(cx));
        if let Some(e) = self.error.take() {
            return Poll::Ready(Err(e));
        }
        if src.is_empty() {
            return Poll::Ready(Ok(0));
        }
        // The read-ahead goes (the job seeks back over it); the caller's bytes take its place.
        let ahead = self.buf().discard();
        let n = self.buf().copy_from(src);
        self.start(std, move |file, buf| {
            Operation::Write(rewind(file, ahead).and_then(|()| buf.write_to(file)))
        });
        Poll::Ready(Ok(n))
    }

    /// futures-io's `poll_flush`: the write in flight is done, and its error is returned.
    pub(super) fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_idle(cx));
        Poll::Ready(self.error.take().map_or(Ok(()), Err))
    }

    /// tokio's `start_seek`: starts the seek's job, with `Current` counted from the caller's
    /// position (the read-ahead given back).
    pub(super) fn start_seek(&mut self, std: &Arc<StdFile>, pos: SeekFrom) -> io::Result<()> {
        if matches!(self.state, State::Busy(_)) {
            return Err(io::Error::other(
                "other file operation is pending, call poll_complete before start_seek",
            ));
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.start(std, move |mut file, buf| {
            let ahead = buf.discard() as i64;
            let pos = match pos {
                SeekFrom::Current(n) => match n.checked_sub(ahead) {
                    Some(n) => SeekFrom::Current(n),
                    None => {
                        let e = io::Error::new(io::ErrorKind::InvalidInput, "seek out of range");
                        return Operation::Seek(Err(e));
                    }
                },
                pos => pos,
            };
            Operation::Seek(file.seek(pos))
        });
        Ok(())
    }

    /// tokio's `poll_complete`: the result of the seek in flight, or the last position.
    pub(super) fn poll_complete(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        loop {
            match ready!(self.poll_job(cx)) {
                None => return Poll::Ready(Ok(self.pos)),
                Some(Ok(Operation::Seek(res))) => {
                    if let Ok(pos) = res {
                        self.pos = pos;
                    }
                    return Poll::Ready(res);
                }
                Some(outcome) => self.settle(outcome),
            }
        }
    }

    /// futures-io's `poll_seek`: the seek in flight if it is this one (the caller polls again
    /// with the same target), else a new one once idle.
    pub(super) fn poll_seek(
        &mut self,
        std: &Arc<StdFile>,
        cx: &mut Context<'_>,
        pos: SeekFrom,
    ) -> Poll<io::Result<u64>> {
        if self.seeking != Some(pos) {
            ready!(self.poll_idle(cx));
            self.start_seek(std, pos)?;
            self.seeking = Some(pos);
        }
        self.poll_complete(cx)
    }
}

/// Closes `file` on the blocking pool when on a core (`close` can flush), else here.
pub(super) fn close_on_pool<T: Send + 'static>(file: T) {
    if with_current(|_| ()).is_some() {
        drop(spawn_blocking(move || drop(file)));
    } else {
        drop(file);
    }
}
