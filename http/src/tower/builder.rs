//! `ServiceBuilderExt`: tower's `ServiceBuilder::timeout(d)` shorthand, on the core's wheel.

use std::time::Duration;

use tower::ServiceBuilder;
use tower_layer::Stack;

use super::timeout::TimeoutLayer;

/// Shorthands on tower's [`ServiceBuilder`] for this module's layers.
///
/// tower's own `ServiceBuilder::timeout(d)` (its `timeout` feature, which this crate turns on
/// for tower's `Elapsed`) keeps tokio's timer: on a tickless core without the tokio context it
/// panics at the first request that has to wait. [`tickless_timeout`](Self::tickless_timeout)
/// is the same layer on the core's wheel; a port renames the call. It is not named `timeout`
/// because an inherent method of the same name would always win over it.
///
/// # Examples
///
/// tower's shape, with `HandleErrorLayer`-style error handling (on paused time, so that no
/// real minute passes):
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
///
/// use tickless_http::tower::ServiceBuilderExt;
/// use tower::{ServiceBuilder, ServiceExt};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let svc = ServiceBuilder::new()
///         .tickless_timeout(Duration::from_secs(5)) // was: .timeout(Duration::from_secs(5))
///         .service_fn(|_: ()| async {
///             tickless::time::sleep(Duration::from_secs(60)).await;
///             Ok::<_, Infallible>("too late")
///         });
///     let err = svc.oneshot(()).await.unwrap_err();
///     assert!(err.is::<tower::timeout::error::Elapsed>()); // tower's own error type
/// });
/// # std::io::Result::Ok(())
/// ```
pub trait ServiceBuilderExt<L> {
    /// Adds tower's error-returning timeout ([`timeout::TimeoutLayer`](super::timeout)) on the
    /// core's wheel: a response not ready within `timeout` fails with tower's
    /// `timeout::error::Elapsed`, boxed. What tower's `ServiceBuilder::timeout` does with
    /// tokio's timer.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use tickless_http::tower::ServiceBuilderExt;
    /// use tower::{ServiceBuilder, ServiceExt};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let double = ServiceBuilder::new()
    ///         .tickless_timeout(Duration::from_secs(5))
    ///         .service_fn(|x: u32| async move { Ok::<_, Infallible>(x * 2) });
    ///     assert_eq!(double.oneshot(21).await.unwrap(), 42); // in time: no timer at all
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    fn tickless_timeout(self, timeout: Duration) -> ServiceBuilder<Stack<TimeoutLayer, L>>;
}

impl<L> ServiceBuilderExt<L> for ServiceBuilder<L> {
    fn tickless_timeout(self, timeout: Duration) -> ServiceBuilder<Stack<TimeoutLayer, L>> {
        self.layer(TimeoutLayer::new(timeout))
    }
}
