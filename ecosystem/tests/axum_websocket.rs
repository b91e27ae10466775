//! An axum 0.8 WebSocket echo through hyper's `serve_connection_with_upgrades` (hyper-util's
//! auto builder) on a tickless core, with tokio-tungstenite as the client, under the tokio
//! context.
//!
//! axum's `WebSocketUpgrade::on_upgrade` runs the socket with `tokio::spawn`: with the tokio
//! context, on the tokio runtime of the core that served the request, which that core's thread
//! drives. So:
//! - with tokio's streams (accepted by a tickless task through the context) it works, and the
//!   echo runs on the core's thread;
//! - with tickless's streams it works too, on the core's thread: the stream is polled where its
//!   reactor is;
//! - wrapped in `tickless_http::on_core`, axum's own `on_upgrade` callback runs as a task of
//!   the core that served the request (its future need not be `Send`); so does an upgrade done
//!   by hand.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use futures_util::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tickless::Builder;
use tickless_ecosystem_tests::{localhost, other};
use tickless_http::hyper_rt::TicklessExecutor;
use tokio_tungstenite::tungstenite::Message as ClientMessage;

/// What the server's sockets saw.
#[derive(Default)]
struct Seen {
    /// Messages echoed.
    echoed: AtomicUsize,
    /// Sockets that ended with a close frame.
    closed: AtomicUsize,
    /// The threads the sockets ran on.
    threads: Mutex<Vec<String>>,
}

async fn upgrade(ws: WebSocketUpgrade, State(seen): State<Arc<Seen>>) -> Response {
    ws.on_upgrade(move |socket| echo(socket, seen))
}

async fn echo(mut socket: WebSocket, seen: Arc<Seen>) {
    let thread = std::thread::current().name().unwrap_or("?").to_owned();
    seen.threads.lock().unwrap().push(thread);
    while let Some(Ok(msg)) = socket.recv().await {
        let back = match msg {
            Message::Text(text) => Message::Text(format!("echo: {}", text.as_str()).into()),
            Message::Binary(bytes) => Message::Binary(bytes.iter().rev().copied().collect()),
            Message::Close(_) => {
                seen.closed.fetch_add(1, Ordering::SeqCst);
                break;
            }
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        if socket.send(back).await.is_err() {
            break;
        }
        seen.echoed.fetch_add(1, Ordering::SeqCst);
    }
}

/// axum's own upgrade, its callback handed back to the core by `tickless_http::on_core`.
async fn upgrade_on_core(ws: WebSocketUpgrade, State(seen): State<Arc<Seen>>) -> Response {
    let core = tickless::core_id();
    ws.on_upgrade(tickless_http::on_core(move |socket| async move {
        assert_eq!(
            tickless::core_id(),
            core,
            "the socket runs on its request's core"
        );
        echo(socket, seen).await;
    }))
}

fn app(seen: Arc<Seen>) -> Router {
    Router::new().route("/ws", get(upgrade)).with_state(seen)
}

const MESSAGES: usize = 10;

/// Opens a WebSocket to `addr` with tokio-tungstenite (tokio's streams: call it with the tokio
/// context entered), echoes `MESSAGES` text messages and one binary, and closes.
async fn client(addr: SocketAddr) -> io::Result<()> {
    let (mut ws, resp) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .map_err(other)?;
    assert_eq!(resp.status(), http::StatusCode::SWITCHING_PROTOCOLS);
    for i in 0..MESSAGES {
        ws.send(ClientMessage::text(format!("hello {i}")))
            .await
            .map_err(other)?;
        let back = ws.next().await.expect("an echo").map_err(other)?;
        assert_eq!(back, ClientMessage::text(format!("echo: hello {i}")));
    }
    ws.send(ClientMessage::binary(vec![1u8, 2, 3]))
        .await
        .map_err(other)?;
    let back = ws.next().await.expect("an echo").map_err(other)?;
    assert_eq!(back, ClientMessage::binary(vec![3u8, 2, 1]));
    ws.close(None).await.map_err(other)?;
    // The server's close frame answers ours; then the stream ends.
    while let Some(msg) = ws.next().await {
        if msg.is_err() {
            break;
        }
    }
    Ok(())
}

/// Asserts what the server's one socket saw, and that it ran on a thread of the runtime's
/// cores (core 0's is the test's, which is in `block_on`; core 1's is named for it).
fn assert_echoed(seen: &Seen) {
    assert_eq!(seen.echoed.load(Ordering::SeqCst), MESSAGES + 1);
    assert_eq!(seen.closed.load(Ordering::SeqCst), 1);
    let threads = seen.threads.lock().unwrap();
    assert_eq!(threads.len(), 1, "one socket: {threads:?}");
    assert!(
        on_a_core(&threads[0]),
        "the socket ran on a core's thread: {threads:?}"
    );
}

/// Whether the thread named `name` runs a core: core 1's is named for it, core 0's is the
/// test's own (in `block_on`).
fn on_a_core(name: &str) -> bool {
    name.starts_with("tickless-core-") || Some(name) == std::thread::current().name()
}

#[test]
fn axum_websocket_echo_with_tokio_streams_served_on_a_tickless_core() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    let seen = Arc::new(Seen::default());
    let app = app(Arc::clone(&seen));
    rt.block_on(async {
        // tokio's listener and streams, through the context; hyper on this core.
        let listener = tokio::net::TcpListener::bind(localhost()).await?;
        let addr = listener.local_addr()?;
        let accepted = Arc::new(AtomicUsize::new(0));
        let accepts = Arc::clone(&accepted);
        let server = tickless::spawn_local(async move {
            let http = hyper_util::server::conn::auto::Builder::new(TicklessExecutor);
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                accepts.fetch_add(1, Ordering::SeqCst);
                let http = http.clone();
                let service = TowerToHyperService::new(app.clone());
                tickless::spawn_local(async move {
                    let _ordinary_end = http
                        .serve_connection_with_upgrades(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        client(addr).await?;
        server.abort();
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        io::Result::Ok(())
    })?;
    // axum's `on_upgrade` spawned the socket onto core 0's tokio runtime: core 0's thread.
    assert_echoed(&seen);
    Ok(())
}

/// Serves `app` with upgrades on every core of `rt`, on tickless streams, and runs the client
/// against it: one connection.
fn echo_on_tickless_streams(rt: &tickless::Runtime, app: Router) -> io::Result<()> {
    let server = tickless_http::serve(rt, localhost(), app)?;
    let addr = server.local_addr();
    rt.block_on(async {
        client(addr).await?;
        assert_eq!(server.stats().total.accepted, 1);
        server.shutdown(std::time::Duration::from_secs(10)).await
    })?;
    Ok(())
}

/// axum's `on_upgrade` on tickless streams: axum's `tokio::spawn` runs the socket on the tokio
/// runtime of the core that served the request, on that core's thread, where the stream's
/// reactor is: it echoes. (With one tokio thread for the runtime, as before, it could not: the
/// stream refused to run there, and the client's connection was dropped.)
#[test]
fn axum_s_own_on_upgrade_runs_the_socket_on_its_core_s_thread() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let seen = Arc::new(Seen::default());
    echo_on_tickless_streams(&rt, app(Arc::clone(&seen)))?;
    assert_echoed(&seen);
    assert_eq!(rt.stats().total.task_panics, 0);
    Ok(())
}

/// The upgrade done by hand in an axum handler, in place of `WebSocketUpgrade`: hyper's
/// `upgrade::on`, the accept key, and the socket (tokio-tungstenite's, over the upgraded
/// connection) run as a task of the core that serves the request.
async fn upgrade_on_the_core(
    State(seen): State<Arc<Seen>>,
    mut req: axum::extract::Request,
) -> Response {
    use axum::response::IntoResponse;
    use http::header::{CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
    use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
    use tokio_tungstenite::tungstenite::protocol::Role;

    let Some(key) = req.headers().get(SEC_WEBSOCKET_KEY).cloned() else {
        return http::StatusCode::BAD_REQUEST.into_response();
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    drop(tickless::spawn_local(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let socket = tokio_tungstenite::WebSocketStream::from_raw_socket(
            TokioIo::new(upgraded),
            Role::Server,
            None,
        )
        .await;
        echo_tungstenite(socket, seen).await;
    }));
    Response::builder()
        .status(http::StatusCode::SWITCHING_PROTOCOLS)
        .header(CONNECTION, "upgrade")
        .header(UPGRADE, "websocket")
        .header(SEC_WEBSOCKET_ACCEPT, derive_accept_key(key.as_bytes()))
        .body(axum::body::Body::empty())
        .unwrap_or_default()
}

/// `echo` for a tokio-tungstenite socket.
async fn echo_tungstenite<S>(mut socket: tokio_tungstenite::WebSocketStream<S>, seen: Arc<Seen>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let thread = std::thread::current().name().unwrap_or("?").to_owned();
    seen.threads.lock().unwrap().push(thread);
    while let Some(Ok(msg)) = socket.next().await {
        let back = match msg {
            ClientMessage::Text(text) => ClientMessage::text(format!("echo: {}", text.as_str())),
            ClientMessage::Binary(bytes) => {
                ClientMessage::binary(bytes.iter().rev().copied().collect::<Vec<u8>>())
            }
            ClientMessage::Close(_) => {
                seen.closed.fetch_add(1, Ordering::SeqCst);
                break;
            }
            _ => continue,
        };
        if socket.send(back).await.is_err() {
            break;
        }
        seen.echoed.fetch_add(1, Ordering::SeqCst);
    }
    // Answers the client's close (tungstenite queued the reply; this flushes it).
    let _ = socket.close(None).await;
}

#[test]
fn websocket_echo_on_tickless_streams_with_the_upgrade_done_on_the_core() -> io::Result<()> {
    // The server needs no tokio context here; the client (tokio-tungstenite's `connect_async`,
    // tokio's streams) does.
    let rt = Builder::new().cores(2).build()?;
    let seen = Arc::new(Seen::default());
    let app = Router::new()
        .route("/ws", get(upgrade_on_the_core))
        .with_state(Arc::clone(&seen));
    echo_on_tickless_streams(&rt, app)?;
    assert_echoed(&seen);
    Ok(())
}

#[test]
fn axum_s_own_upgrade_wrapped_in_on_core_runs_the_socket_on_its_core() -> io::Result<()> {
    // The tokio context is for axum's `on_upgrade` (its `tokio::spawn`, which now only waits
    // for the upgrade) and the client.
    let rt = Builder::new().cores(2).build()?;
    let seen = Arc::new(Seen::default());
    let app = Router::new()
        .route("/ws", get(upgrade_on_core))
        .with_state(Arc::clone(&seen));
    echo_on_tickless_streams(&rt, app)?;
    assert_echoed(&seen);
    assert_eq!(rt.stats().total.task_panics, 0);
    Ok(())
}

#[test]
fn many_sockets_through_on_core_all_echo() -> io::Result<()> {
    const SOCKETS: usize = 50;
    let rt = Builder::new().cores(2).build()?;
    let seen = Arc::new(Seen::default());
    let app = Router::new()
        .route("/ws", get(upgrade_on_core))
        .with_state(Arc::clone(&seen));
    let server = tickless_http::serve(&rt, localhost(), app)?;
    let addr = server.local_addr();
    rt.block_on(async {
        let clients: Vec<_> = (0..SOCKETS)
            .map(|_| tickless::spawn_local(client(addr)))
            .collect();
        for c in clients {
            c.await??;
        }
        server.shutdown(std::time::Duration::from_secs(10)).await
    })?;
    assert_eq!(seen.echoed.load(Ordering::SeqCst), SOCKETS * (MESSAGES + 1));
    assert_eq!(seen.closed.load(Ordering::SeqCst), SOCKETS);
    let threads = seen.threads.lock().unwrap();
    assert!(threads.iter().all(|t| on_a_core(t)), "{threads:?}");
    assert_eq!(rt.stats().total.task_panics, 0);
    Ok(())
}
