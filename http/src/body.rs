//! What [`serve`](super::serve) puts around the user's service: its responses' bodies, or an
//! empty one when the per-request timeout answers first ([`OrEmpty`], as
//! [`AnyBodyTimeoutLayer`](crate::tower::AnyBodyTimeoutLayer) does, without a timer when no
//! request timeout is set).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use tower_service::Service;

use crate::tower::timeout_any::OrEmptyFuture;
use crate::tower::{OrEmpty, ResponseFuture};

/// The user's service as `serve` calls it: bodies in [`OrEmpty`], and with a
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
    type Response = Response<OrEmpty<B>>;
    type Error = S::Error;
    type Future = Responding<S::Future>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<R>) -> Self::Future {
        let inner = OrEmptyFuture::new(self.inner.call(req));
        match self.timeout {
            None => Responding::Plain { inner },
            Some(d) => Responding::Timed {
                inner: ResponseFuture::new(inner, d, StatusCode::REQUEST_TIMEOUT),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// [`Respond`]'s future.
    #[project = RespondingProj]
    pub(crate) enum Responding<F> {
        /// No timeout.
        Plain { #[pin] inner: OrEmptyFuture<F> },
        /// With the request timeout: tower-http's 408, whose timer is registered only if the
        /// service's future is not ready at its first poll.
        Timed { #[pin] inner: ResponseFuture<OrEmptyFuture<F>> },
    }
}

impl<F, B, E> Future for Responding<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<OrEmpty<B>>, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            RespondingProj::Plain { inner } => inner.poll(cx),
            RespondingProj::Timed { inner } => inner.poll(cx),
        }
    }
}
