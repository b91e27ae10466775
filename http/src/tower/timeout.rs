//! tower's own `timeout` middleware on the core's timer wheel: a request whose response is not
//! ready in time fails with an [`error::Elapsed`], boxed, for `HandleErrorLayer` to turn into a
//! response (the shape axum's examples use).
//!
//! The names and behaviour are `tower::timeout`'s (tower 0.5): [`Timeout::new`],
//! [`TimeoutLayer::new`], an error type `BoxError` and an `Elapsed` to test it against, so a
//! port changes the `use` line: `tower::timeout::TimeoutLayer` becomes
//! `tickless_http::tower::timeout::TimeoutLayer`, and `error.is::<tower::timeout::error::Elapsed>()`
//! stays as it is: [`error::Elapsed`] is tower's own type. tower's timer is tokio's,
//! which panics on a tickless core without the tokio context; this one is a
//! [`time::Sleep`] on the core's wheel, registered only when the service's
//! future is not ready at its first poll (which tower's, checking its deadline first, always
//! registers), at the runtime's default slack.
//!
//! For tower-http's variant, which answers `408 Request Timeout` instead of failing, see
//! [`TimeoutLayer`](crate::tower::TimeoutLayer).
//!
//! # Examples
//!
//! ```
//! use std::convert::Infallible;
//! use std::time::Duration;
//!
//! use tickless_http::tower::timeout::{error::Elapsed, TimeoutLayer};
//! use tower::{service_fn, ServiceBuilder, ServiceExt};
//!
//! async fn slow(_: ()) -> Result<&'static str, Infallible> {
//!     tickless::time::sleep(Duration::from_secs(60)).await;
//!     Ok("too late")
//! }
//!
//! let rt = tickless::Builder::new().start_paused(true).build()?;
//! rt.block_on(async {
//!     let svc = ServiceBuilder::new()
//!         .layer(TimeoutLayer::new(Duration::from_secs(5)))
//!         .service_fn(slow);
//!     let err = svc.oneshot(()).await.unwrap_err();
//!     assert!(err.is::<Elapsed>());
//!     assert_eq!(err.to_string(), "request timed out");
//! });
//! # std::io::Result::Ok(())
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tower_layer::Layer;
use tower_service::Service;

use tickless::time;

/// The error of a [`Timeout`] service: the service's own error, or [`error::Elapsed`], boxed
/// (tower's `BoxError`).
///
/// # Examples
///
/// Telling a timeout from the service's own errors, as a `HandleErrorLayer` function does:
///
/// ```
/// use http::StatusCode;
/// use tickless_http::tower::timeout::{error::Elapsed, BoxError};
///
/// fn status_of(err: &BoxError) -> StatusCode {
///     if err.is::<Elapsed>() {
///         StatusCode::REQUEST_TIMEOUT
///     } else {
///         StatusCode::INTERNAL_SERVER_ERROR
///     }
/// }
///
/// assert_eq!(status_of(&Elapsed::new().into()), StatusCode::REQUEST_TIMEOUT);
/// assert_eq!(status_of(&"database down".into()), StatusCode::INTERNAL_SERVER_ERROR);
/// ```
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The error a request that timed out fails with: tower's own.
pub mod error {
    /// The timeout elapsed before the service's response was ready: tower's
    /// `tower::timeout::error::Elapsed` itself (re-exported, not a look-alike), so that a
    /// `HandleErrorLayer` function written for tower, `err.is::<tower::timeout::error::Elapsed>()`,
    /// recognises this middleware's timeouts too.
    ///
    /// # Examples
    ///
    /// It comes boxed; `downcast_ref` or `is` finds it, under either name:
    ///
    /// ```
    /// use tickless_http::tower::timeout::{error::Elapsed, BoxError};
    ///
    /// let err: BoxError = Elapsed::new().into();
    /// assert!(err.downcast_ref::<Elapsed>().is_some());
    /// assert!(err.is::<tower::timeout::error::Elapsed>()); // the same type
    /// assert_eq!(err.to_string(), "request timed out");
    /// ```
    pub use tower::timeout::error::Elapsed;
}

/// Applies [`Timeout`] to a service.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
///
/// use tickless_http::tower::timeout::TimeoutLayer;
/// use tower::{service_fn, Layer, ServiceExt};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let double = service_fn(|x: u32| async move { Ok::<_, Infallible>(x * 2) });
///     let svc = TimeoutLayer::new(Duration::from_secs(5)).layer(double);
///     assert_eq!(svc.oneshot(21).await.unwrap(), 42); // in time
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TimeoutLayer {
    timeout: Duration,
}

impl TimeoutLayer {
    /// A layer whose requests fail with [`error::Elapsed`] after `timeout`.
    pub const fn new(timeout: Duration) -> TimeoutLayer {
        TimeoutLayer { timeout }
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout::new(inner, self.timeout)
    }
}

/// A service whose responses fail with [`error::Elapsed`] when not ready within a duration.
///
/// # Examples
///
/// The service's own errors come through, boxed:
///
/// ```
/// use std::time::Duration;
///
/// use tickless_http::tower::timeout::{error::Elapsed, Timeout};
/// use tower::{service_fn, ServiceExt};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let failing = service_fn(|_: ()| async { Err::<(), _>(std::io::Error::other("down")) });
///     let svc = Timeout::new(failing, Duration::from_secs(5));
///     let err = svc.oneshot(()).await.unwrap_err();
///     assert!(err.is::<std::io::Error>() && !err.is::<Elapsed>());
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Timeout<S> {
    inner: S,
    timeout: Duration,
}

impl<S> Timeout<S> {
    /// `inner`, with `timeout` on each response.
    pub const fn new(inner: S, timeout: Duration) -> Timeout<S> {
        Timeout { inner, timeout }
    }

    inner_service_accessors!();
}

impl<S, Request> Service<Request> for Timeout<S>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request) -> ResponseFuture<S::Future> {
        ResponseFuture {
            inner: time::timeout(self.timeout, self.inner.call(request)),
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`Timeout`]: `Send`, and panicking outside a runtime, as
    /// tower-http's variant's [`ResponseFuture`](crate::tower::ResponseFuture) is and does.
    ///
    /// # Examples
    ///
    /// Called by hand and run as a task of its own (`spawn` wants a `Send` future):
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use tickless_http::tower::timeout::{error::Elapsed, ResponseFuture, Timeout};
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let slow = service_fn(|_: ()| async {
    ///         tickless::time::sleep(Duration::from_secs(2)).await;
    ///         Ok::<_, Infallible>("too late")
    ///     });
    ///     let mut svc = Timeout::new(slow, Duration::from_secs(1));
    ///     let fut: ResponseFuture<_> = svc.ready().await.unwrap().call(());
    ///     let err = tickless::spawn(fut).await.unwrap().unwrap_err();
    ///     assert!(err.is::<Elapsed>());
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    #[derive(Debug)]
    #[must_use = "futures do nothing unless awaited"]
    pub struct ResponseFuture<F> {
        #[pin]
        inner: time::Timeout<F>,
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(match ready!(self.project().inner.poll(cx)) {
            Ok(answered) => answered.map_err(Into::into),
            Err(time::Elapsed { .. }) => Err(error::Elapsed::new().into()),
        })
    }
}
