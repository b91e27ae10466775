//! The few system calls the benches make themselves: pipes, CPU affinity, `poll`, and the
//! counters the kernel keeps per thread (context switches) and per process (CPU time).

use std::fs;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

/// A pipe, blocking, close-on-exec: `(read end, write end)`. Each runtime sets the flags it
/// wants when it takes an end over.
///
/// # Errors
///
/// `pipe2` failed (typically `EMFILE`).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = io::pipe()?;
    Ok((OwnedFd::from(r), OwnedFd::from(w)))
}

/// Sets `O_NONBLOCK` on `fd`.
///
/// # Errors
///
/// `fcntl` failed.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: F_GETFL on a descriptor the borrow keeps open; no pointer is passed.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: F_SETFL with an integer argument on a descriptor the borrow keeps open.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Waits until `fd` is readable or `timeout` passes (`poll(2)`): the blocking world's way of
/// putting a timeout on a read. Returns whether it became readable.
///
/// # Errors
///
/// `poll` failed (`EINTR` is retried).
pub fn poll_readable(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: `pfd` is one valid pollfd, and we pass a count of 1.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc >= 0 {
            return Ok(rc > 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The CPUs the calling thread may run on, in increasing order. Call it from a thread that
/// nothing has pinned (a thread inherits its creator's mask).
///
/// # Errors
///
/// `sched_getaffinity` failed.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is a valid, empty set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `set` is a cpu_set_t of the size passed; pid 0 names the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let max = 8 * mem::size_of::<libc::cpu_set_t>();
    // SAFETY: every `cpu < max` is a bit of the set.
    Ok((0..max)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Pins the calling thread to `cpu`.
///
/// # Errors
///
/// The kernel refused (the CPU is offline or outside the process's mask); the error names it.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    set_thread_cpus(&[cpu])
}

/// Lets the calling thread (and the threads it starts from now on) run on `cpus` only.
///
/// # Errors
///
/// `InvalidInput` for no CPU or one beyond the kernel's set; otherwise the kernel refused (a
/// CPU offline or outside the process's cgroup); the error names the CPUs.
pub fn set_thread_cpus(cpus: &[usize]) -> io::Result<()> {
    let size = 8 * mem::size_of::<libc::cpu_set_t>();
    if cpus.is_empty() || cpus.iter().any(|&c| c >= size) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("no CPUs {cpus:?} to run on"),
        ));
    }
    // SAFETY: an all-zero cpu_set_t is a valid, empty set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: `cpu` is below the set's size, checked above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a cpu_set_t of the size passed; pid 0 names the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        let e = io::Error::last_os_error();
        let what = match cpus {
            [one] => format!("pinning to CPU {one}"),
            _ => format!("running on CPUs {cpus:?}"),
        };
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

/// The calling thread's id (its entry under `/proc/self/task`).
pub fn gettid() -> u32 {
    // SAFETY: gettid takes no argument and cannot fail.
    let tid = unsafe { libc::gettid() };
    u32::try_from(tid).expect("thread ids are positive")
}

/// Voluntary context switches (times a thread blocked) summed over every thread of this
/// process but `except`: the wakeups of those threads, each wakeup being followed by a block.
///
/// # Errors
///
/// `/proc/self/task` cannot be read.
pub fn voluntary_switches(except: u32) -> io::Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir("/proc/self/task")? {
        let entry = entry?;
        if entry.file_name().to_str() == Some(&except.to_string()) {
            continue;
        }
        // A thread that exits under us has no status any more: it switches no more either.
        let Ok(status) = fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let n = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| io::Error::other("no voluntary_ctxt_switches in /proc status"))?;
        total += n;
    }
    Ok(total)
}

/// The number of threads of this process.
///
/// # Errors
///
/// `/proc/self/task` cannot be read.
pub fn thread_count() -> io::Result<usize> {
    Ok(fs::read_dir("/proc/self/task")?.count())
}

/// User plus system CPU time of `RUSAGE_SELF` (the whole process) or `RUSAGE_THREAD`.
fn rusage(who: libc::c_int) -> io::Result<Duration> {
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { mem::zeroed() };
    // SAFETY: `ru` is a valid rusage for the kernel to fill.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    Ok(tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// CPU time (user + system) of the whole process so far.
///
/// # Errors
///
/// `getrusage` failed.
pub fn process_cpu() -> io::Result<Duration> {
    rusage(libc::RUSAGE_SELF)
}

/// CPU time (user + system) of the calling thread so far.
///
/// # Errors
///
/// `getrusage` failed.
pub fn thread_cpu() -> io::Result<Duration> {
    rusage(libc::RUSAGE_THREAD)
}
