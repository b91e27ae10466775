//! HTTP/2 with prior knowledge: closed at its preface by default (HTTP/1.1 only, as
//! `axum::serve` without axum's `http2` feature), served with the `http2` feature and
//! `Http::http2(true)`.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, Version};
use http_body_util::{Empty, Full};
use hyper::body::Incoming;
use tickless::Builder;
use tickless_http::hyper_rt::{TicklessExecutor, TicklessIo};
use tickless_http::Http;

/// What [`ok`] answers with, at once.
type Answer = std::future::Ready<Result<Response<Full<Bytes>>, Infallible>>;

/// A service that answers "ok".
fn ok() -> impl tower::Service<
    Request<Incoming>,
    Response = Response<Full<Bytes>>,
    Error = Infallible,
    Future = Answer,
> + Clone
       + Send
       + 'static {
    tower::service_fn(|_: Request<Incoming>| {
        std::future::ready(Ok::<_, Infallible>(Response::new(Full::from("ok"))))
    })
}

/// One HTTP/2 (prior knowledge) request to `addr`: its status, or the client's error.
async fn h2_get(addr: SocketAddr) -> io::Result<Result<(StatusCode, Version), hyper::Error>> {
    let io = TicklessIo::new(tickless::net::TcpStream::connect(addr).await?);
    let (mut h2, conn) = match hyper::client::conn::http2::Builder::new(TicklessExecutor)
        .handshake(io)
        .await
    {
        Ok(pair) => pair,
        Err(e) => return Ok(Err(e)),
    };
    let driver = tickless::spawn_local(conn);
    let req = Request::get(format!("http://{addr}/"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let res = h2
        .send_request(req)
        .await
        .map(|r| (r.status(), r.version()));
    drop(h2);
    let _closed = driver.await;
    Ok(res)
}

/// One HTTP/1.1 request to `addr`: its status.
async fn h1_get(addr: SocketAddr) -> StatusCode {
    let client = tickless_http::client::<Empty<Bytes>>();
    let uri = format!("http://{addr}/").parse().unwrap();
    client.get(uri).await.unwrap().status()
}

#[test]
fn an_http2_prior_knowledge_client_is_refused_by_default() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    for server in [
        tickless_http::serve(&rt, "127.0.0.1:0".parse().unwrap(), ok())?,
        // The opening read ahead (the header timeout) changes nothing.
        Http::new()
            .header_read_timeout(Duration::from_secs(30))
            .serve(&rt, "127.0.0.1:0".parse().unwrap(), ok())?,
    ] {
        let addr = server.local_addr();
        rt.block_on(async {
            assert!(h2_get(addr).await?.is_err(), "HTTP/2 served unasked");
            assert_eq!(h1_get(addr).await, StatusCode::OK);
            server.shutdown(Duration::from_secs(5)).await
        })?;
    }
    Ok(())
}

#[test]
fn http2_is_served_when_asked() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let server = Http::new()
        .http2(true)
        .serve(&rt, "127.0.0.1:0".parse().unwrap(), ok())?;
    let addr = server.local_addr();
    rt.block_on(async {
        let served = h2_get(addr).await?.map_err(io::Error::other)?;
        assert_eq!(served, (StatusCode::OK, Version::HTTP_2));
        assert_eq!(h1_get(addr).await, StatusCode::OK);
        server.shutdown(Duration::from_secs(5)).await
    })?;
    Ok(())
}
