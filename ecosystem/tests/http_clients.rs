//! HTTP clients from tickless tasks against a local tickless server (an axum app on tickless's
//! hyper serving): reqwest 0.12 (plain HTTP, no TLS) and hyper-util's legacy `Client` with its
//! own tokio connector, both under the tokio context; and `tickless_http::client`, hyper-util's
//! `Client` with tickless's connector (tickless streams, no tokio context).

use std::io;
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioTimer;
use tickless::net::Server;
use tickless::{Builder, Runtime};
use tickless_ecosystem_tests::{localhost, other};
use tickless_http::hyper_rt::TicklessExecutor;

/// `/hello` says which core answered; `/echo` sends the body back upper-cased.
fn app() -> Router {
    Router::new()
        .route(
            "/hello",
            get(|| async { format!("hello from core {}", tickless::core_id()) }),
        )
        .route(
            "/echo",
            post(|body: String| async move { body.to_uppercase() }),
        )
}

fn server(rt: &Runtime) -> io::Result<Server> {
    tickless_http::serve(rt, localhost(), app())
}

const REQUESTS: usize = 10;

/// Asserts that the server took `requests` requests on fewer connections: the client's pool
/// reused them. Not always on one: hyper-util's pool (reqwest's too) takes an HTTP/1 connection
/// back only once a task on its executor has seen it ready for the next request, and a request
/// made before that opens a second connection.
fn assert_pooled(server: &Server, requests: usize) {
    let accepted = server.stats().total.accepted;
    assert!(
        (1..=requests as u64 / 2).contains(&accepted),
        "{requests} requests on {accepted} connections"
    );
}

/// `REQUESTS` times `GET uri` with `client`, each answered by the app; then the client is
/// dropped, and the server must have seen the pool reuse its connections.
async fn hello_through_one_pooled_connection<C>(
    client: Client<C, Empty<Bytes>>,
    uri: http::Uri,
    server: &Server,
) -> io::Result<()>
where
    C: hyper_util::client::legacy::connect::Connect + Clone + Send + Sync + 'static,
{
    for _ in 0..REQUESTS {
        let resp = client.get(uri.clone()).await.map_err(other)?;
        assert_eq!(resp.status(), StatusCode::OK);
        let body = resp.into_body().collect().await.map_err(other)?.to_bytes();
        assert!(body.starts_with(b"hello from core "), "{body:?}");
    }
    drop(client);
    assert_pooled(server, REQUESTS);
    Ok(())
}

#[test]
fn reqwest_against_a_tickless_server_under_the_tokio_context() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let server = server(&rt)?;
    let base = format!("http://{}", server.local_addr());
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(other)?;
        for i in 0..REQUESTS {
            let resp = client
                .get(format!("{base}/hello"))
                .send()
                .await
                .map_err(other)?;
            assert_eq!(resp.status(), StatusCode::OK);
            let text = resp.text().await.map_err(other)?;
            assert!(text.starts_with("hello from core "), "{text}");

            let resp = client
                .post(format!("{base}/echo"))
                .body(format!("request {i}"))
                .send()
                .await
                .map_err(other)?;
            assert_eq!(resp.status(), StatusCode::OK);
            assert_eq!(resp.text().await.map_err(other)?, format!("REQUEST {i}"));
        }
        let missing = client
            .get(format!("{base}/missing"))
            .send()
            .await
            .map_err(other)?;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        drop(client);
        assert_pooled(&server, 2 * REQUESTS + 1);
        server.shutdown(Duration::from_secs(10)).await
    })?;
    Ok(())
}

#[test]
fn hyper_util_client_with_its_tokio_connector_under_the_tokio_context() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let server = server(&rt)?;
    let uri: http::Uri = format!("http://{}/hello", server.local_addr())
        .parse()
        .map_err(other)?;
    rt.block_on(async {
        // tokio's streams (HttpConnector connects with tokio::net), the connection tasks on this
        // core (the executor), the pool's timer tokio's.
        let client = Client::builder(TicklessExecutor)
            .pool_timer(TokioTimer::new())
            .build_http();
        hello_through_one_pooled_connection(client, uri, &server).await?;
        server.shutdown(Duration::from_secs(10)).await
    })?;
    Ok(())
}

#[test]
fn hyper_util_client_with_a_tickless_connector_needs_no_tokio_context() -> io::Result<()> {
    let rt = Builder::new().cores(2).tokio_context(false).build()?;
    let server = server(&rt)?;
    let uri: http::Uri = format!("http://{}/hello", server.local_addr())
        .parse()
        .map_err(other)?;
    rt.block_on(async {
        let client = tickless_http::client();
        hello_through_one_pooled_connection(client, uri, &server).await?;
        server.shutdown(Duration::from_secs(10)).await
    })?;
    Ok(())
}
