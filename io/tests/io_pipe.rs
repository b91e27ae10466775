//! Pipes: data integrity, end of file, broken pipe, adopted descriptors.

mod common;

use std::io;
use std::os::fd::OwnedFd;

use common::run;
use futures_lite::future::zip;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless_io::{pipe, PipeReader, PipeWriter};

use tickless_io::internal::Reactor;

/// A recognisable, non-repeating-at-small-periods byte pattern.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn round_trip_small_message() -> io::Result<()> {
    run(async {
        let (mut w, mut r) = pipe()?;
        w.write_all(b"ping").await?;
        let mut buf = [0u8; 4];
        r.read_exact(&mut buf).await?;
        assert_eq!(&buf, b"ping");
        Ok(())
    })
}

#[test]
fn large_transfer_waits_for_readiness_and_keeps_every_byte() -> io::Result<()> {
    // 1 MiB through a 64 KiB pipe: the writer must hit WouldBlock and wait for the reader.
    let data = pattern(1 << 20);
    let received = run(async {
        let (mut w, mut r) = pipe()?;
        let writer = async {
            w.write_all(&data).await?;
            w.close().await
        };
        let reader = async {
            let mut got = Vec::new();
            r.read_to_end(&mut got).await?;
            Ok::<_, io::Error>(got)
        };
        let (wrote, got) = zip(writer, reader).await;
        wrote?;
        let stats = Reactor::with_current(Reactor::stats)?;
        assert!(stats.wakes > 0, "the transfer never waited: {stats:?}");
        got
    })?;
    assert_eq!(received.len(), data.len());
    assert!(received == data, "bytes differ");
    Ok(())
}

#[test]
fn reading_a_closed_pipe_gives_zero() -> io::Result<()> {
    run(async {
        let (mut w, mut r) = pipe()?;
        w.write_all(b"ab").await?;
        drop(w);
        let mut buf = [0u8; 8];
        assert_eq!(r.read(&mut buf).await?, 2);
        assert_eq!(&buf[..2], b"ab");
        assert_eq!(r.read(&mut buf).await?, 0);
        assert_eq!(r.read(&mut buf).await?, 0);
        Ok(())
    })
}

#[test]
fn close_gives_the_reader_end_of_file() -> io::Result<()> {
    run(async {
        let (mut w, mut r) = pipe()?;
        w.write_all(b"last").await?;
        w.close().await?;
        let mut got = Vec::new();
        r.read_to_end(&mut got).await?;
        assert_eq!(got, b"last");
        let err = w.write(b"x").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        Ok(())
    })
}

#[test]
fn writing_with_the_reader_gone_is_broken_pipe() -> io::Result<()> {
    run(async {
        let (mut w, r) = pipe()?;
        drop(r);
        let err = w.write_all(b"nobody listens").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        Ok(())
    })
}

#[test]
fn blocked_writer_sees_broken_pipe_when_the_reader_goes() -> io::Result<()> {
    run(async {
        let (mut w, r) = pipe()?;
        let big = pattern(1 << 20);
        let writer = w.write_all(&big);
        let closer = async {
            // Let the writer fill the pipe and wait, then close the read end under it.
            futures_lite::future::yield_now().await;
            drop(r);
        };
        let (wrote, ()) = zip(writer, closer).await;
        assert_eq!(wrote.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        Ok(())
    })
}

#[test]
fn adopted_blocking_descriptors_are_made_non_blocking() -> io::Result<()> {
    // std's socketpair is blocking: a read on an empty one would hang the test if
    // `from_owned_fd` did not switch it to non-blocking.
    run(async {
        let (a, b) = std::os::unix::net::UnixStream::pair()?;
        let mut r = PipeReader::from_owned_fd(OwnedFd::from(a))?;
        let mut w = PipeWriter::from_owned_fd(OwnedFd::from(b))?;
        let mut buf = [0u8; 3];
        let (read, wrote) = zip(r.read_exact(&mut buf), async {
            futures_lite::future::yield_now().await;
            w.write_all(b"abc").await
        })
        .await;
        read?;
        wrote?;
        assert_eq!(&buf, b"abc");
        Ok(())
    })
}

#[test]
fn both_ends_expose_their_descriptors() -> io::Result<()> {
    use std::os::fd::{AsFd, AsRawFd};
    common::run(async {
        let (r, w) = tickless_io::pipe()?;
        assert!(r.as_raw_fd() >= 0 && w.as_raw_fd() >= 0);
        assert_ne!(r.as_fd().as_raw_fd(), w.as_fd().as_raw_fd());
        Ok(())
    })
}
