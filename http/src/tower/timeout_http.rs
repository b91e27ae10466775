//! `TimeoutLayer`: a request's whole response with a deadline, answered with a status code.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use tower_layer::Layer;
use tower_service::Service;

use tickless::time;

/// Applies [`Timeout`] to a service: tower-http's `timeout::TimeoutLayer`, on the core's timer
/// wheel.
///
/// A request whose response is not ready within the duration is answered with an empty body
/// (the body type's `Default`) and `408 Request Timeout`, or the status code given to
/// [`with_status_code`](Self::with_status_code); the service's future is dropped. The error
/// type is the service's own: `Infallible` stays `Infallible`. See the [module
/// docs](crate::tower) for what it costs and how it differs from tower-http's.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
///
/// use bytes::Bytes;
/// use http::{Request, Response, StatusCode};
/// use http_body_util::Full;
/// use tickless_http::tower::TimeoutLayer;
/// use tower::{ServiceBuilder, ServiceExt};
///
/// async fn slow(_: Request<Full<Bytes>>) -> Result<Response<Full<Bytes>>, Infallible> {
///     tickless::time::sleep(Duration::from_secs(60)).await;
///     Ok(Response::new(Full::from("too late")))
/// }
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let svc = ServiceBuilder::new()
///         .layer(TimeoutLayer::with_status_code(
///             StatusCode::GATEWAY_TIMEOUT,
///             Duration::from_secs(5),
///         ))
///         .service_fn(slow);
///     let res = svc.oneshot(Request::new(Full::default())).await.unwrap();
///     assert_eq!(res.status(), StatusCode::GATEWAY_TIMEOUT);
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TimeoutLayer {
    timeout: Duration,
    status_code: StatusCode,
}

impl TimeoutLayer {
    /// A layer whose requests time out after `timeout` with `408 Request Timeout`.
    ///
    /// (tower-http 0.6.7 deprecated its `new` for [`with_status_code`](Self::with_status_code),
    /// so that the status is spelled out; both are here, and this one is not deprecated.)
    ///
    /// # Examples
    ///
    /// On paused time, so that no real minute passes:
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http::{Request, Response, StatusCode};
    /// use http_body_util::Empty;
    /// use tickless_http::tower::TimeoutLayer;
    /// use tower::{service_fn, Layer, ServiceExt};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let slow = service_fn(|_: Request<()>| async {
    ///         tickless::time::sleep(Duration::from_secs(60)).await;
    ///         Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
    ///     });
    ///     let svc = TimeoutLayer::new(Duration::from_secs(10)).layer(slow);
    ///     let res = svc.oneshot(Request::new(())).await.unwrap();
    ///     assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn new(timeout: Duration) -> Self {
        Self::with_status_code(StatusCode::REQUEST_TIMEOUT, timeout)
    }

    /// A layer whose requests time out after `timeout` with `status_code`.
    ///
    /// # Examples
    ///
    /// On paused time, so that no real minute passes:
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http::{Request, Response, StatusCode};
    /// use http_body_util::Empty;
    /// use tickless_http::tower::TimeoutLayer;
    /// use tower::{service_fn, Layer, ServiceExt};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let slow = service_fn(|_: Request<()>| async {
    ///         tickless::time::sleep(Duration::from_secs(60)).await;
    ///         Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
    ///     });
    ///     let ten_s = Duration::from_secs(10);
    ///     let layer = TimeoutLayer::with_status_code(StatusCode::SERVICE_UNAVAILABLE, ten_s);
    ///     let res = layer.layer(slow).oneshot(Request::new(())).await.unwrap();
    ///     assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn with_status_code(status_code: StatusCode, timeout: Duration) -> Self {
        TimeoutLayer {
            timeout,
            status_code,
        }
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout::with_status_code(inner, self.status_code, self.timeout)
    }
}

/// A service whose responses have a deadline: tower-http's `timeout::Timeout`, on the core's
/// timer wheel. Made by [`TimeoutLayer`], or directly.
///
/// The deadline is taken when the request is [`call`](Service::call)ed; the timer is
/// registered only if the service's future is not ready at its first poll.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
///
/// use http::{Request, Response, StatusCode};
/// use http_body_util::Empty;
/// use bytes::Bytes;
/// use tickless_http::tower::Timeout;
/// use tower::{service_fn, ServiceExt};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let fast = service_fn(|_: Request<()>| async {
///         Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
///     });
///     let svc = Timeout::new(fast, Duration::from_secs(1));
///     let res = svc.oneshot(Request::new(())).await.unwrap();
///     assert_eq!(res.status(), StatusCode::OK);
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Timeout<S> {
    inner: S,
    timeout: Duration,
    status_code: StatusCode,
}

impl<S> Timeout<S> {
    /// `inner` with requests that time out after `timeout` with `408 Request Timeout`.
    ///
    /// # Examples
    ///
    /// On paused time, so that no real minute passes:
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http::{Request, Response, StatusCode};
    /// use http_body_util::Empty;
    /// use tickless_http::tower::Timeout;
    /// use tower::{service_fn, ServiceExt};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let slow = service_fn(|_: Request<()>| async {
    ///         tickless::time::sleep(Duration::from_secs(60)).await;
    ///         Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
    ///     });
    ///     let svc = Timeout::new(slow, Duration::from_secs(10));
    ///     let res = svc.oneshot(Request::new(())).await.unwrap();
    ///     assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn new(inner: S, timeout: Duration) -> Self {
        Self::with_status_code(inner, StatusCode::REQUEST_TIMEOUT, timeout)
    }

    /// `inner` with requests that time out after `timeout` with `status_code`.
    ///
    /// # Examples
    ///
    /// On paused time, so that no real minute passes:
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http::{Request, Response, StatusCode};
    /// use http_body_util::Empty;
    /// use tickless_http::tower::Timeout;
    /// use tower::{service_fn, ServiceExt};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let slow = service_fn(|_: Request<()>| async {
    ///         tickless::time::sleep(Duration::from_secs(60)).await;
    ///         Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
    ///     });
    ///     let ten_s = Duration::from_secs(10);
    ///     let svc = Timeout::with_status_code(slow, StatusCode::GATEWAY_TIMEOUT, ten_s);
    ///     let res = svc.oneshot(Request::new(())).await.unwrap();
    ///     assert_eq!(res.status(), StatusCode::GATEWAY_TIMEOUT);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn with_status_code(inner: S, status_code: StatusCode, timeout: Duration) -> Self {
        Timeout {
            inner,
            timeout,
            status_code,
        }
    }

    /// A [`TimeoutLayer`] with `408 Request Timeout`.
    ///
    /// `S` plays no part here, but the call must name one (`Timeout::<()>::layer`), as with
    /// tower-http's; [`TimeoutLayer::new`] is the same layer without that.
    ///
    /// # Examples
    ///
    /// On paused time, so that no real minute passes:
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http::{Request, Response, StatusCode};
    /// use http_body_util::Empty;
    /// use tickless_http::tower::Timeout;
    /// use tower::{service_fn, ServiceBuilder, ServiceExt};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let slow = service_fn(|_: Request<()>| async {
    ///         tickless::time::sleep(Duration::from_secs(60)).await;
    ///         Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
    ///     });
    ///     let svc = ServiceBuilder::new()
    ///         .layer(Timeout::<()>::layer(Duration::from_secs(10)))
    ///         .service(slow);
    ///     let res = svc.oneshot(Request::new(())).await.unwrap();
    ///     assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn layer(timeout: Duration) -> TimeoutLayer {
        TimeoutLayer::new(timeout)
    }

    /// A [`TimeoutLayer`] with `status_code`.
    ///
    /// `S` plays no part here, but the call must name one (`Timeout::<()>::...`), as with
    /// tower-http's; [`TimeoutLayer::with_status_code`] is the same layer without that.
    ///
    /// # Examples
    ///
    /// On paused time, so that no real minute passes:
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http::{Request, Response, StatusCode};
    /// use http_body_util::Empty;
    /// use tickless_http::tower::Timeout;
    /// use tower::{service_fn, ServiceBuilder, ServiceExt};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let slow = service_fn(|_: Request<()>| async {
    ///         tickless::time::sleep(Duration::from_secs(60)).await;
    ///         Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
    ///     });
    ///     let ten_s = Duration::from_secs(10);
    ///     let layer = Timeout::<()>::layer_with_status_code(StatusCode::GATEWAY_TIMEOUT, ten_s);
    ///     let svc = ServiceBuilder::new().layer(layer).service(slow);
    ///     let res = svc.oneshot(Request::new(())).await.unwrap();
    ///     assert_eq!(res.status(), StatusCode::GATEWAY_TIMEOUT);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn layer_with_status_code(status_code: StatusCode, timeout: Duration) -> TimeoutLayer {
        TimeoutLayer::with_status_code(status_code, timeout)
    }

    inner_service_accessors!();
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for Timeout<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    ResBody: Default,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        ResponseFuture::new(self.inner.call(req), self.timeout, self.status_code)
    }
}

impl<F: Future> ResponseFuture<F> {
    /// `inner` with a deadline `timeout` from now, answered with `status_code` when it passes
    /// (also the any-body timeout's and `tickless_http`'s request timeout's future).
    pub(crate) fn new(inner: F, timeout: Duration, status_code: StatusCode) -> Self {
        ResponseFuture {
            inner: time::timeout(timeout, inner),
            status_code,
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`Timeout`]: the service's future and a
    /// [`time::Timeout`](tickless::time::Timeout) around it.
    ///
    /// `Send` when the service's future is (see the [module docs](crate::tower#send)).
    ///
    /// # Panics
    ///
    /// When polled outside a tickless runtime, unless the service's future is ready at once.
    ///
    /// # Examples
    ///
    /// Called by hand and run as a task of its own (`spawn` wants a `Send` future):
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http::{Request, Response, StatusCode};
    /// use http_body_util::Empty;
    /// use tickless_http::tower::{ResponseFuture, Timeout};
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let mut svc = Timeout::new(
    ///         service_fn(|_: Request<()>| async {
    ///             tickless::time::sleep(Duration::from_secs(2)).await;
    ///             Ok::<_, Infallible>(Response::new(Empty::<Bytes>::new()))
    ///         }),
    ///         Duration::from_secs(1),
    ///     );
    ///     let fut: ResponseFuture<_> = svc.ready().await.unwrap().call(Request::new(()));
    ///     let res = tickless::spawn(fut).await.unwrap().unwrap();
    ///     assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    #[derive(Debug)]
    #[must_use = "futures do nothing unless awaited"]
    pub struct ResponseFuture<F> {
        #[pin]
        inner: time::Timeout<F>,
        status_code: StatusCode,
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Default,
{
    type Output = Result<Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        Poll::Ready(match ready!(this.inner.poll(cx)) {
            Ok(answered) => answered,
            Err(time::Elapsed { .. }) => {
                let mut res = Response::new(B::default());
                *res.status_mut() = *this.status_code;
                Ok(res)
            }
        })
    }
}
