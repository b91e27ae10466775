//! `File`: an open file whose every operation runs on the blocking pool, tokio's
//! `tokio::fs::File` design (one job in flight, a buffer moved to the job and back).

use std::fmt;
use std::fs::{Metadata, Permissions};
use std::future::poll_fn;
use std::io::{self, SeekFrom};
use std::mem;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::buf::Buf;
use super::state::{close_on_pool, Inner, Operation, StdFile};
use crate::catch::wake_caught;
use crate::sync::{lock, Mutex};

/// An open file, read, written and seeked through futures-io's `AsyncRead`, `AsyncWrite` and
/// `AsyncSeek` (and tokio's, with the `tokio-io` feature), every operation on the runtime's
/// blocking pool: a slow disk stalls a pool thread, never the core. The API is tokio's
/// `tokio::fs::File`.
///
/// # Writes are reported done before they are done
///
/// A write copies up to 16 KiB of the caller's bytes, hands them to the pool and returns their
/// count at once; the next operation waits for that write, and its error, if any, is returned by
/// the next read, write, seek, `flush`, `close`, [`set_len`](Self::set_len),
/// [`sync_all`](Self::sync_all) or [`sync_data`](Self::sync_data). So:
///
/// - `flush` (or `close`) is where you learn that the bytes reached the operating system, and
///   [`sync_all`] where they reach the disk. Dropping the file without either loses the error.
/// - A file dropped with a write in flight still has it written, on the pool, while the runtime
///   runs on; a runtime shut down before a pool thread started that write drops it (as it drops
///   every blocking job not yet started). Flush before the runtime goes.
/// - [`into_std`](Self::into_std) waits for the write but cannot return its error: flush first.
///
/// [`sync_all`]: Self::sync_all
///
/// # Examples
///
/// ```
/// use futures_lite::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
/// use std::io::SeekFrom;
/// use tickless::fs::File;
///
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let path = std::env::temp_dir().join(format!("tickless-file-doc-{}", std::process::id()));
///     let mut file = File::create(&path).await?;
///     file.write_all(b"hello, world").await?; // handed to the pool
///     file.flush().await?; // written: any error shows here
///     file.sync_all().await?; // and on the disk
///
///     let mut file = File::open(&path).await?;
///     let mut hello = [0; 5];
///     file.read_exact(&mut hello).await?;
///     assert_eq!(&hello, b"hello");
///     file.seek(SeekFrom::End(-5)).await?;
///     let mut rest = String::new();
///     file.read_to_string(&mut rest).await?;
///     assert_eq!(rest, "world");
///     assert_eq!(file.metadata().await?.len(), 12);
///     tickless::fs::remove_file(&path).await
/// })?;
/// # std::io::Result::Ok(())
/// ```
///
/// # Panics
///
/// An operation that has to start a blocking job panics outside a tickless runtime (it needs
/// the runtime's pool); a file may move between cores and runtimes, and uses the current one.
///
/// # Implementation
///
/// The file is idle, holding a buffer, or busy with one blocking job (a `spawn_blocking`
/// whose result is the operation's outcome and the buffer back). A read with nothing held
/// starts a job that reads up to the caller's length, capped at 16 KiB; what the caller's buffer
/// cannot take stays held for the next read, and every other operation first gives it back (the
/// job seeks back over it), so the position is always the caller's. A write waits for the job
/// in flight, then starts the next one: one write in flight at a time, in order. The `&self`
/// methods ([`metadata`](Self::metadata), [`set_len`](Self::set_len), ...) take turns through
/// an async lock and run as the file's next job, after the one in flight. Dropping the file
/// closes it on the pool too (`close` can flush, on NFS or after a truncation).
pub struct File {
    /// The file, shared with the job in flight.
    ///
    /// # Invariant
    ///
    /// `Some` until [`File::into_std`] takes it; besides this one, the only clone is the one
    /// the job in `inner.state` holds, which it drops before its result is delivered.
    std: Option<Arc<StdFile>>,
    /// The operations' state, locked so that the `&self` methods reach it too.
    inner: Mutex<Inner>,
}

impl File {
    /// An async file over an open std file, whose cursor it takes over. Touches nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures_lite::AsyncReadExt;
    /// use std::io::{Seek, SeekFrom};
    /// use tickless::fs::File;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-from-std-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     tickless::fs::write(&path, "hello, world").await?;
    ///     let mut std = std::fs::File::open(&path)?; // opened on this thread: a blocking call
    ///     std.seek(SeekFrom::Start(7))?;
    ///     let mut file = File::from_std(std);
    ///     let mut rest = String::new();
    ///     file.read_to_string(&mut rest).await?; // from where the std file's cursor was
    ///     assert_eq!(rest, "world");
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub fn from_std(std: StdFile) -> File {
        File {
            std: Some(Arc::new(std)),
            inner: Mutex::new(Inner::new()),
        }
    }

    /// The std file back, once the operation in flight is done, with its cursor where the
    /// caller's reads, writes and seeks left it (the read-ahead given back on the pool).
    ///
    /// The error of a write reported done is lost here: flush first.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures_lite::{AsyncReadExt, AsyncWriteExt};
    /// use std::io::{Read, Seek};
    /// use tickless::fs::File;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-into-std-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     let mut file = File::create_new(&path).await?;
    ///     file.write_all(b"hello, world").await?;
    ///     file.flush().await?; // its error, if any: `into_std` cannot return it
    ///     let mut std = file.into_std().await;
    ///     assert_eq!(std.stream_position()?, 12); // where the writes left it
    ///     std.rewind()?;
    ///     let mut text = String::new();
    ///     std.read_to_string(&mut text)?; // blocking calls from here on
    ///     assert_eq!(text, "hello, world");
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn into_std(mut self) -> StdFile {
        let std = self
            .std
            .take()
            .expect("invariant: `std` is Some until into_std");
        let inner = &self.inner;
        poll_fn(|cx| lock(inner).poll_idle(cx)).await;
        let ahead = !lock(inner).buf().is_empty();
        if ahead {
            lock(inner).start(&std, |file, buf| Operation::Done(buf.give_back(file)));
            // A failed seek leaves the cursor ahead: there is nothing to report it through.
            drop(poll_fn(|cx| lock(inner).poll_job(cx)).await);
        }
        Arc::try_unwrap(std).expect("invariant: no job holds the file once its result is back")
    }

    /// The file's metadata (`std::fs::File::metadata`), once the write in flight is done, so
    /// that the length counts it.
    ///
    /// # Errors
    ///
    /// As `std::fs::File::metadata`.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures_lite::AsyncWriteExt;
    /// use tickless::fs::File;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-file-metadata-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     let mut file = File::create(&path).await?;
    ///     file.write_all(b"hello").await?; // handed to the pool, maybe not written yet
    ///     let meta = file.metadata().await?; // after that write
    ///     assert!(meta.is_file());
    ///     assert_eq!(meta.len(), 5);
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn metadata(&self) -> io::Result<Metadata> {
        self.run(
            false,
            |file, _| Operation::Metadata(file.metadata()),
            |op| match op {
                Operation::Metadata(res) => Some(res),
                _ => None,
            },
        )
        .await
    }

    /// Truncates or extends the file to `size` bytes (`std::fs::File::set_len`); the position
    /// does not move, and may end up past the end.
    ///
    /// # Errors
    ///
    /// The error of an earlier write reported done; then as `std::fs::File::set_len`
    /// (`InvalidInput` if not open for writing).
    ///
    /// # Examples
    ///
    /// ```
    /// use futures_lite::AsyncWriteExt;
    /// use tickless::fs::File;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-set-len-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     let mut file = File::create(&path).await?;
    ///     file.write_all(b"hello, world").await?;
    ///     file.set_len(5).await?; // after the write, and with its error if it failed
    ///     assert_eq!(tickless::fs::read(&path).await?, b"hello");
    ///     file.set_len(7).await?; // longer: filled with zeros
    ///     assert_eq!(tickless::fs::read(&path).await?, b"hello\0\0");
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn set_len(&self, size: u64) -> io::Result<()> {
        let job = move |file: &StdFile, buf: &mut Buf| {
            Operation::Done(buf.give_back(file).and_then(|()| file.set_len(size)))
        };
        self.run(true, job, done).await
    }

    /// Waits for the write in flight, then flushes the file's data and metadata to the disk
    /// (`std::fs::File::sync_all`, `fsync(2)`).
    ///
    /// # Errors
    ///
    /// The error of an earlier write reported done; then as `std::fs::File::sync_all`.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures_lite::AsyncWriteExt;
    /// use tickless::fs::File;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-sync-all-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     let mut file = File::create(&path).await?;
    ///     file.write_all(b"saved").await?;
    ///     file.sync_all().await?; // written, and on the disk with the file's metadata
    ///     drop(file);
    ///     assert_eq!(tickless::fs::read_to_string(&path).await?, "saved");
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn sync_all(&self) -> io::Result<()> {
        self.run(true, |file, _| Operation::Done(file.sync_all()), done)
            .await
    }

    /// Waits for the write in flight, then flushes the file's data to the disk, and the
    /// metadata only as needed to read it back (`std::fs::File::sync_data`, `fdatasync(2)`).
    ///
    /// # Errors
    ///
    /// The error of an earlier write reported done; then as `std::fs::File::sync_data`.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures_lite::AsyncWriteExt;
    /// use tickless::fs::File;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-sync-data-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     let mut journal = File::create(&path).await?;
    ///     for record in [&b"one\n"[..], b"two\n"] {
    ///         journal.write_all(record).await?;
    ///         journal.sync_data().await?; // the record is on the disk
    ///     }
    ///     assert_eq!(tickless::fs::read_to_string(&path).await?, "one\ntwo\n");
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn sync_data(&self) -> io::Result<()> {
        self.run(true, |file, _| Operation::Done(file.sync_data()), done)
            .await
    }

    /// Changes the file's permissions (`std::fs::File::set_permissions`).
    ///
    /// # Errors
    ///
    /// As `std::fs::File::set_permissions`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::fs::Permissions;
    /// use std::os::unix::fs::PermissionsExt;
    /// use tickless::fs::File;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-permissions-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     let file = File::create(&path).await?;
    ///     file.set_permissions(Permissions::from_mode(0o600)).await?; // the owner's alone
    ///     assert_eq!(file.metadata().await?.permissions().mode() & 0o777, 0o600);
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn set_permissions(&self, perm: Permissions) -> io::Result<()> {
        let job = move |file: &StdFile, _: &mut Buf| Operation::Done(file.set_permissions(perm));
        self.run(false, job, done).await
    }

    /// A second handle to the same open file (`std::fs::File::try_clone`): the two share the
    /// cursor, each with its own buffer, so do not interleave their reads and writes.
    ///
    /// # Errors
    ///
    /// As `std::fs::File::try_clone` (`EMFILE`, ...).
    ///
    /// # Examples
    ///
    /// ```
    /// use futures_lite::AsyncWriteExt;
    /// use tickless::fs::File;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let name = format!("tickless-try-clone-doc-{}", std::process::id());
    ///     let path = std::env::temp_dir().join(name);
    ///     let mut file = File::create(&path).await?;
    ///     let mut twin = file.try_clone().await?;
    ///     file.write_all(b"hello").await?;
    ///     file.flush().await?; // done before the twin writes: they share the cursor
    ///     twin.write_all(b", world").await?; // after "hello", not over it
    ///     twin.flush().await?;
    ///     assert_eq!(tickless::fs::read_to_string(&path).await?, "hello, world");
    ///     tickless::fs::remove_file(&path).await
    /// })?;
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn try_clone(&self) -> io::Result<File> {
        let file = self
            .run(
                false,
                |file, _| Operation::Clone(file.try_clone()),
                |op| match op {
                    Operation::Clone(res) => Some(res),
                    _ => None,
                },
            )
            .await?;
        Ok(File::from_std(file))
    }

    /// The std file.
    fn std(&self) -> &Arc<StdFile> {
        self.std
            .as_ref()
            .expect("invariant: `std` is Some until into_std")
    }

    /// Runs `job` as the file's next operation, holding the turn: after the job in flight
    /// (whose outcome is settled), returning the pending error first if `take_error`. `result`
    /// picks the outcome out of the job's operation.
    async fn run<T>(
        &self,
        take_error: bool,
        job: impl FnOnce(&StdFile, &mut Buf) -> Operation + Send + 'static,
        result: fn(Operation) -> Option<io::Result<T>>,
    ) -> io::Result<T> {
        let _turn = self.turn().await;
        poll_fn(|cx| lock(&self.inner).poll_idle(cx)).await;
        {
            let mut inner = lock(&self.inner);
            if let Some(e) = inner.error.take_if(|_| take_error) {
                return Err(e);
            }
            inner.start(self.std(), job);
        }
        // Holding the turn, nobody else polls the job: its outcome comes back here.
        let op = poll_fn(|cx| lock(&self.inner).poll_job(cx))
            .await
            .expect("invariant: a job is in flight")?;
        result(op).expect("invariant: holding the turn, the job in flight is this method's")
    }

    /// Waits for the turn of the `&self` methods.
    async fn turn(&self) -> Turn<'_> {
        poll_fn(|cx| {
            let mut inner = lock(&self.inner);
            if !inner.turn_taken {
                inner.turn_taken = true;
                return Poll::Ready(Turn { file: self });
            }
            if !inner.turn_waiters.iter().any(|w| w.will_wake(cx.waker())) {
                inner.turn_waiters.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }
}

/// The outcome of a `Done` job.
fn done(op: Operation) -> Option<io::Result<()>> {
    match op {
        Operation::Done(res) => Some(res),
        _ => None,
    }
}

/// The turn of the `&self` methods, held while one of them drives the file; the `&mut self`
/// ones (the poll methods) need none, since no `Turn` can be alive while they run.
struct Turn<'a> {
    /// The file whose turn this is.
    file: &'a File,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let waiters = {
            let mut inner = lock(&self.file.inner);
            inner.turn_taken = false;
            mem::take(&mut inner.turn_waiters)
        };
        // All of them: one takes the turn, the rest wait again (a woken waiter may be gone).
        for w in waiters {
            wake_caught(w);
        }
    }
}

impl Drop for File {
    fn drop(&mut self) {
        // A job in flight holds its own clone and runs on (its handle detaches); the file is
        // closed by whichever of the two goes last.
        if let Some(std) = self.std.take() {
            close_on_pool(std);
        }
    }
}

impl From<StdFile> for File {
    /// [`File::from_std`].
    fn from(std: StdFile) -> File {
        File::from_std(std)
    }
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("File").field("std", self.std()).finish()
    }
}

impl AsRawFd for File {
    fn as_raw_fd(&self) -> RawFd {
        self.std().as_raw_fd()
    }
}

impl AsFd for File {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.std().as_fd()
    }
}

impl futures_io::AsyncRead for File {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        lock(&self.inner).poll_read(self.std(), cx, buf)
    }
}

impl futures_io::AsyncWrite for File {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        lock(&self.inner).poll_write(self.std(), cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        lock(&self.inner).poll_flush(cx)
    }

    /// Flushes; the file stays open until dropped.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        lock(&self.inner).poll_flush(cx)
    }
}

impl futures_io::AsyncSeek for File {
    fn poll_seek(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        pos: SeekFrom,
    ) -> Poll<io::Result<u64>> {
        lock(&self.inner).poll_seek(self.std(), cx, pos)
    }
}

/// tokio's traits, forwarding to the same state machine.
#[cfg(feature = "tokio-io")]
mod tokio_io {
    use std::task::ready;

    use super::*;
    use crate::fs::buf::MAX_BUF;

    impl tokio::io::AsyncRead for File {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            // Initialise no more than one job reads: keeps this free of `unsafe`, and cheap.
            let len = buf.remaining().min(MAX_BUF);
            let dst = buf.initialize_unfilled_to(len);
            let n = ready!(lock(&self.inner).poll_read(self.std(), cx, dst))?;
            buf.advance(n);
            Poll::Ready(Ok(()))
        }
    }

    impl tokio::io::AsyncWrite for File {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            lock(&self.inner).poll_write(self.std(), cx, buf)
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            lock(&self.inner).poll_flush(cx)
        }

        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            lock(&self.inner).poll_flush(cx)
        }
    }

    impl tokio::io::AsyncSeek for File {
        fn start_seek(self: Pin<&mut Self>, pos: SeekFrom) -> io::Result<()> {
            lock(&self.inner).start_seek(self.std(), pos)
        }

        fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
            lock(&self.inner).poll_complete(cx)
        }
    }
}
