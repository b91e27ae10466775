//! What [`serve`](crate::serve) and [`run`](crate::run) serve: a request service, cloned for
//! each connection, or a make-service called with each connection's peer address.

use std::future::Future;
use std::marker::PhantomData;
use std::net::SocketAddr;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use tower_service::Service;

use crate::BoxError;

/// What [`serve`](crate::serve) and [`run`](crate::run) accept, as `axum::serve` does: a
/// request service (an axum `Router`, any tower `Service<Request<Incoming>>`), cloned for each
/// connection; or a make-service, a `Service<SocketAddr>` called with each connection's peer
/// address and returning the request service for that connection. axum's
/// `Router::into_make_service_with_connect_info::<SocketAddr>()` is one, so that the
/// `ConnectInfo<SocketAddr>` extractor works (axum implements `Connected<SocketAddr>` for
/// `SocketAddr`); so is `Router::into_make_service()`.
///
/// Implemented for both kinds; `M` ([`RequestService`] or [`MakeService`]) only tells the
/// two implementations apart and is always inferred: nothing names it.
///
/// # Examples
///
/// A make-service by hand: a `service_fn` on the peer's address that answers with it.
///
/// ```
/// use std::convert::Infallible;
/// use std::net::SocketAddr;
/// use std::time::Duration;
///
/// use bytes::Bytes;
/// use http::{Request, Response};
/// use http_body_util::{BodyExt, Empty, Full};
///
/// let rt = tickless::Builder::new().cores(2).build()?;
/// let make = tower::service_fn(|peer: SocketAddr| async move {
///     Ok::<_, Infallible>(tower::service_fn(move |_req: Request<hyper::body::Incoming>| {
///         let body = Full::<Bytes>::from(peer.ip().to_string());
///         async move { Ok::<_, Infallible>(Response::new(body)) }
///     }))
/// });
/// let server = tickless_http::serve(&rt, "127.0.0.1:0".parse().unwrap(), make)?;
/// let uri = format!("http://{}/", server.local_addr());
/// rt.block_on(async {
///     let client = tickless_http::client::<Empty<Bytes>>();
///     let res = client.get(uri.parse().unwrap()).await.unwrap();
///     assert_eq!(res.into_body().collect().await.unwrap().to_bytes(), "127.0.0.1");
///     server.shutdown(Duration::from_secs(5)).await
/// })?;
/// # std::io::Result::Ok(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a service tickless_http can serve",
    label = "not a request service nor a make-service of one",
    note = "`serve` and `run` take a tower `Service<Request<Incoming>, Response = Response<B>>` \
            that is `Clone + Send + 'static` (an axum `Router`), or a `Service<SocketAddr>` that \
            makes one for each connection (axum: \
            `router.into_make_service_with_connect_info::<SocketAddr>()`)"
)]
pub trait ConnService<M>: Clone + Send + 'static {
    /// The request service a connection is served with.
    type Service: Service<
            Request<Incoming>,
            Response = Response<Self::Body>,
            Future: 'static,
            Error: Into<BoxError>,
        > + Clone
        + 'static;
    /// Its responses' body.
    type Body: Body<Error: Into<BoxError>> + 'static;

    /// The request service for a connection from `peer`; an error closes the connection.
    fn make(
        self,
        peer: SocketAddr,
    ) -> impl Future<Output = Result<Self::Service, BoxError>> + 'static;
}

/// [`ConnService`]'s marker for a request service: the service itself, cloned.
///
/// # Examples
///
/// Never named by hand; inferred where a request service is served:
///
/// ```
/// use tickless_http::{ConnService, RequestService};
/// # use std::convert::Infallible;
/// fn served<B, S: ConnService<RequestService<B>>>(_: S) {}
/// served(tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
///     Ok::<_, Infallible>(http::Response::new(String::new()))
/// }));
/// ```
pub struct RequestService<B>(PhantomData<fn() -> B>);

/// [`ConnService`]'s marker for a make-service, called with each connection's peer address.
///
/// # Examples
///
/// Never named by hand; inferred where a make-service is served:
///
/// ```
/// use std::net::SocketAddr;
/// use tickless_http::{ConnService, MakeService};
/// # use std::convert::Infallible;
/// fn served<S, B, M: ConnService<MakeService<S, B>>>(_: M) {}
/// served(tower::service_fn(|_peer: SocketAddr| async {
///     Ok::<_, Infallible>(tower::service_fn(|_: http::Request<hyper::body::Incoming>| async {
///         Ok::<_, Infallible>(http::Response::new(String::new()))
///     }))
/// }));
/// ```
pub struct MakeService<S, B>(PhantomData<fn() -> (S, B)>);

impl<S, B> ConnService<RequestService<B>> for S
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    type Service = S;
    type Body = B;

    fn make(self, _peer: SocketAddr) -> impl Future<Output = Result<S, BoxError>> + 'static {
        std::future::ready(Ok(self))
    }
}

impl<M, S, B> ConnService<MakeService<S, B>> for M
where
    M: Service<SocketAddr, Response = S> + Clone + Send + 'static,
    M::Error: Into<BoxError>,
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    type Service = S;
    type Body = B;

    async fn make(mut self, peer: SocketAddr) -> Result<S, BoxError> {
        std::future::poll_fn(|cx| self.poll_ready(cx))
            .await
            .map_err(Into::into)?;
        self.call(peer).await.map_err(Into::into)
    }
}
