//! axum's `ConnectInfo<SocketAddr>` on tickless-http: `run` and `serve` take axum's
//! `into_make_service_with_connect_info::<SocketAddr>()` as `axum::serve` does, and `run`'s
//! future is `Send`, so that it runs as a task of its own (axum's testing example's
//! `tokio::spawn(axum::serve(..))`).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::routing::get;
use axum::Router;
use tickless::net::TcpStream;
use tickless::Builder;
use tickless_ecosystem_tests::{get as http_get, localhost, other};
use tickless_http::hyper_rt::TicklessIo;

/// Answers with the peer address axum's extractor gives.
async fn whoami(ConnectInfo(peer): ConnectInfo<SocketAddr>) -> String {
    peer.to_string()
}

/// `GET /` on a connection of its own: the client's local address and the answer.
async fn ask(addr: SocketAddr) -> io::Result<(SocketAddr, String)> {
    let stream = TcpStream::connect(addr).await?;
    let local = stream.local_addr()?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TicklessIo::new(stream))
        .await
        .map_err(other)?;
    drop(tickless::spawn_local(conn));
    let (status, body) = http_get(&mut sender, "/").await?;
    assert!(status.is_success(), "{status}");
    Ok((local, body))
}

#[test]
fn run_as_a_spawned_task_gives_axum_s_connect_info_the_peer_address() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    rt.block_on(async {
        let app = Router::new().route("/", get(whoami));
        let run = tickless_http::run(
            localhost(),
            app.into_make_service_with_connect_info::<SocketAddr>(),
        );
        let addr = run.local_addr()?;
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let server = tickless::spawn(async move {
            run.with_graceful_shutdown(async move {
                while stopped.try_recv().is_err() {
                    tickless::time::sleep(Duration::from_millis(1)).await;
                }
            })
            .await
        });
        for _ in 0..2 {
            let (local, seen) = ask(addr).await?;
            assert_eq!(seen, local.to_string());
        }
        stop.send(()).map_err(other)?;
        server.await.map_err(other)?
    })
}

#[test]
fn serve_takes_axum_s_make_services_too() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let app = Router::new().route("/", get(whoami));
    let with_info = tickless_http::serve(
        &rt,
        localhost(),
        app.clone()
            .into_make_service_with_connect_info::<SocketAddr>(),
    )?;
    let plain = Router::new().route("/", get(|| async { "plain" }));
    let made = tickless_http::serve(&rt, localhost(), plain.into_make_service())?;
    rt.block_on(async {
        let (local, seen) = ask(with_info.local_addr()).await?;
        assert_eq!(seen, local.to_string());
        assert_eq!(ask(made.local_addr()).await?.1, "plain");
        with_info.shutdown(Duration::from_secs(5)).await?;
        made.shutdown(Duration::from_secs(5)).await?;
        io::Result::Ok(())
    })
}
