//! An accept loop out of file descriptors: it reports once, retries only when a back-off timer
//! fires (never spins), stays alive, and serves the queued connection once descriptors are free.
//!
//! Alone in its binary, as one test: it lowers `RLIMIT_NOFILE` and fills the descriptor table
//! of the whole process.

use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::{Serve, ServeCounters, Server, TcpStream};
use tickless::time::sleep;
use tickless::Builder;

/// Open descriptors of this process.
fn open_fds() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/fd")?.count())
}

fn get_nofile() -> io::Result<libc::rlimit> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid `struct rlimit` for writes.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(lim)
}

fn set_nofile(lim: libc::rlimit) -> io::Result<()> {
    // SAFETY: `lim` is a valid `struct rlimit` for reads.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Opens descriptors until the table is full.
fn fill_table() -> io::Result<Vec<File>> {
    let mut fillers = Vec::new();
    loop {
        match File::open("/dev/null") {
            Ok(f) => fillers.push(f),
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) => return Ok(fillers),
            Err(e) => return Err(e),
        }
        assert!(fillers.len() < 100_000, "RLIMIT_NOFILE was not lowered");
    }
}

/// Waits, on the runtime, until the server's counters satisfy `done` (at most 10 s of real
/// time: a bug fails the test instead of hanging it).
async fn until(server: &Server, done: impl Fn(&ServeCounters) -> bool) -> ServeCounters {
    for _ in 0..2_000 {
        let c = server.stats().total;
        if done(&c) {
            return c;
        }
        sleep(Duration::from_millis(5)).await;
    }
    panic!("never reached; counters: {:?}", server.stats().total);
}

#[test]
fn accept_loop_backs_off_on_emfile_never_spins_and_recovers() -> io::Result<()> {
    // One core: its loop is the only one that can see the queued connection.
    let rt = Builder::new().cores(1).build()?;
    let reports = Arc::new(AtomicUsize::new(0));
    let r = reports.clone();
    let server = Serve::new(SocketAddr::from(([127, 0, 0, 1], 0)))
        .accept_backoff(Duration::from_millis(1), Duration::from_millis(8))
        .on_accept_error(move |_core, e| {
            assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "unexpected error {e}");
            r.fetch_add(1, Ordering::SeqCst);
        })
        .start(&rt, |mut stream, _conn| async move {
            let mut buf = [0u8; 4];
            if stream.read_exact(&mut buf).await.is_ok() {
                let _ = stream.write_all(&buf).await;
            }
        })?;
    let addr = server.local_addr();
    let saved = get_nofile()?;

    rt.block_on(async {
        // A small table, then full.
        set_nofile(libc::rlimit {
            rlim_cur: (open_fds()? + 16) as libc::rlim_t,
            rlim_max: saved.rlim_max,
        })?;
        let mut fillers = fill_table()?;
        // One free slot, for the client: the kernel completes the handshake and queues the
        // connection, but the server's `accept` has no descriptor left to give it.
        drop(fillers.pop());
        let mut client = TcpStream::connect(addr).await?;
        assert!(File::open("/dev/null").is_err(), "the table should be full");

        let during = until(&server, |c| c.resource_errors >= 6).await;
        // Reported once for the whole run of failures...
        assert_eq!(reports.load(Ordering::SeqCst), 1);
        assert_eq!(during.error_reports, 1);
        // ...and every retry came after a back-off timer fired: one failed attempt per timer,
        // plus the first. A loop that spun would have many more attempts than timers.
        assert_eq!(during.accept_errors, during.resource_errors);
        assert_eq!(during.resource_errors, during.backoffs + 1);
        assert_eq!(during.accepted, 0);

        // Free the descriptors: the next retry accepts the queued connection.
        drop(fillers);
        let after = until(&server, |c| c.accepted == 1).await;
        client.write_all(b"ping").await?;
        let mut echo = [0u8; 4];
        client.read_exact(&mut echo).await?;
        assert_eq!(&echo, b"ping");
        // The successful attempt also came after a timer; nothing more was reported.
        assert_eq!(after.resource_errors, after.backoffs);
        assert_eq!(after.error_reports, 1);
        assert_eq!(reports.load(Ordering::SeqCst), 1);

        // The loop is alive and accepts at once again.
        let mut second = TcpStream::connect(addr).await?;
        second.write_all(b"pong").await?;
        second.read_exact(&mut echo).await?;
        assert_eq!(&echo, b"pong");
        assert_eq!(server.stats().total.accepted, 2);
        set_nofile(saved)?;
        let report = server.shutdown(Duration::from_secs(10)).await?;
        assert_eq!(report.aborted, 0);
        io::Result::Ok(())
    })
}
