//! `yield_now`: let the core's other tasks run.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Yields once to the other tasks of this core.
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(tickless::task::yield_now());
/// # std::io::Result::Ok(())
/// ```
pub async fn yield_now() {
    /// Pending once, waking itself.
    struct YieldNow(bool);
    impl Future for YieldNow {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                return Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
    YieldNow(false).await
}
