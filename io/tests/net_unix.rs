//! Unix domain streams: pairs, listeners, closed peers.

mod common;

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::run;
use futures_lite::future::zip;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless_io::{UnixListener, UnixStream};

/// A socket path unique to this process and call, removed on drop.
struct TempPath(PathBuf);

impl TempPath {
    fn new() -> TempPath {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("tickless-io-{}-{n}.sock", std::process::id());
        let path = std::env::temp_dir().join(name);
        let _stale = std::fs::remove_file(&path);
        TempPath(path)
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _gone = std::fs::remove_file(&self.0);
    }
}

#[test]
fn pair_round_trip_both_ways() -> io::Result<()> {
    run(async {
        let (mut a, mut b) = UnixStream::pair()?;
        a.write_all(b"from a").await?;
        let mut buf = [0u8; 6];
        b.read_exact(&mut buf).await?;
        assert_eq!(&buf, b"from a");

        b.write_all(b"from b").await?;
        b.close().await?;
        let mut got = Vec::new();
        a.read_to_end(&mut got).await?;
        assert_eq!(got, b"from b");
        Ok(())
    })
}

#[test]
fn listener_accepts_a_connection() -> io::Result<()> {
    let path = TempPath::new();
    run(async {
        let listener = UnixListener::bind(&path.0)?;
        assert_eq!(listener.local_addr()?.as_pathname(), Some(path.0.as_path()));
        let (accepted, connected) = zip(listener.accept(), UnixStream::connect(&path.0)).await;
        let (mut server, _) = accepted?;
        let mut client = connected?;
        client.write_all(b"over the socket file").await?;
        client.close().await?;
        let mut got = Vec::new();
        server.read_to_end(&mut got).await?;
        assert_eq!(got, b"over the socket file");
        Ok(())
    })
}

#[test]
fn connecting_without_a_socket_file_fails() -> io::Result<()> {
    let path = TempPath::new();
    run(async {
        let err = UnixStream::connect(&path.0).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        Ok(())
    })
}

#[test]
fn writing_to_a_closed_peer_is_broken_pipe() -> io::Result<()> {
    run(async {
        let (mut a, b) = UnixStream::pair()?;
        drop(b);
        let err = a.write_all(b"gone").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        Ok(())
    })
}
