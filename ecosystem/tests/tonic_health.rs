//! tonic 0.14: a `tonic-health` health service, served and called from tickless, three ways.
//!
//! - tonic's own server, `Server::builder().add_service(..).serve_with_incoming(..)`, fed tokio
//!   streams, called with a tonic `Channel`, all under the tokio context. tonic's server spawns
//!   every connection with `tokio::spawn`, so the connections run on the core's own tokio
//!   runtime, on the core's thread; the tickless task drives the accept loop.
//! - tonic's `Routes` (a tower `Service`) served with tickless's own hyper serving (HTTP/2 on
//!   tickless streams, on the core that accepted) by a runtime with no tokio context at all, and
//!   called from a plain tokio runtime on another thread.
//! - with tickless's `Send` streams: a `Channel` from
//!   `Endpoint::connect_with_connector` with a tickless connector and tickless's executor
//!   (`Endpoint::executor`) against the `Routes` above, no tokio context at all; and
//!   `serve_with_incoming` fed tickless streams (through `TonicStream`, tonic's `Connected`),
//!   whose `tokio::spawn`ed connections run on the core's tokio runtime, on the core's thread,
//!   where the streams' reactor is.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tickless::Builder;
use tickless_ecosystem_tests::{localhost, other};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus as Status;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::server::{health_reporter, HealthReporter};
use tonic_health::ServingStatus;

/// The service name the tests report on.
const SERVICE: &str = "tickless.Echo";

/// A health service with `SERVICE` serving, and its reporter.
async fn health() -> (HealthReporter, HealthServer<impl Health>) {
    let (reporter, service) = health_reporter();
    reporter
        .set_service_status(SERVICE, ServingStatus::Serving)
        .await;
    (reporter, service)
}

async fn check(client: &mut HealthClient<Channel>, service: &str) -> Result<Status, tonic::Status> {
    let resp = client
        .check(HealthCheckRequest {
            service: service.to_owned(),
        })
        .await?;
    Ok(resp.into_inner().status())
}

/// The checks every server must answer: the whole server and `SERVICE` serving, an unknown
/// service `NotFound`, and `SERVICE` not serving once the reporter says so.
async fn checks(mut client: HealthClient<Channel>, reporter: &HealthReporter) -> io::Result<()> {
    assert_eq!(
        check(&mut client, "").await.map_err(other)?,
        Status::Serving
    );
    assert_eq!(
        check(&mut client, SERVICE).await.map_err(other)?,
        Status::Serving
    );
    let unknown = check(&mut client, "no.Such").await.unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");
    reporter
        .set_service_status(SERVICE, ServingStatus::NotServing)
        .await;
    assert_eq!(
        check(&mut client, SERVICE).await.map_err(other)?,
        Status::NotServing
    );
    Ok(())
}

fn endpoint(addr: SocketAddr) -> io::Result<Endpoint> {
    Endpoint::from_shared(format!("http://{addr}")).map_err(other)
}

/// Serves a health service with tonic's own server on `incoming` (its connections spawned with
/// `tokio::spawn`), runs the checks against `addr` with a tonic `Channel`, and stops the server.
/// Call it with the tokio context entered.
async fn tonic_server_on<I, IO, IE>(incoming: I, addr: SocketAddr) -> io::Result<()>
where
    I: futures_util::Stream<Item = Result<IO, IE>> + 'static,
    IO: tokio::io::AsyncRead
        + tokio::io::AsyncWrite
        + tonic::transport::server::Connected
        + Unpin
        + Send
        + 'static,
    IE: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
{
    let (reporter, service) = health().await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tickless::spawn_local(
        Server::builder()
            .add_service(service)
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stopped.await;
            }),
    );
    let channel = endpoint(addr)?.connect().await.map_err(other)?;
    checks(HealthClient::new(channel), &reporter).await?;
    let _ = stop.send(());
    server.await.map_err(other)?.map_err(other)
}

#[test]
fn tonic_server_with_tokio_streams_and_a_channel_under_the_tokio_context() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(localhost()).await?;
        let addr = listener.local_addr()?;
        tonic_server_on(TcpIncoming::from(listener), addr).await
    })
}

#[test]
fn tonic_routes_on_tickless_hyper_serving_without_any_tokio_context() -> io::Result<()> {
    // The server's runtime has no tokio context: whatever tonic's service needed of tokio's
    // runtime would panic here.
    let rt = Builder::new().cores(2).tokio_context(false).build()?;
    let (reporter, service) = tokio::runtime::Builder::new_current_thread()
        .build()?
        .block_on(health());
    let routes = tonic::service::Routes::new(service).prepare();
    // gRPC is HTTP/2 (prior knowledge): asked for (the crate's `http2` feature is on here).
    let server = tickless_http::Http::new()
        .http2(true)
        .serve(&rt, localhost(), routes)?;
    let addr = server.local_addr();
    let panics_before = rt.stats().total.task_panics;
    rt.block_on(async move {
        // The client: tonic's Channel on a tokio runtime of its own, on a blocking thread.
        let client = tickless::task::spawn_blocking(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(async {
                    let channel = endpoint(addr)?.connect().await.map_err(other)?;
                    checks(HealthClient::new(channel), &reporter).await
                })
        })
        .await
        .map_err(other)?;
        assert_eq!(
            server.stats().total.accepted,
            1,
            "one HTTP/2 connection for every call"
        );
        server.shutdown(Duration::from_secs(10)).await?;
        client
    })?;
    assert_eq!(rt.stats().total.task_panics, panics_before);
    Ok(())
}

mod send_streams {
    use super::*;
    use tickless_ecosystem_tests::TonicStream;
    use tickless_http::hyper_rt::TicklessExecutor;
    use tickless_http::Connector;

    #[test]
    fn a_channel_with_a_tickless_connector_and_executor_against_tickless_routes_without_tokio(
    ) -> io::Result<()> {
        // No tokio context: client and server are tickless tasks on tickless streams. (tonic's
        // `Endpoint::timeout`, `connect_timeout` and HTTP/2 keep-alive would call tokio's
        // timer, and need the context.)
        let rt = Builder::new().cores(2).tokio_context(false).build()?;
        let (reporter, service) = rt.block_on(health());
        let server = tickless_http::Http::new().http2(true).serve(
            &rt,
            localhost(),
            tonic::service::Routes::new(service).prepare(),
        )?;
        let addr = server.local_addr();
        rt.block_on(async {
            let channel = endpoint(addr)?
                .executor(TicklessExecutor)
                .connect_with_connector(Connector)
                .await
                .map_err(other)?;
            checks(HealthClient::new(channel), &reporter).await?;
            assert_eq!(server.stats().total.accepted, 1, "one HTTP/2 connection");
            server.shutdown(Duration::from_secs(10)).await?;
            Ok(())
        })
    }

    /// tonic's server runs each connection with `tokio::spawn` (tonic 0.14
    /// transport/server/mod.rs, `serve_connection`): with the tokio context, on the tokio runtime
    /// of the core that accepted, on that core's thread, so a tickless stream fed to
    /// `serve_with_incoming` is served where its reactor is. (With one tokio thread for the
    /// runtime, as before, the stream refused to run there and the call failed.)
    #[test]
    fn tonic_server_with_incoming_tickless_streams_serves_on_the_core() -> io::Result<()> {
        let rt = Builder::new().cores(1).build()?;
        rt.block_on(async {
            let listener = tickless::net::TcpListener::bind(localhost()).await?;
            let addr = listener.local_addr()?;
            let incoming = futures_util::stream::unfold(listener, |listener| async move {
                let accepted = listener.accept().await.map(|(s, _)| TonicStream(s));
                Some((accepted, listener))
            });
            tonic_server_on(incoming, addr).await
        })
    }
}
