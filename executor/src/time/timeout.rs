//! `timeout`: a future with a deadline.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::time::sleep::sleep_for;
use crate::time::{sleep_until, Instant, Sleep};

/// The error of a [`Timeout`] whose deadline passed first.
///
/// # Examples
///
/// ```
/// use std::future::pending;
/// use std::io::ErrorKind;
/// use std::time::Duration;
/// use tickless::time::{timeout, Elapsed};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let err: Elapsed = timeout(Duration::from_secs(1), pending::<()>()).await.unwrap_err();
///     assert_eq!(err.to_string(), "deadline has elapsed");
///     let err = std::io::Error::from(err); // what `?` does in an `io::Result` function
///     assert_eq!(err.kind(), ErrorKind::TimedOut);
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(_: Elapsed) -> std::io::Error {
        std::io::ErrorKind::TimedOut.into()
    }
}

/// Runs `future` with a deadline `duration` from now: `Ok(output)` if it completes first,
/// `Err(Elapsed)` otherwise (the future is then dropped with the `Timeout`).
///
/// The future is polled before the deadline is checked, so a ready future wins even with
/// `Duration::ZERO`, and a timeout whose future completes at its first poll registers no timer
/// at all. One that is cancelled later costs an O(1) insert and cancel and no system call.
///
/// The timer's slack is the runtime's default, a share of `duration` that grows with it, at most
/// 1,024 µs ([`Builder::default_slack_growing`]): a timeout of a second may fire up to about a
/// millisecond late, so that the timeouts that do fire share wakeups. The deadline itself is
/// never early.
///
/// [`Builder::default_slack_growing`]: crate::Builder::default_slack_growing
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::time::{sleep, timeout};
///
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     assert_eq!(timeout(Duration::from_secs(1), async { 7 }).await, Ok(7));
///     let slow = sleep(Duration::from_secs(60));
///     assert!(timeout(Duration::from_millis(1), slow).await.is_err());
/// });
/// # std::io::Result::Ok(())
/// ```
#[inline]
pub fn timeout<F: IntoFuture>(duration: Duration, future: F) -> Timeout<F::IntoFuture> {
    Timeout {
        future: future.into_future(),
        sleep: sleep_for(duration),
    }
}

/// Runs `future` until `deadline`; see [`timeout`].
///
/// # Examples
///
/// One deadline for several steps:
///
/// ```
/// use std::time::Duration;
/// use tickless::time::{sleep, timeout_at, Instant};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let deadline = Instant::now() + Duration::from_secs(1);
///     assert_eq!(timeout_at(deadline, async { 7 }).await, Ok(7));
///     let slow = sleep(Duration::from_secs(60));
///     assert!(timeout_at(deadline, slow).await.is_err());
///     assert!(Instant::now() >= deadline);
/// });
/// # std::io::Result::Ok(())
/// ```
pub fn timeout_at<F: IntoFuture>(deadline: Instant, future: F) -> Timeout<F::IntoFuture> {
    Timeout {
        future: future.into_future(),
        sleep: sleep_until(deadline),
    }
}

pin_project_lite::pin_project! {
    /// The future of [`timeout`] and [`timeout_at`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{timeout, Timeout};
    /// use tickless::JoinHandle;
    ///
    /// /// A task's handle, with the deadline its result is due by.
    /// struct Due(Timeout<JoinHandle<u32>>);
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let due = Due(timeout(Duration::from_secs(1), tickless::spawn(async { 7 })));
    ///     assert_eq!(due.0.await.unwrap().unwrap(), 7); // in time, and no panic
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    #[derive(Debug)]
    #[must_use = "futures do nothing unless awaited"]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        sleep: Sleep,
    }
}

impl<F> Timeout<F> {
    /// The inner future.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{sleep, timeout, Instant};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let guarded = timeout(Duration::from_secs(1), sleep(Duration::from_secs(60)));
    ///     let nap = guarded.get_ref(); // the `Sleep`
    ///     assert_eq!(nap.deadline(), Instant::now() + Duration::from_secs(60));
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The inner future, mutably, as tokio's `Timeout::get_mut` (the deadline is kept).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::timeout;
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let mut guarded = timeout(Duration::from_secs(1), tickless::spawn(async { 7 }));
    ///     guarded.get_mut().abort(); // the task, reached through the timeout
    ///     assert!(guarded.await.unwrap().unwrap_err().is_cancelled());
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// The inner future, dropping the deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{sleep, timeout};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let task = tickless::spawn(sleep(Duration::from_secs(60)));
    ///     let mut guarded = timeout(Duration::from_secs(1), task);
    ///     assert!((&mut guarded).await.is_err()); // not done within a second
    ///     let task = guarded.into_inner(); // dropping the handle would leave the task running
    ///     task.abort();
    ///     assert!(task.await.unwrap_err().is_cancelled());
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(out) = this.future.poll(cx) {
            return Poll::Ready(Ok(out));
        }
        match this.sleep.poll_sleep(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}
