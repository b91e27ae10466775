//! `RequestBodyTimeoutLayer`: a deadline on each of a request body's frames.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Request;
use http_body::{Body, Frame, SizeHint};
use tower_layer::Layer;
use tower_service::Service;

use tickless::time::{self, Sleep};

/// The error type of a [`TimeoutBody`], as tower-http's (`tower::BoxError`).
type BoxError = Box<dyn Error + Send + Sync>;

/// Wraps each request's body in a [`TimeoutBody`]: tower-http's
/// `timeout::RequestBodyTimeoutLayer`, on the core's timer wheel.
///
/// # Examples
///
/// A body that stalls for a minute, read with a 10 s timeout (paused time: no real wait):
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
///
/// use bytes::Bytes;
/// use http::{Request, Response};
/// use http_body_util::{BodyExt, Empty, StreamBody};
/// use http_body::Frame;
/// use tickless_http::tower::{RequestBodyTimeoutLayer, TimeoutBody, TimeoutError};
/// use tower::{ServiceBuilder, ServiceExt};
///
/// type Stalling = StreamBody<futures_lite::stream::Boxed<Result<Frame<Bytes>, Infallible>>>;
///
/// async fn upload(
///     req: Request<TimeoutBody<Stalling>>,
/// ) -> Result<Response<Empty<Bytes>>, Infallible> {
///     let err = req.into_body().collect().await.unwrap_err();
///     assert!(err.is::<TimeoutError>());
///     Ok(Response::new(Empty::new()))
/// }
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let stall = futures_lite::stream::once_future(async {
///         tickless::time::sleep(Duration::from_secs(60)).await;
///         Ok(Frame::data(Bytes::from("late")))
///     });
///     let svc = ServiceBuilder::new()
///         .layer(RequestBodyTimeoutLayer::new(Duration::from_secs(10)))
///         .service_fn(upload);
///     svc.oneshot(Request::new(StreamBody::new(futures_lite::stream::StreamExt::boxed(stall))))
///         .await
///         .unwrap();
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RequestBodyTimeoutLayer {
    timeout: Duration,
}

impl RequestBodyTimeoutLayer {
    /// A layer whose request bodies fail when a frame takes longer than `timeout` to come.
    ///
    /// # Examples
    ///
    /// A body that is all there passes through, at no cost:
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http::{Request, Response};
    /// use http_body_util::{BodyExt, Full};
    /// use tickless_http::tower::{RequestBodyTimeoutLayer, TimeoutBody};
    /// use tower::{service_fn, Layer, ServiceExt};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let size = service_fn(|req: Request<TimeoutBody<Full<Bytes>>>| async move {
    ///         let body = req.into_body().collect().await.unwrap().to_bytes();
    ///         Ok::<_, Infallible>(Response::new(body.len()))
    ///     });
    ///     let svc = RequestBodyTimeoutLayer::new(Duration::from_secs(10)).layer(size);
    ///     let res = svc.oneshot(Request::new(Full::from("hello"))).await.unwrap();
    ///     assert_eq!(*res.body(), 5);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn new(timeout: Duration) -> Self {
        RequestBodyTimeoutLayer { timeout }
    }
}

impl<S> Layer<S> for RequestBodyTimeoutLayer {
    type Service = RequestBodyTimeout<S>;

    fn layer(&self, inner: S) -> RequestBodyTimeout<S> {
        RequestBodyTimeout::new(inner, self.timeout)
    }
}

/// A service whose request bodies are [`TimeoutBody`]s: tower-http's
/// `timeout::RequestBodyTimeout`. Made by [`RequestBodyTimeoutLayer`], or directly.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
///
/// use bytes::Bytes;
/// use http::{Request, Response};
/// use http_body_util::{BodyExt, Full};
/// use tickless_http::tower::{RequestBodyTimeout, TimeoutBody};
/// use tower::{service_fn, ServiceExt};
///
/// let rt = tickless::Runtime::new()?;
/// let echoed = rt.block_on(async {
///     let echo = service_fn(|req: Request<TimeoutBody<Full<Bytes>>>| async move {
///         let body = req.into_body().collect().await?.to_bytes(); // a ready body: no timer
///         Ok::<_, Box<dyn std::error::Error + Send + Sync>>(Response::new(Full::new(body)))
///     });
///     let svc = RequestBodyTimeout::new(echo, Duration::from_secs(1));
///     let res = svc.oneshot(Request::new(Full::from("hello"))).await.unwrap();
///     res.into_body().collect().await.unwrap().to_bytes()
/// });
/// assert_eq!(echoed, "hello");
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RequestBodyTimeout<S> {
    inner: S,
    timeout: Duration,
}

impl<S> RequestBodyTimeout<S> {
    /// `inner`, its request bodies failing when a frame takes longer than `timeout` to come.
    ///
    /// # Examples
    ///
    /// A body whose first frame never comes fails after 10 s (on paused time, so that no real
    /// time passes):
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http::{Request, Response};
    /// use http_body::Frame;
    /// use http_body_util::{BodyExt, StreamBody};
    /// use tickless_http::tower::{RequestBodyTimeout, TimeoutBody, TimeoutError};
    /// use tower::{service_fn, ServiceExt};
    ///
    /// type Never = StreamBody<futures_lite::stream::Pending<Result<Frame<Bytes>, Infallible>>>;
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let upload = service_fn(|req: Request<TimeoutBody<Never>>| async move {
    ///         let err = req.into_body().collect().await.unwrap_err();
    ///         Ok::<_, Infallible>(Response::new(err.is::<TimeoutError>()))
    ///     });
    ///     let svc = RequestBodyTimeout::new(upload, Duration::from_secs(10));
    ///     let never = StreamBody::new(futures_lite::stream::pending());
    ///     let timed_out = svc.oneshot(Request::new(never)).await.unwrap();
    ///     assert!(*timed_out.body());
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn new(service: S, timeout: Duration) -> Self {
        RequestBodyTimeout {
            inner: service,
            timeout,
        }
    }

    /// A [`RequestBodyTimeoutLayer`].
    ///
    /// `S` plays no part here, but the call must name one (`RequestBodyTimeout::<()>::layer`),
    /// as with tower-http's; [`RequestBodyTimeoutLayer::new`] is the same layer without that.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http::{Request, Response};
    /// use http_body_util::Full;
    /// use tickless_http::tower::{RequestBodyTimeout, TimeoutBody};
    /// use tower::{ServiceBuilder, ServiceExt};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let svc = ServiceBuilder::new()
    ///         .layer(RequestBodyTimeout::<()>::layer(Duration::from_secs(10)))
    ///         .service_fn(|_: Request<TimeoutBody<Full<Bytes>>>| async {
    ///             Ok::<_, Infallible>(Response::new(()))
    ///         });
    ///     svc.oneshot(Request::new(Full::from("hello"))).await.unwrap();
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn layer(timeout: Duration) -> RequestBodyTimeoutLayer {
        RequestBodyTimeoutLayer::new(timeout)
    }

    inner_service_accessors!();
}

impl<S, ReqBody> Service<Request<ReqBody>> for RequestBodyTimeout<S>
where
    S: Service<Request<TimeoutBody<ReqBody>>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> S::Future {
        let timeout = self.timeout;
        self.inner
            .call(req.map(|body| TimeoutBody::new(timeout, body)))
    }
}

pin_project_lite::pin_project! {
    /// A body whose every frame must come within a duration of being asked for: tower-http's
    /// `timeout::TimeoutBody`, on the core's timer wheel.
    ///
    /// The clock starts when a frame is polled for and the body has none ready, and stops when
    /// the frame comes: a body may take longer than the duration in all, as long as no one
    /// frame does, and the time the reader spends between frames does not count. A late frame
    /// makes the body yield a [`TimeoutError`] (boxed, as the body's error type is
    /// `Box<dyn Error + Send + Sync>`: the inner body's errors are boxed too), and the same
    /// error again if polled after that.
    ///
    /// A frame that is ready when asked for costs nothing; one the reader waits for costs an
    /// insert and a cancel on the core's wheel. A frame and the deadline reached at the same
    /// poll: the frame wins. `size_hint` and `is_end_stream` are the inner body's.
    ///
    /// `Send` and `Sync` when the inner body is (see the [module docs](crate::tower#send)).
    ///
    /// # Panics
    ///
    /// When polled outside a tickless runtime and the inner body has no frame ready.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http_body_util::{BodyExt, Full};
    /// use tickless_http::tower::TimeoutBody;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let body = TimeoutBody::new(Duration::from_secs(1), Full::new(Bytes::from("hi")));
    ///     assert_eq!(body.collect().await.unwrap().to_bytes(), "hi");
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    #[derive(Debug)]
    pub struct TimeoutBody<B> {
        timeout: Duration,
        // The wait for the frame asked for, from when the body first had none ready.
        sleep: Option<Sleep>,
        #[pin]
        body: B,
    }
}

impl<B> TimeoutBody<B> {
    /// `body`, each of whose frames must come within `timeout` of being asked for.
    ///
    /// # Examples
    ///
    /// A frame that comes a minute late, with a 10 s timeout (on paused time, so that no real
    /// minute passes):
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use bytes::Bytes;
    /// use http_body::Frame;
    /// use http_body_util::{BodyExt, StreamBody};
    /// use tickless_http::tower::{TimeoutBody, TimeoutError};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let late = futures_lite::stream::once_future(async {
    ///         tickless::time::sleep(Duration::from_secs(60)).await;
    ///         Ok::<_, std::io::Error>(Frame::data(Bytes::from("late")))
    ///     });
    ///     let body = TimeoutBody::new(Duration::from_secs(10), StreamBody::new(Box::pin(late)));
    ///     assert!(body.collect().await.unwrap_err().is::<TimeoutError>());
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn new(timeout: Duration, body: B) -> Self {
        TimeoutBody {
            timeout,
            sleep: None,
            body,
        }
    }
}

impl<B> Body for TimeoutBody<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, BoxError>>> {
        let this = self.project();
        if this.sleep.as_ref().is_some_and(Sleep::is_elapsed) {
            return Poll::Ready(Some(Err(Box::new(TimeoutError(())))));
        }
        if let Poll::Ready(frame) = this.body.poll_frame(cx) {
            // The frame came: the wait's timer (if it had to wait) is cancelled.
            *this.sleep = None;
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let timeout = *this.timeout;
        let sleep = this.sleep.get_or_insert_with(|| time::sleep(timeout));
        match Pin::new(sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(TimeoutError(()))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The error of a [`TimeoutBody`] whose frame came too late, as tower-http's
/// `timeout::TimeoutError`: it comes boxed, to find with `downcast_ref` or `is`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use bytes::Bytes;
/// use http_body_util::{BodyExt, StreamBody};
/// use http_body::Frame;
/// use tickless_http::tower::{TimeoutBody, TimeoutError};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     type Never = futures_lite::stream::Pending<Result<Frame<Bytes>, std::io::Error>>;
///     let never = StreamBody::new(futures_lite::stream::pending()) as StreamBody<Never>;
///     let err = TimeoutBody::new(Duration::from_secs(5), never).collect().await.unwrap_err();
///     let timeout: &TimeoutError = err.downcast_ref().unwrap();
///     assert_eq!(timeout.to_string(), "data was not received within the designated timeout");
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeoutError(());

impl fmt::Display for TimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("data was not received within the designated timeout")
    }
}

impl Error for TimeoutError {}
