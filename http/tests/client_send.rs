//! tickless-http's client on a runtime that moves between threads: its pooled connections are
//! `Send` tasks, so core 0 is not tied to the thread that opened them (the HTTP part of
//! `tickless`'s `rt_send.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use tickless::{Builder, Runtime};

/// An HTTP/1.1 server on a plain thread: answers `ok` to every request of every connection,
/// counting the connections.
fn keep_alive_server() -> std::io::Result<(std::net::SocketAddr, Arc<AtomicUsize>)> {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            count.fetch_add(1, Ordering::SeqCst);
            thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while let Ok(n @ 1..) = conn.read(&mut chunk) {
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                        if conn.write_all(reply).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    Ok((addr, accepted))
}

#[test]
fn a_blocking_http_client_keeps_its_pooled_connection_across_threads() -> std::io::Result<()> {
    use bytes::Bytes;
    use http_body_util::{BodyExt, Empty};

    let (addr, accepted) = keep_alive_server()?;
    let uri: hyper::Uri = format!("http://{addr}/").parse().unwrap();
    let rt = Builder::new().cores(1).build()?;
    let client = tickless_http::client::<Empty<Bytes>>();
    let get = move |rt: &Runtime, client: &tickless_http::Client<Empty<Bytes>>| {
        rt.block_on(async {
            let res = client.get(uri.clone()).await.unwrap();
            res.into_body().collect().await.unwrap().to_bytes()
        })
    };
    assert_eq!(get(&rt, &client), "ok");
    // The pooled connection's task lives on core 0 between the calls; it is a `Send` task, so
    // the client moves on, and its next request reuses the connection from the other thread.
    let body = thread::spawn(move || get(&rt, &client)).join().unwrap();
    assert_eq!(body, "ok");
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    Ok(())
}

/// A request dropped while its connection is still connecting (a client timeout), then the
/// client used from another thread: the connect ran inside the request, so nothing of it is
/// left on core 0 to tie it to the first thread. (Before: the connect was a `spawn_local` task,
/// alive until the connect gave up, and every `block_on` on another thread panicked.)
#[test]
fn a_request_dropped_mid_connect_leaves_the_client_free_to_move() -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    use bytes::Bytes;
    use http_body_util::Empty;

    // A listener nobody accepts on, with room for one pending connection, taken at once: the
    // kernel drops the client's SYN, and its connect stays pending.
    let full = std::net::TcpListener::bind("127.0.0.1:0")?;
    // SAFETY: a valid listening socket; `listen` again only lowers its backlog.
    assert_eq!(unsafe { libc::listen(full.as_raw_fd(), 0) }, 0);
    let full_addr = full.local_addr()?;
    let _pending = std::net::TcpStream::connect(full_addr)?;
    let (addr, _) = keep_alive_server()?;

    let rt = Builder::new().cores(1).build()?;
    let client = tickless_http::client::<Empty<Bytes>>();
    let stuck: hyper::Uri = format!("http://{full_addr}/").parse().unwrap();
    let timed_out = rt.block_on(tickless::time::timeout(
        Duration::from_millis(50),
        client.get(stuck),
    ));
    assert!(timed_out.is_err(), "the connect should still be pending");
    let uri: hyper::Uri = format!("http://{addr}/").parse().unwrap();
    let status =
        thread::spawn(move || rt.block_on(async { client.get(uri).await.map(|res| res.status()) }))
            .join()
            .expect("block_on on another thread panicked: core 0 is tied to the first one")
            .map_err(std::io::Error::other)?;
    assert_eq!(status, 200);
    Ok(())
}

/// The client's connection pooled on core 0 (opened in `block_on`), then used from a task of
/// core 1 while no thread is in `block_on`: the connection's task moves to a core that runs
/// (core 0 hands its `Send` tasks over when `block_on` returns), its stream follows it, and the
/// request is answered over the same connection. (Before: the request's wake went to core 0's
/// inbox, which nothing drained, and it waited for ever.)
#[test]
fn a_connection_pooled_on_core_0_serves_a_request_from_core_1_outside_block_on(
) -> std::io::Result<()> {
    use bytes::Bytes;
    use http_body_util::{BodyExt, Empty};

    let (addr, accepted) = keep_alive_server()?;
    let uri: hyper::Uri = format!("http://{addr}/").parse().unwrap();
    let rt = Builder::new().cores(2).build()?;
    let client = tickless_http::client::<Empty<Bytes>>();
    let first = rt.block_on({
        let (client, uri) = (client.clone(), uri.clone());
        async move {
            let res = client.get(uri).await.unwrap();
            res.into_body().collect().await.unwrap().to_bytes()
        }
    });
    assert_eq!(first, "ok");
    let second = rt
        .handle(1)
        .spawn(async move {
            let res = client.get(uri).await.unwrap();
            let body = res.into_body().collect().await.unwrap().to_bytes();
            (body, tickless::core_id())
        })
        .join()
        .expect("the request on core 1");
    assert_eq!(second, (Bytes::from_static(b"ok"), 1));
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "the pooled connection was reused"
    );
    Ok(())
}
