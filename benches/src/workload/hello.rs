//! The "Hello, world!" HTTP service of the latency workload, the same on both runtimes (as
//! `executor/examples/hello_http.rs`'s): every request answered `200` with a 13-byte body.

use std::convert::Infallible;
use std::future::{ready, Ready};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;

/// The answer.
pub fn response() -> Response<Full<Bytes>> {
    Response::new(Full::new(Bytes::from_static(b"Hello, world!")))
}

/// The service as hyper's `service_fn` takes it (tokio's side).
///
/// # Errors
///
/// Never.
pub async fn hello(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(response())
}

/// The service as a tower `Service` (what `tickless_http::serve` takes).
#[derive(Debug, Clone, Copy)]
pub struct Hello;

impl tower_service::Service<Request<Incoming>> for Hello {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _req: Request<Incoming>) -> Self::Future {
        ready(Ok(response()))
    }
}
