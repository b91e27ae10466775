//! `AnyBodyTimeoutLayer`: the 408 of [`TimeoutLayer`](super::TimeoutLayer) in front of a
//! service whose response body has no `Default`.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use tower_layer::Layer;
use tower_service::Service;

use super::ResponseFuture;

/// [`TimeoutLayer`](super::TimeoutLayer) for any response body: a request whose response is
/// not ready within the duration is answered `408 Request Timeout` (or the status code given)
/// with an empty body, and the service's future is dropped; the response body becomes
/// [`OrEmpty<B>`], the service's body or that empty one.
///
/// tower-http's `TimeoutLayer` (and [`TimeoutLayer`](super::TimeoutLayer), which keeps its
/// signature) writes its 408 with the body type's `Default`, so it compiles only in front of
/// services whose body has one: not outside tower-http's `TraceLayer` or `CompressionLayer`,
/// whose bodies have none. This one goes in any position. The timer is the same: a
/// [`time::Sleep`](tickless::time::Sleep) on the core's wheel, registered only if the response is
/// not ready at the first poll.
///
/// # Examples
///
/// Outermost, around a service whose body (`StreamBody`) has no `Default`:
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
///
/// use bytes::Bytes;
/// use http::{Request, Response, StatusCode};
/// use http_body_util::{BodyExt, StreamBody};
/// use hyper::body::Frame;
/// use tickless_http::tower::AnyBodyTimeoutLayer;
/// use tower::{ServiceBuilder, ServiceExt};
///
/// type Stream = futures_lite::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, Infallible>>>;
///
/// async fn slow(_: Request<()>) -> Result<Response<StreamBody<Stream>>, Infallible> {
///     tickless::time::sleep(Duration::from_secs(60)).await;
///     let frames = vec![Ok(Frame::data(Bytes::from("late")))];
///     Ok(Response::new(StreamBody::new(futures_lite::stream::iter(frames))))
/// }
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let svc = ServiceBuilder::new()
///         .layer(AnyBodyTimeoutLayer::new(Duration::from_secs(10)))
///         .service_fn(slow);
///     let res = svc.oneshot(Request::new(())).await.unwrap();
///     assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
///     assert!(res.into_body().collect().await.unwrap().to_bytes().is_empty());
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct AnyBodyTimeoutLayer {
    timeout: Duration,
    status_code: StatusCode,
}

impl AnyBodyTimeoutLayer {
    /// A layer whose requests time out after `timeout` with `408 Request Timeout`. See the
    /// example on [`AnyBodyTimeoutLayer`].
    pub fn new(timeout: Duration) -> Self {
        Self::with_status_code(StatusCode::REQUEST_TIMEOUT, timeout)
    }

    /// A layer whose requests time out after `timeout` with `status_code`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use http::StatusCode;
    /// use tickless_http::tower::AnyBodyTimeoutLayer;
    ///
    /// let layer =
    ///     AnyBodyTimeoutLayer::with_status_code(StatusCode::GATEWAY_TIMEOUT, Duration::from_secs(5));
    /// # drop(layer);
    /// ```
    pub fn with_status_code(status_code: StatusCode, timeout: Duration) -> Self {
        AnyBodyTimeoutLayer {
            timeout,
            status_code,
        }
    }
}

impl<S> Layer<S> for AnyBodyTimeoutLayer {
    type Service = AnyBodyTimeout<S>;

    fn layer(&self, inner: S) -> AnyBodyTimeout<S> {
        AnyBodyTimeout {
            inner,
            timeout: self.timeout,
            status_code: self.status_code,
        }
    }
}

/// The service of [`AnyBodyTimeoutLayer`]: `inner`'s responses with a deadline, in
/// [`OrEmpty`] bodies.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless_http::tower::{AnyBodyTimeout, AnyBodyTimeoutLayer};
/// use tower::Layer;
///
/// let svc: AnyBodyTimeout<()> = AnyBodyTimeoutLayer::new(Duration::from_secs(1)).layer(());
/// assert_eq!(svc.get_ref(), &());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct AnyBodyTimeout<S> {
    inner: S,
    timeout: Duration,
    status_code: StatusCode,
}

impl<S> AnyBodyTimeout<S> {
    inner_service_accessors!();
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for AnyBodyTimeout<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
{
    type Response = Response<OrEmpty<ResBody>>;
    type Error = S::Error;
    type Future = AnyBodyResponseFuture<S::Future>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        AnyBodyResponseFuture {
            inner: ResponseFuture::new(
                OrEmptyFuture::new(self.inner.call(req)),
                self.timeout,
                self.status_code,
            ),
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`AnyBodyTimeout`]: tower-http's [`ResponseFuture`] (whose 408
    /// has the empty [`OrEmpty`] as its `Default` body) around the service's, whose bodies it
    /// puts in [`OrEmpty`]. `Send` when the service's future is. See the example on
    /// [`AnyBodyTimeoutLayer`].
    ///
    /// # Panics
    ///
    /// When polled outside a tickless runtime, unless the service's future is ready at once.
    #[derive(Debug)]
    #[must_use = "futures do nothing unless awaited"]
    pub struct AnyBodyResponseFuture<F> {
        #[pin]
        inner: ResponseFuture<OrEmptyFuture<F>>,
    }
}

impl<F, B, E> Future for AnyBodyResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<OrEmpty<B>>, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll(cx)
    }
}

pin_project_lite::pin_project! {
    /// A service's response future with its bodies in [`OrEmpty`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless awaited"]
    pub(crate) struct OrEmptyFuture<F> {
        #[pin]
        inner: F,
    }
}

impl<F> OrEmptyFuture<F> {
    pub(crate) fn new(inner: F) -> Self {
        OrEmptyFuture { inner }
    }
}

impl<F, B, E> Future for OrEmptyFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<OrEmpty<B>>, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(ready!(self.project().inner.poll(cx)).map(|res| res.map(OrEmpty::new)))
    }
}

pin_project_lite::pin_project! {
    /// A response body: the service's own, or none (the timeout's answer). Its `Default` is
    /// the empty one, whatever `B` is.
    ///
    /// # Examples
    ///
    /// ```
    /// use http_body::Body;
    /// use http_body_util::Full;
    /// use tickless_http::tower::OrEmpty;
    ///
    /// let full = OrEmpty::new(Full::new(bytes::Bytes::from("hi")));
    /// assert_eq!(full.size_hint().exact(), Some(2));
    /// let empty = OrEmpty::<Full<bytes::Bytes>>::empty();
    /// assert!(empty.is_end_stream());
    /// ```
    #[derive(Debug)]
    pub struct OrEmpty<B> {
        #[pin]
        body: Option<B>,
    }
}

impl<B> OrEmpty<B> {
    /// `body`. See the example on [`OrEmpty`].
    pub fn new(body: B) -> Self {
        OrEmpty { body: Some(body) }
    }

    /// No body. See the example on [`OrEmpty`].
    pub fn empty() -> Self {
        OrEmpty { body: None }
    }

    /// The service's body, if this is not the empty one.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless_http::tower::OrEmpty;
    ///
    /// assert_eq!(OrEmpty::new("body").into_inner(), Some("body"));
    /// assert_eq!(OrEmpty::<&str>::empty().into_inner(), None);
    /// ```
    pub fn into_inner(self) -> Option<B> {
        self.body
    }
}

impl<B> Default for OrEmpty<B> {
    fn default() -> Self {
        Self::empty()
    }
}

impl<B: Body> Body for OrEmpty<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        match self.project().body.as_pin_mut() {
            Some(body) => body.poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.body
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}
