//! `tickless_http`: serving a tower service on every core and calling it with the client,
//! from outside the runtime (`serve`) and from inside (`run`), the request timeout in front of
//! any body, hyper's header timeout as a setting, bind errors, and the graceful shutdown.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::{Body, Frame, Incoming};
use tickless::Builder;

fn localhost() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// A response body with no `Default`: tower-http's (and `tickless_http::tower`'s) 408 cannot be
/// written in front of a service that answers with it.
struct Text(Option<&'static str>);

impl Body for Text {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.take().map(|t| Ok(Frame::data(Bytes::from(t)))))
    }
}

/// Counts its drops.
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// `GET uri` with a fresh client: the status and the body.
async fn get(uri: String) -> (StatusCode, Bytes) {
    let client = tickless_http::client::<Empty<Bytes>>();
    let res = client.get(uri.parse().unwrap()).await.unwrap();
    let status = res.status();
    (status, res.into_body().collect().await.unwrap().to_bytes())
}

#[test]
fn a_request_timeout_answers_408_in_front_of_a_service_whose_body_has_no_default() -> io::Result<()>
{
    let rt = Builder::new().cores(2).build()?;
    let dropped = Arc::new(AtomicUsize::new(0));
    let drops = Arc::clone(&dropped);
    let svc = tower::service_fn(move |req: Request<Incoming>| {
        let guard = Dropped(Arc::clone(&drops));
        async move {
            if req.uri().path() == "/slow" {
                tickless::time::sleep(Duration::from_secs(3600)).await;
            }
            drop(guard);
            Ok::<_, Infallible>(Response::new(Text(Some("fast"))))
        }
    });
    let server = tickless_http::Http::new()
        .request_timeout(Duration::from_millis(20))
        .serve(&rt, localhost(), svc)?;
    let base = format!("http://{}", server.local_addr());
    rt.block_on(async {
        assert_eq!(
            get(format!("{base}/fast")).await,
            (StatusCode::OK, Bytes::from("fast"))
        );
        assert_eq!(
            get(format!("{base}/slow")).await,
            (StatusCode::REQUEST_TIMEOUT, Bytes::new())
        );
        server.shutdown(Duration::from_secs(10)).await
    })?;
    // The fast handler finished; the slow one was dropped by the timeout.
    assert_eq!(dropped.load(Ordering::SeqCst), 2);
    Ok(())
}

/// A service that answers "ok".
fn ok() -> impl tower::Service<
    Request<Incoming>,
    Response = Response<Text>,
    Error = Infallible,
    Future = std::future::Ready<Result<Response<Text>, Infallible>>,
> + Clone
       + Send
       + 'static {
    tower::service_fn(|_: Request<Incoming>| {
        std::future::ready(Ok::<_, Infallible>(Response::new(Text(Some("ok")))))
    })
}

#[test]
fn a_header_read_timeout_closes_a_connection_that_sends_no_head_and_none_is_the_default(
) -> io::Result<()> {
    use futures_lite::AsyncReadExt;

    let rt = Builder::new().cores(1).build()?;
    let timed = tickless_http::Http::new()
        .header_read_timeout(Duration::from_millis(20))
        .serve(&rt, localhost(), ok())?;
    let untimed = tickless_http::serve(&rt, localhost(), ok())?;
    rt.block_on(async {
        // The server closes the silent connection: the read sees the end.
        let mut silent = tickless::net::TcpStream::connect(timed.local_addr()).await?;
        let mut buf = [0u8; 64];
        assert_eq!(silent.read(&mut buf).await?, 0, "closed by the server");

        // Without the setting it stays open: a read is still pending after much longer than
        // the other server's timeout (a timeout of ours ends the wait, not the server).
        let mut idle = tickless::net::TcpStream::connect(untimed.local_addr()).await?;
        let waited = tickless::time::timeout(Duration::from_millis(200), idle.read(&mut buf)).await;
        assert!(waited.is_err(), "still open: {waited:?}");

        timed.shutdown(Duration::from_secs(10)).await?;
        untimed.shutdown(Duration::from_secs(10)).await
    })?;
    Ok(())
}

#[test]
fn run_serves_from_inside_the_runtime_and_ends_after_the_request_in_flight_at_the_signal(
) -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let started = Arc::new(AtomicUsize::new(0));
    let starts = Arc::clone(&started);
    rt.block_on(async {
        let svc = tower::service_fn(move |_: Request<Incoming>| {
            starts.fetch_add(1, Ordering::SeqCst);
            async {
                tickless::time::sleep(Duration::from_millis(50)).await;
                Ok::<_, Infallible>(Response::new(Text(Some("finished"))))
            }
        });
        let run = tickless_http::run("127.0.0.1:0", svc);
        let uri = format!("http://{}/", run.local_addr()?);
        let request = tickless::spawn(get(uri));
        // The signal comes once the request is in flight (its handler sleeps); the shutdown
        // waits for its answer, and then `run` ends.
        run.with_graceful_shutdown(async move {
            while started.load(Ordering::SeqCst) == 0 {
                tickless::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await?;
        assert_eq!(
            request.await.unwrap(),
            (StatusCode::OK, Bytes::from("finished"))
        );
        io::Result::Ok(())
    })?;
    Ok(())
}

#[test]
fn run_on_a_taken_address_fails_with_the_bind_error_at_local_addr_and_at_await() -> io::Result<()> {
    // A listener without `SO_REUSEPORT`: the per-core listeners cannot share its port.
    let taken = std::net::TcpListener::bind(localhost())?;
    let addr = taken.local_addr()?;
    let rt = Builder::new().cores(2).build()?;
    rt.block_on(async {
        let run = tickless_http::run(addr, ok());
        assert_eq!(
            run.local_addr().unwrap_err().kind(),
            io::ErrorKind::AddrInUse
        );
        assert_eq!(run.await.unwrap_err().kind(), io::ErrorKind::AddrInUse);
    });
    Ok(())
}

#[test]
#[should_panic(expected = "tickless_http::run outside a tickless runtime")]
fn run_outside_a_runtime_says_so() {
    drop(tickless_http::run("127.0.0.1:0", ok()));
}

#[test]
fn run_s_future_is_send_and_serves_as_a_task_of_its_own() -> io::Result<()> {
    fn send<T: Send>(t: T) -> T {
        t
    }
    let rt = Builder::new().cores(2).build()?;
    rt.block_on(async {
        let run = send(tickless_http::run("127.0.0.1:0", ok()));
        let uri = format!("http://{}/", run.local_addr()?);
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        // `tickless::spawn` takes `Send` futures only: axum's `tokio::spawn(axum::serve(..))`.
        let server = tickless::spawn(async move {
            run.with_graceful_shutdown(async move {
                while stopped.try_recv().is_err() {
                    tickless::time::sleep(Duration::from_millis(1)).await;
                }
            })
            .await
        });
        assert_eq!(get(uri).await.0, StatusCode::OK);
        stop.send(()).unwrap();
        server.await.unwrap()
    })
}

#[test]
fn a_make_service_is_called_with_each_connection_s_peer_address() -> io::Result<()> {
    use http_body_util::Full;
    use tower::ServiceExt;

    let rt = Builder::new().cores(2).build()?;
    let peers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&peers);
    let make = tower::service_fn(move |peer: SocketAddr| {
        seen.lock().unwrap().push(peer);
        async move {
            Ok::<_, Infallible>(tower::service_fn(move |_: Request<Incoming>| async move {
                Ok::<_, Infallible>(Response::new(Full::<Bytes>::from(peer.to_string())))
            }))
        }
    });
    let server = tickless_http::serve(&rt, localhost(), make)?;
    let addr = server.local_addr();
    let local = rt.block_on(async {
        // One connection by hand, so that its local address (the server's peer) is known.
        let uri: http::Uri = format!("http://{addr}/").parse().unwrap();
        let stream = tickless_http::Connector.oneshot(uri).await?;
        let local = stream.get_ref().local_addr()?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(stream)
            .await
            .map_err(io::Error::other)?;
        let driver = tickless::spawn_local(conn);
        let req = Request::get("/")
            .header(http::header::HOST, "localhost")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let res = sender.send_request(req).await.map_err(io::Error::other)?;
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, local.to_string());
        drop(sender);
        let _closed = driver.await;
        server.shutdown(Duration::from_secs(5)).await?;
        io::Result::Ok(local)
    })?;
    assert_eq!(*peers.lock().unwrap(), [local]);
    Ok(())
}

#[test]
fn dropping_run_s_future_stops_serving() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    rt.block_on(async {
        let run = tickless_http::run("127.0.0.1:0", ok());
        let addr = run.local_addr()?;
        let uri = format!("http://{addr}/");
        let server = tickless::spawn(async move { run.await });
        assert_eq!(get(uri).await.0, StatusCode::OK);
        server.abort(); // drops the future, which had no signal: it would serve for ever
        assert!(server.await.unwrap_err().is_cancelled());
        // The listeners close once the shutdown the drop started has run: connecting is
        // refused then. (A bound on the tries guards against a hang; it measures nothing.)
        for _ in 0..10_000 {
            match tickless::net::TcpStream::connect(addr).await {
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Ok(()),
                _ => tickless::time::sleep(Duration::from_millis(1)).await,
            }
        }
        panic!("still accepting on {addr} after its future was dropped");
    })
}

/// `header_read_timeout` times a connection's whole opening: each of these, sent and then
/// nothing more, is closed by the server at the timeout (on paused time: the runtime jumps to
/// the timer, no real time passes, and the test asserts on the close, not on a duration).
#[test]
fn a_header_read_timeout_closes_a_connection_stuck_anywhere_in_its_opening() -> io::Result<()> {
    use futures_lite::{AsyncReadExt, AsyncWriteExt};

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let settings_half: Vec<u8> = [PREFACE, &[0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0]].concat();
    let openings: [(&str, &[u8]); 5] = [
        ("nothing", b""),
        ("one byte", b"P"),
        ("half a head", b"GET / HTTP/1.1\r\nhost: localhost\r\n"),
        ("the HTTP/2 preface", PREFACE),
        ("the preface and half a SETTINGS frame", &settings_half),
    ];
    let rt = Builder::new().cores(1).start_paused(true).build()?;
    let server = tickless_http::Http::new()
        .header_read_timeout(Duration::from_secs(30))
        .serve(&rt, localhost(), ok())?;
    rt.block_on(async {
        for (what, opening) in openings {
            let mut client = tickless::net::TcpStream::connect(server.local_addr()).await?;
            client.write_all(opening).await?;
            let start = tickless::time::Instant::now();
            let mut got = Vec::new();
            // Ends when the server closes; a server that kept it open would fail the test when
            // paused time reached a minute, not hang it.
            let read =
                tickless::time::timeout(Duration::from_secs(60), client.read_to_end(&mut got));
            read.await.expect(what)?;
            assert!(got.is_empty(), "{what}: {got:?}");
            // Paused time moved to the timer (its deadline and the default slack): the server
            // waited for the timeout, neither less nor a second timeout more.
            let waited = start.elapsed();
            assert!(waited >= Duration::from_secs(30), "{what}: {waited:?}");
            assert!(waited < Duration::from_secs(31), "{what}: {waited:?}");
        }
        server.shutdown(Duration::from_secs(5)).await
    })?;
    Ok(())
}

/// With `header_read_timeout`, what the server read ahead reaches hyper: HTTP/1.1 and HTTP/2
/// (prior knowledge) requests are answered.
#[test]
fn a_header_read_timeout_serves_http1_and_http2_as_before() -> io::Result<()> {
    use tickless_http::hyper_rt::{TicklessExecutor, TicklessIo};

    let rt = Builder::new().cores(1).build()?;
    let server = tickless_http::Http::new()
        .header_read_timeout(Duration::from_secs(30))
        .http2(true)
        .serve(&rt, localhost(), ok())?;
    let addr = server.local_addr();
    rt.block_on(async {
        assert_eq!(get(format!("http://{addr}/")).await.0, StatusCode::OK);
        let io = TicklessIo::new(tickless::net::TcpStream::connect(addr).await?);
        let (mut h2, conn) = hyper::client::conn::http2::Builder::new(TicklessExecutor)
            .handshake(io)
            .await
            .map_err(io::Error::other)?;
        let driver = tickless::spawn_local(conn);
        let req = Request::get(format!("http://{addr}/"))
            .body(Empty::<Bytes>::new())
            .unwrap();
        let res = h2.send_request(req).await.map_err(io::Error::other)?;
        assert_eq!(res.status(), StatusCode::OK);
        drop(h2);
        let _closed = driver.await;
        server.shutdown(Duration::from_secs(5)).await
    })?;
    Ok(())
}

/// `serve` called from `main`, then 100 requests from `main`, each on a connection of its own,
/// with no thread ever in `block_on`: every one is answered (core 1 serves core 0's listener
/// while core 0 runs nothing; before, the connections the kernel gave core 0's listener were
/// never accepted).
#[test]
fn serve_answers_every_connection_with_no_thread_in_block_on() -> io::Result<()> {
    use std::io::{Read, Write};

    let rt = Builder::new().cores(2).build()?;
    let server = tickless_http::serve(&rt, localhost(), ok())?;
    let addr = server.local_addr();
    for i in 0..100 {
        let mut c = std::net::TcpStream::connect(addr)?;
        c.set_read_timeout(Some(Duration::from_secs(30)))?;
        c.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")?;
        let mut reply = String::new();
        c.read_to_string(&mut reply)
            .unwrap_or_else(|e| panic!("request {i} got no answer: {e}"));
        assert!(reply.starts_with("HTTP/1.1 200"), "request {i}: {reply}");
    }
    Ok(())
}
