//! `timeout`: a future with a deadline.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::time::sleep::sleep_for;
use crate::time::{sleep_until, Instant, Sleep};

/// The error of a [`Timeout`] whose deadline passed first.
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
pub fn timeout<F: IntoFuture>(duration: Duration, future: F) -> Timeout<F::IntoFuture> {
    Timeout {
        future: future.into_future(),
        sleep: sleep_for(duration),
    }
}

/// Runs `future` until `deadline`; see [`timeout`].
pub fn timeout_at<F: IntoFuture>(deadline: Instant, future: F) -> Timeout<F::IntoFuture> {
    Timeout {
        future: future.into_future(),
        sleep: sleep_until(deadline),
    }
}

pin_project_lite::pin_project! {
    /// The future of [`timeout`] and [`timeout_at`].
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
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The inner future, dropping the deadline.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

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
