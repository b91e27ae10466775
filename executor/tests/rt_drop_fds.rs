//! Dropping a runtime closes every file descriptor it opened: its own (epoll, timerfd,
//! eventfd) and those of the I/O objects its dropped tasks owned. Counted in `/proc/self/fd`.
//!
//! Alone in its binary, and one test that runs the cases in turn: any other test thread, even
//! one finishing, can hold a descriptor for a moment and skew the count (three tests taking
//! turns behind a lock did: a finishing test's thread was seen holding one while the next
//! counted).

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::{TcpListener, TcpStream, UnixStream};
use tickless::time::sleep;
use tickless::{spawn_local, yield_now, Runtime};

/// Open descriptors of this process, each with what it is (the directory handle used to list
/// them included, the same at every count); compared as a whole, so that a failure says which
/// descriptor differs.
fn open_fds() -> io::Result<Fds> {
    let mut fds = BTreeMap::new();
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let entry = entry?;
        let target = std::fs::read_link(entry.path()).map(|p| p.display().to_string());
        fds.insert(
            entry.file_name().to_string_lossy().into_owned(),
            target.unwrap_or_else(|e| format!("({e})")),
        );
    }
    Ok(Fds(fds))
}

/// The descriptors open at one moment: number -> what it is.
#[derive(Debug, PartialEq, Eq)]
struct Fds(BTreeMap<String, String>);

impl Fds {
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// Counts its drops.
struct DropGuard(Arc<AtomicUsize>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn dropped_runtimes_leave_no_descriptor_open() -> io::Result<()> {
    // The tokio context's runtimes (on by default with the `tokio-compat` feature) start
    // tokio's signal driver (tokio's `signal` feature, which these tests get), which opens a
    // socket pair for the process the first time, kept for the process's life: opened here,
    // before anything is counted.
    drop(Runtime::new()?);
    a_dropped_runtime_with_pending_tasks_leaves_no_descriptor_open()?;
    fifty_runtimes_in_a_row_leave_no_descriptor_open()?;
    a_core_s_descriptors_close_with_it_even_while_its_handles_live_on()
}

fn a_dropped_runtime_with_pending_tasks_leaves_no_descriptor_open() -> io::Result<()> {
    let before = open_fds()?;
    let drops = Arc::new(AtomicUsize::new(0));
    let rt = Runtime::new()?;
    rt.block_on(async {
        // Tasks parked on timers.
        for _ in 0..10_000 {
            let guard = DropGuard(drops.clone());
            drop(spawn_local(async move {
                let _guard = guard;
                sleep(Duration::from_secs(3600)).await;
            }));
        }
        // Tasks parked on pipes that never get data.
        for _ in 0..100 {
            let guard = DropGuard(drops.clone());
            let (w, mut r) = tickless::io::pipe()?;
            drop(spawn_local(async move {
                let _guard = guard;
                let _writer = w;
                let mut buf = [0u8; 1];
                r.read(&mut buf).await
            }));
        }
        // A listener parked in accept, and a connected TCP pair parked in a read.
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let mut client = TcpStream::connect(addr).await?;
        let (server, _) = listener.accept().await?;
        client.write_all(b"x").await?;
        let guard = DropGuard(drops.clone());
        drop(spawn_local(async move {
            let _guard = guard;
            let _server = server;
            listener.accept().await
        }));
        let guard = DropGuard(drops.clone());
        drop(spawn_local(async move {
            let _guard = guard;
            let mut buf = [0u8; 2];
            client.read_exact(&mut buf).await
        }));
        // Unix sockets too.
        let (a, mut b) = UnixStream::pair()?;
        let guard = DropGuard(drops.clone());
        drop(spawn_local(async move {
            let _guard = guard;
            let _a = a;
            let mut buf = [0u8; 1];
            b.read(&mut buf).await
        }));
        yield_now().await;
        Ok::<_, io::Error>(())
    })?;
    assert!(
        open_fds()?.len() > before.len(),
        "the runtime opened nothing?"
    );
    drop(rt);
    assert_eq!(drops.load(Ordering::SeqCst), 10_000 + 100 + 3);
    assert_eq!(
        open_fds()?,
        before,
        "descriptors leaked by a dropped runtime"
    );
    Ok(())
}

fn fifty_runtimes_in_a_row_leave_no_descriptor_open() -> io::Result<()> {
    let before = open_fds()?;
    for _ in 0..50 {
        let rt = Runtime::new()?;
        rt.block_on(async {
            // Arm the timerfd, park in epoll once and use a pipe.
            sleep(Duration::from_micros(50)).await;
            let (mut w, mut r) = tickless::io::pipe()?;
            w.write_all(b"ok").await?;
            let mut buf = [0u8; 2];
            r.read_exact(&mut buf).await?;
            assert_eq!(&buf, b"ok");
            // And leave a task pending on each.
            drop(spawn_local(async move {
                let _w = w;
                r.read(&mut buf).await
            }));
            Ok::<_, io::Error>(())
        })?;
        drop(rt);
    }
    assert_eq!(open_fds()?, before, "descriptors leaked over 50 runtimes");
    Ok(())
}

fn a_core_s_descriptors_close_with_it_even_while_its_handles_live_on() -> io::Result<()> {
    let before = open_fds()?;
    let rt = tickless::Builder::new().cores(2).build()?;
    let handles = (rt.handle(0), rt.handle(1));
    let task = handles.1.spawn(std::future::pending::<()>());
    drop(rt);
    assert_eq!(
        open_fds()?,
        before,
        "epoll, timerfd and eventfd of both cores closed, handles alive"
    );
    // A handle of a gone core refuses work; nothing reopens or writes a descriptor.
    assert!(task.join().unwrap_err().is_cancelled());
    assert!(handles.1.spawn(async {}).join().unwrap_err().is_cancelled());
    assert_eq!(open_fds()?, before);
    Ok(())
}
