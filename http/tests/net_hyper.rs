//! The tokio-io ecosystem on tickless (tickless-http's `hyper_rt`, tickless's `tokio-io`): hyper's HTTP/1.1 and
//! HTTP/2 server and client, over `TicklessIo` and over hyper-util's `TokioIo`, hyper's own
//! timeouts on tickless timers, and tokio-util's codecs.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, Version};
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto;
use tickless::net::{serve_per_core, Server, TcpStream};
use tickless::time::timeout;
use tickless::{spawn_local, Builder, Runtime};
use tickless_http::hyper_rt::{TicklessExecutor, TicklessIo, TicklessTimer};
use tokio_util::codec::{Framed, LinesCodec};

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn other<E: std::error::Error + Send + Sync + 'static>(e: E) -> io::Error {
    io::Error::other(e)
}

async fn hello(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = format!(
        "Hello, world! {} on core {}",
        req.uri().path(),
        tickless::core_id()
    );
    Ok(Response::new(Full::new(Bytes::from(body))))
}

/// Which adapter hands the streams to hyper.
#[derive(Debug, Clone, Copy)]
enum Adapter {
    /// `tickless_http::hyper_rt::TicklessIo`.
    Tickless,
    /// hyper-util's `TokioIo`, through the `tokio-io` feature.
    Tokio,
}

/// hello_http's server, with a given header-read (keep-alive) timeout.
fn hello_server(rt: &Runtime, keep_alive: Duration, adapter: Adapter) -> io::Result<Server> {
    let mut http = auto::Builder::new(TicklessExecutor);
    http.http1()
        .timer(TicklessTimer)
        .header_read_timeout(keep_alive);
    http.http2()
        .timer(TicklessTimer)
        .keep_alive_interval(keep_alive);
    serve_per_core(rt, localhost(), move |stream, _conn| {
        let http = http.clone();
        async move {
            // As hello_http: the auto builder's version detection has no timer of its own.
            match timeout(keep_alive, stream.peek(&mut [0u8; 1])).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return,
            }
            let _ordinary_end = match adapter {
                Adapter::Tickless => {
                    http.serve_connection(TicklessIo::new(stream), service_fn(hello))
                        .await
                }
                Adapter::Tokio => {
                    http.serve_connection(TokioIo::new(stream), service_fn(hello))
                        .await
                }
            };
        }
    })
}

fn get(path: &str) -> Request<Empty<Bytes>> {
    Request::get(path).body(Empty::new()).unwrap()
}

#[test]
fn http1_keep_alive_requests_on_tickless_over_both_adapters() -> io::Result<()> {
    for adapter in [Adapter::Tickless, Adapter::Tokio] {
        http1_keep_alive(adapter)?;
    }
    Ok(())
}

fn http1_keep_alive(adapter: Adapter) -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let server = hello_server(&rt, Duration::from_secs(30), adapter)?;
    let addr = server.local_addr();
    rt.block_on(async {
        let io = TokioIo::new(TcpStream::connect(addr).await?);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(other)?;
        let driver = spawn_local(conn);
        for i in 0..20 {
            let resp = sender
                .send_request(get(&format!("/{i}")))
                .await
                .map_err(other)?;
            assert_eq!(resp.version(), Version::HTTP_11);
            let body = resp.into_body().collect().await.map_err(other)?.to_bytes();
            let text = String::from_utf8_lossy(&body);
            assert!(
                text.starts_with(&format!("Hello, world! /{i} on core ")),
                "{text}"
            );
        }
        drop(sender);
        driver.await?.map_err(other)?;
        let stats = server.stats();
        assert_eq!(
            stats.total.accepted, 1,
            "one keep-alive connection for every request"
        );
        server.shutdown(Duration::from_secs(10)).await
    })?;
    Ok(())
}

#[test]
fn http2_prior_knowledge_streams_on_tickless() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let server = hello_server(&rt, Duration::from_secs(30), Adapter::Tokio)?;
    let addr = server.local_addr();
    rt.block_on(async {
        let io = TicklessIo::new(TcpStream::connect(addr).await?);
        let (sender, conn) = hyper::client::conn::http2::Builder::new(TicklessExecutor)
            .timer(TicklessTimer)
            .handshake(io)
            .await
            .map_err(other)?;
        drop(spawn_local(conn));
        // Concurrent streams on one connection, each driven by a task of this core.
        let streams: Vec<_> = (0..16)
            .map(|i| {
                let mut sender = sender.clone();
                spawn_local(async move {
                    let resp = sender
                        .send_request(get(&format!("http://localhost/{i}")))
                        .await
                        .map_err(other)?;
                    assert_eq!(resp.version(), Version::HTTP_2);
                    let body = resp.into_body().collect().await.map_err(other)?.to_bytes();
                    io::Result::Ok(String::from_utf8_lossy(&body).into_owned())
                })
            })
            .collect();
        for (i, s) in streams.into_iter().enumerate() {
            let text = s.await??;
            assert!(
                text.starts_with(&format!("Hello, world! /{i} on core ")),
                "{text}"
            );
        }
        drop(sender);
        server.shutdown(Duration::from_secs(10)).await
    })?;
    Ok(())
}

#[test]
fn hypers_header_read_timeout_fires_on_tickless_timers() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    let server = hello_server(&rt, Duration::from_millis(20), Adapter::Tickless)?;
    let addr = server.local_addr();
    let fires_before = rt.stats().total.timer_fires;
    rt.block_on(async {
        // Connects and sends nothing: the first-byte `timeout` closes the connection.
        let mut idle = TcpStream::connect(addr).await?;
        let mut rest = Vec::new();
        let _eof_or_reset = idle.read_to_end(&mut rest).await;
        // A half-sent request head: hyper's timer (a tickless sleep) closes the connection.
        let mut slow = TcpStream::connect(addr).await?;
        slow.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").await?;
        let _eof_or_reset = slow.read_to_end(&mut rest).await;
        server.shutdown(Duration::from_secs(10)).await
    })?;
    assert!(
        rt.stats().total.timer_fires >= fires_before + 2,
        "hyper's timeouts fired on the wheel"
    );
    Ok(())
}

#[test]
fn tokio_util_codecs_run_on_tickless_streams() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let server = serve_per_core(&rt, localhost(), |stream, _conn| async move {
        let mut lines = Framed::new(stream, LinesCodec::new());
        while let Some(Ok(line)) = lines.next().await {
            if lines.send(line.to_uppercase()).await.is_err() {
                break;
            }
        }
    })?;
    let addr = server.local_addr();
    rt.block_on(async {
        let mut lines = Framed::new(TcpStream::connect(addr).await?, LinesCodec::new());
        for word in ["tickless", "hyper", "tokio-util"] {
            lines.send(word).await.map_err(other)?;
            let back = lines.next().await.expect("a line").map_err(other)?;
            assert_eq!(back, word.to_uppercase());
        }
        drop(lines);
        server.shutdown(Duration::from_secs(10)).await
    })?;
    Ok(())
}

#[test]
fn large_bodies_through_tickless_io_arrive_whole() -> io::Result<()> {
    // Bodies larger than `TicklessIo`'s per-thread scratch buffer (64 KiB), both ways.
    let rt = Builder::new().cores(2).build()?;
    let server = serve_per_core(&rt, localhost(), |stream, _conn| async move {
        let service = service_fn(|req: Request<Incoming>| async move {
            let body = req.into_body().collect().await?.to_bytes();
            // Answer with the body reversed: every byte has to have arrived, in order.
            let reversed: Vec<u8> = body.iter().rev().copied().collect();
            Ok::<_, hyper::Error>(Response::new(Full::new(Bytes::from(reversed))))
        });
        let _ordinary_end = hyper::server::conn::http1::Builder::new()
            .serve_connection(TicklessIo::new(stream), service)
            .await;
    })?;
    let addr = server.local_addr();
    rt.block_on(async {
        let io = TicklessIo::new(TcpStream::connect(addr).await?);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(other)?;
        drop(spawn_local(conn));
        for len in [0usize, 1, 65_535, 65_536, 65_537, 1 << 20] {
            let body: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
            let req = Request::post("/")
                .body(Full::new(Bytes::from(body.clone())))
                .unwrap();
            let resp = sender.send_request(req).await.map_err(other)?;
            let back = resp.into_body().collect().await.map_err(other)?.to_bytes();
            let expected: Vec<u8> = body.iter().rev().copied().collect();
            assert!(back == expected, "{len} bytes came back altered");
        }
        drop(sender);
        server.shutdown(Duration::from_secs(10)).await
    })?;
    Ok(())
}
