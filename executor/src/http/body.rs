//! What [`serve`](super::serve) puts around the user's service: its responses' bodies, or an
//! empty one when the per-request timeout answers first.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use hyper::body::{Body, Frame, SizeHint};
use tower_service::Service;

use crate::time;

pin_project_lite::pin_project! {
    /// A response body: the service's, or none (a `408` the timeout wrote).
    ///
    /// Unlike a `Default` body, it is there whatever the service's body is, which is what lets
    /// the 408 be written in front of any service.
    #[derive(Debug)]
    pub(crate) struct MaybeEmpty<B> {
        #[pin]
        body: Option<B>,
    }
}

impl<B: Body> Body for MaybeEmpty<B> {
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

/// The user's service as `serve` calls it: bodies in [`MaybeEmpty`], and with a
/// request timeout when one is set.
#[derive(Debug, Clone)]
pub(crate) struct Respond<S> {
    /// The user's service.
    inner: S,
    /// The per-request timeout.
    timeout: Option<Duration>,
}

impl<S> Respond<S> {
    pub(crate) fn new(inner: S, timeout: Option<Duration>) -> Respond<S> {
        Respond { inner, timeout }
    }
}

impl<S, R, B> Service<Request<R>> for Respond<S>
where
    S: Service<Request<R>, Response = Response<B>>,
{
    type Response = Response<MaybeEmpty<B>>;
    type Error = S::Error;
    type Future = Responding<S::Future>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<R>) -> Self::Future {
        let inner = self.inner.call(req);
        match self.timeout {
            None => Responding::Plain { inner },
            Some(d) => Responding::Timed {
                inner: time::timeout(d, inner),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// [`Respond`]'s future.
    #[project = RespondingProj]
    pub(crate) enum Responding<F> {
        /// No timeout.
        Plain { #[pin] inner: F },
        /// With the request timeout: a [`time::Timeout`], registered only if the service's
        /// future is not ready at its first poll.
        Timed { #[pin] inner: time::Timeout<F> },
    }
}

impl<F, B, E> Future for Responding<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<MaybeEmpty<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let answered = match self.project() {
            RespondingProj::Plain { inner } => ready!(inner.poll(cx)),
            RespondingProj::Timed { inner } => match ready!(inner.poll(cx)) {
                Ok(answered) => answered,
                Err(time::Elapsed { .. }) => {
                    let mut res = Response::new(MaybeEmpty { body: None });
                    *res.status_mut() = StatusCode::REQUEST_TIMEOUT;
                    return Poll::Ready(Ok(res));
                }
            },
        };
        Poll::Ready(answered.map(|res| res.map(|body| MaybeEmpty { body: Some(body) })))
    }
}
