//! `tickless::fs::File`: reads, writes and seeks on the blocking pool, writes reported done
//! before they are (errors at the next operation), the position always the caller's, the core
//! free while a file operation blocks.

use std::io::{self, SeekFrom};
use std::path::{Path, PathBuf};

use futures_lite::future::{poll_once, zip};
use futures_lite::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use tickless::fs::{File, OpenOptions};
use tickless::Builder;

/// A fresh directory under the system's temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> io::Result<TempDir> {
        let dir =
            std::env::temp_dir().join(format!("tickless-fs-file-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `len` bytes that differ from their neighbours, so that a misplaced byte shows.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Writes `data` to a new file at `path`, through `File`.
async fn write_file(path: &Path, data: &[u8]) -> io::Result<()> {
    let mut file = File::create(path).await?;
    file.write_all(data).await?;
    file.flush().await
}

#[test]
fn a_mebibyte_in_uneven_chunks_reads_back_the_same() -> io::Result<()> {
    let dir = TempDir::new("big")?;
    let path = dir.join("big.bin");
    let data = pattern(1 << 20);
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        // Writes cut at odd sizes on both sides of the 16 KiB a job takes.
        let mut file = File::create(&path).await?;
        let (mut at, mut sizes) = (0, [1, 4095, 16_385, 7, 30_000, 16_384].iter().cycle());
        while at < data.len() {
            let end = (at + sizes.next().unwrap()).min(data.len());
            file.write_all(&data[at..end]).await?;
            at = end;
        }
        file.flush().await?;
        file.sync_all().await?;
        assert_eq!(file.metadata().await?.len(), data.len() as u64);

        // Reads into buffers of odd sizes, from 1 byte to more than a job reads.
        let mut file = File::open(&path).await?;
        let (mut back, mut sizes) = (
            Vec::new(),
            [3, 20_000, 16_384, 999, 1, 40_000].iter().cycle(),
        );
        let mut chunk = vec![0u8; 40_000];
        let mut reads = 0;
        loop {
            let n = file.read(&mut chunk[..*sizes.next().unwrap()]).await?;
            if n == 0 {
                break;
            }
            assert!(n <= 16 * 1024, "one job reads at most 16 KiB, not {n}");
            back.extend_from_slice(&chunk[..n]);
            reads += 1;
        }
        assert!(back == data, "the bytes read back differ");
        assert!(
            reads > 64,
            "1 MiB takes more than 64 reads of at most 16 KiB: {reads}"
        );
        assert_eq!(tickless::fs::read(&path).await?, data, "and std agrees");
        io::Result::Ok(())
    })?;
    assert!(rt.stats().blocking_threads >= 1, "the file ran on the pool");
    Ok(())
}

#[test]
fn append_writes_go_to_the_end_whatever_the_cursor() -> io::Result<()> {
    let dir = TempDir::new("append")?;
    let path = dir.join("log.txt");
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        write_file(&path, b"one\n").await?;
        let mut log = File::options().append(true).open(&path).await?;
        log.seek(SeekFrom::Start(0)).await?;
        log.write_all(b"two\n").await?;
        log.flush().await?;
        let mut log = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .await?;
        log.write_all(b"three\n").await?;
        log.close().await?;
        assert_eq!(
            tickless::fs::read_to_string(&path).await?,
            "one\ntwo\nthree\n"
        );
        io::Result::Ok(())
    })
}

#[test]
fn seeks_count_from_the_callers_position_after_a_partial_read() -> io::Result<()> {
    let dir = TempDir::new("seek")?;
    let path = dir.join("data.bin");
    let data = pattern(40_000);
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        write_file(&path, &data).await?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .await?;

        // A plain partial read: the cursor is where the bytes stop.
        let mut ten = [0u8; 10];
        file.read_exact(&mut ten).await?;
        assert_eq!(ten, data[..10]);
        assert_eq!(file.seek(SeekFrom::Current(0)).await?, 10);

        // Read-ahead: a 16 KiB read abandoned after its first poll, then a 10-byte one that
        // takes its result: the file's cursor is 16 KiB on, the caller's 10 bytes on.
        let mut big = vec![0u8; 16 * 1024];
        assert!(
            poll_once(file.read(&mut big)).await.is_none(),
            "the read is in flight"
        );
        file.read_exact(&mut ten).await?;
        assert_eq!(ten, data[10..20]);
        assert_eq!(
            file.seek(SeekFrom::Current(5)).await?,
            25,
            "read-ahead given back"
        );
        let mut one = [0u8; 1];
        file.read_exact(&mut one).await?;
        assert_eq!(one[0], data[25]);

        assert_eq!(file.seek(SeekFrom::Start(30_000)).await?, 30_000);
        file.read_exact(&mut one).await?;
        assert_eq!(one[0], data[30_000]);
        assert_eq!(file.seek(SeekFrom::End(-3)).await?, 39_997);
        let mut tail = Vec::new();
        file.read_to_end(&mut tail).await?;
        assert_eq!(tail, data[39_997..]);
        let err = file.seek(SeekFrom::Current(-50_000)).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "before the start");

        // A write after read-ahead lands at the caller's position, not the file's cursor.
        file.seek(SeekFrom::Start(100)).await?;
        assert!(poll_once(file.read(&mut big)).await.is_none());
        file.read_exact(&mut ten).await?;
        file.write_all(b"XYZ").await?;
        file.flush().await?;
        assert_eq!(file.seek(SeekFrom::Current(0)).await?, 113);
        let back = tickless::fs::read(&path).await?;
        assert_eq!(&back[110..113], b"XYZ");
        assert_eq!(back[113..], data[113..], "nothing else moved");
        assert_eq!(back.len(), data.len());
        io::Result::Ok(())
    })
}

#[test]
fn set_len_truncates_and_extends_without_moving_the_position() -> io::Result<()> {
    let dir = TempDir::new("set-len")?;
    let path = dir.join("data.bin");
    let data = pattern(100);
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let mut file = File::create_new(&path).await?;
        file.write_all(&data).await?; // in flight: set_len waits for it
        file.set_len(10).await?;
        assert_eq!(file.metadata().await?.len(), 10);
        file.set_len(50).await?;
        assert_eq!(file.metadata().await?.len(), 50);
        file.sync_data().await?;
        let back = tickless::fs::read(&path).await?;
        assert_eq!(back[..10], data[..10]);
        assert!(back[10..].iter().all(|&b| b == 0), "extended with zeros");

        // The position stayed at 100: a write there leaves a hole.
        assert_eq!(file.seek(SeekFrom::Current(0)).await?, 100);
        file.write_all(b"!").await?;
        assert_eq!(
            file.metadata().await?.len(),
            101,
            "metadata waits for the write"
        );

        // After read-ahead, set_len gives it back first: the position is the caller's.
        file.seek(SeekFrom::Start(0)).await?;
        let mut big = vec![0u8; 16 * 1024];
        assert!(poll_once(file.read(&mut big)).await.is_none());
        let mut four = [0u8; 4];
        file.read_exact(&mut four).await?;
        file.set_len(20).await?;
        assert_eq!(file.seek(SeekFrom::Current(0)).await?, 4);
        io::Result::Ok(())
    })
}

#[test]
fn a_read_at_the_end_of_the_file_gives_zero() -> io::Result<()> {
    let dir = TempDir::new("eof")?;
    let (empty, short) = (dir.join("empty"), dir.join("short"));
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        write_file(&empty, b"").await?;
        write_file(&short, b"12345").await?;
        let mut buf = [0u8; 64];
        let mut file = File::open(&empty).await?;
        assert_eq!(file.read(&mut buf).await?, 0);
        let mut file = File::open(&short).await?;
        assert_eq!(file.read(&mut buf).await?, 5);
        assert_eq!(file.read(&mut buf).await?, 0);
        assert_eq!(file.read(&mut buf).await?, 0, "and again");
        file.seek(SeekFrom::Start(1_000)).await?;
        assert_eq!(file.read(&mut buf).await?, 0, "past the end");
        io::Result::Ok(())
    })
}

#[test]
fn errors_are_std_s_and_a_failed_write_shows_at_the_next_operation() -> io::Result<()> {
    let dir = TempDir::new("errors")?;
    let path = dir.join("ro.txt");
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let missing = File::open(dir.join("missing")).await.unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let missing = File::options()
            .write(true)
            .open(dir.join("nope/x"))
            .await
            .unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        write_file(&path, b"read only").await?;
        let exists = File::create_new(&path).await.unwrap_err();
        assert_eq!(exists.kind(), io::ErrorKind::AlreadyExists);

        // Opened for reading only: the write is reported done, its EBADF comes at the flush,
        // once; then the file works on.
        let mut file = File::open(&path).await?;
        assert_eq!(file.write(b"nope").await?, 4, "reported done at once");
        let err = file.flush().await.unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EBADF));
        file.flush().await?;
        let mut text = String::new();
        file.read_to_string(&mut text).await?;
        assert_eq!(text, "read only", "unchanged");

        // Or at the next write, seek or sync.
        file.write_all(b"nope").await?;
        let err = file.write_all(b"again").await.unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EBADF));
        file.write_all(b"nope").await?;
        assert!(file.seek(SeekFrom::Start(0)).await.is_err());
        file.write_all(b"nope").await?;
        assert!(file.sync_all().await.is_err());
        let err = file.set_len(0).await.unwrap_err();
        assert_eq!(
            err.kind(),
            io::ErrorKind::InvalidInput,
            "std's, for a read-only file"
        );
        assert_eq!(tickless::fs::read(&path).await?, b"read only");
        io::Result::Ok(())
    })
}

#[test]
fn the_core_runs_on_while_a_file_operation_blocks() -> io::Result<()> {
    let dir = TempDir::new("fifo")?;
    let fifo = dir.join("fifo");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c_path` is a valid NUL-terminated path for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        // Opening a FIFO for reading blocks (on a pool thread) until a writer opens it.
        let path = fifo.clone();
        let reader = tickless::spawn(async move {
            let mut text = String::new();
            File::open(&path).await?.read_to_string(&mut text).await?;
            io::Result::Ok(text)
        });
        let yielder = tickless::spawn(async {
            let mut yields = 0u32;
            for _ in 0..1_000 {
                tickless::yield_now().await;
                yields += 1;
            }
            yields
        });
        assert_eq!(
            yielder.await.unwrap(),
            1_000,
            "the other task ran to the end"
        );
        assert!(!reader.is_finished(), "while the open was still blocked");

        let mut writer = File::options().write(true).open(&fifo).await?;
        writer.write_all(b"through the pool").await?;
        writer.flush().await?;
        drop(writer); // closed on the pool: the reader sees the end
        assert_eq!(reader.await.unwrap()?, "through the pool");
        io::Result::Ok(())
    })?;
    assert!(rt.stats().blocking_threads >= 1);
    Ok(())
}

#[test]
fn a_file_dropped_with_a_write_in_flight_still_writes_it() -> io::Result<()> {
    let dir = TempDir::new("drop")?;
    let path = dir.join("data.bin");
    let data = pattern(20_000);
    // One pool thread runs the jobs in the order they were spawned: the write, the close, then
    // the read below.
    let rt = Builder::new().cores(1).max_blocking_threads(1).build()?;
    rt.block_on(async {
        let mut file = File::create(&path).await?;
        file.write_all(&data).await?; // the last 3,616 bytes are in flight
        drop(file);
        assert_eq!(tickless::fs::read(&path).await?, data);
        io::Result::Ok(())
    })
}

#[test]
fn a_file_dropped_at_shutdown_with_a_write_in_flight_is_let_go_quietly() -> io::Result<()> {
    let dir = TempDir::new("shutdown")?;
    let path = dir.join("data.bin");
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let mut file = File::create(&path).await?;
        // A task that hands a write to the pool and then never ends: shutdown drops it, and
        // its file (whose close, spawned during shutdown, is dropped unstarted and closes it
        // there).
        tickless::spawn(async move {
            file.write_all(&pattern(100_000)).await.unwrap();
            std::future::pending::<()>().await;
        });
        for _ in 0..3 {
            tickless::yield_now().await;
        }
        io::Result::Ok(())
    })?;
    let stats = rt.stats().total;
    assert_eq!(
        (stats.task_panics, stats.drop_panics),
        (0, 0),
        "the write was taken"
    );
    rt.shutdown(std::time::Duration::from_secs(60))
        .map_err(|e| io::Error::other(format!("{e:?}")))?;
    // The part of the write that ran before the shutdown, if any: the file is closed.
    assert!(std::fs::metadata(&path)?.len() <= 100_000);
    Ok(())
}

#[test]
fn the_shared_methods_take_turns_after_the_write_in_flight() -> io::Result<()> {
    let dir = TempDir::new("turns")?;
    let path = dir.join("data.bin");
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let mut file = File::create(&path).await?;
        file.write_all(&pattern(5_000)).await?;
        let file = &file;
        let ((synced, meta), clone) =
            zip(zip(file.sync_all(), file.metadata()), file.try_clone()).await;
        synced?;
        assert_eq!(meta?.len(), 5_000);
        let mut clone = clone?;
        clone.write_all(b"tail").await?; // the clone shares the cursor, at 5,000
        clone.flush().await?;
        assert_eq!(file.metadata().await?.len(), 5_004);
        io::Result::Ok(())
    })
}

#[test]
fn into_std_hands_back_the_file_at_the_callers_position() -> io::Result<()> {
    let dir = TempDir::new("into-std")?;
    let path = dir.join("data.bin");
    let data = pattern(30_000);
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        write_file(&path, &data).await?;
        let mut file = File::open(&path).await?;
        let mut big = vec![0u8; 16 * 1024];
        assert!(poll_once(file.read(&mut big)).await.is_none());
        file.read_exact(&mut [0u8; 7]).await?;
        let mut plain = file.into_std().await;
        let (plain, pos) = tickless::task::spawn_blocking(move || {
            let pos = io::Seek::stream_position(&mut plain);
            (plain, pos)
        })
        .await?;
        assert_eq!(pos?, 7, "the read-ahead was given back");
        let mut again = File::from_std(plain);
        let mut one = [0u8; 1];
        again.read_exact(&mut one).await?;
        assert_eq!(
            one[0], data[7],
            "from_std reads on from the std file's cursor"
        );
        io::Result::Ok(())
    })
}

/// tokio's traits, apart from futures-lite's (whose methods have the same names).
mod tokio_traits {
    use std::io::{self, SeekFrom};

    use tickless::fs::File;
    use tickless::Builder;
    use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    use super::{pattern, TempDir};

    #[test]
    fn tokio_s_traits_drive_the_same_file() -> io::Result<()> {
        let dir = TempDir::new("tokio")?;
        let path = dir.join("data.bin");
        let data = pattern(50_000);
        let rt = Builder::new().cores(1).build()?;
        rt.block_on(async {
            let mut file = File::options()
                .read(true)
                .write(true)
                .create(true)
                .open(&path)
                .await?;
            file.write_all(&data).await?;
            file.flush().await?;
            assert_eq!(file.seek(SeekFrom::Start(10)).await?, 10);
            let mut back = Vec::new();
            file.read_to_end(&mut back).await?;
            assert_eq!(back, data[10..]);
            assert_eq!(file.seek(SeekFrom::End(-1)).await?, 49_999);
            assert_eq!(file.read_u8().await?, data[49_999]);
            assert_eq!(file.stream_position().await?, 50_000);
            file.shutdown().await?;
            io::Result::Ok(())
        })
    }
}

#[test]
fn files_and_their_futures_are_send() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}
    send_sync::<File>();
    send_sync::<OpenOptions>();
    let file = File::from_std(tempfile_std());
    send(&file.metadata());
    send(&file.sync_all());
    send(&File::open("x"));
}

/// An unnamed std file, for the compile-time checks (never used by a runtime).
fn tempfile_std() -> std::fs::File {
    std::fs::File::open("/dev/null").expect("/dev/null")
}
