//! CPU affinity: which CPUs the process may run on, and pinning a thread to one.

use std::io;
use std::mem;

/// The CPUs this process may run on (its affinity mask), in increasing order.
///
/// # Errors
///
/// `sched_getaffinity` failed.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let max = 8 * mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `cpu < max` is within the set's bits.
    Ok((0..max)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// The CPU the calling thread runs on now (`sched_getcpu`, a vDSO call: no system call);
/// `None` if the kernel cannot say. The thread may have moved by the time it is read.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: `sched_getcpu` takes no arguments and only returns a number (or -1).
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// Pins the calling thread to `cpu`.
///
/// # Errors
///
/// An error naming the CPU if it is out of range or the kernel refuses (not in the process's
/// affinity mask, offline).
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    set_current_affinity(&[cpu]).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot pin a core's thread to CPU {cpu}: {e}"),
        )
    })
}

/// Lets the calling thread run on exactly `cpus` (to restore an affinity saved with
/// [`allowed_cpus`]).
///
/// # Errors
///
/// A CPU number out of range, or the kernel refuses the set.
pub fn set_current_affinity(cpus: &[usize]) -> io::Result<()> {
    let max = 8 * mem::size_of::<libc::cpu_set_t>();
    // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    for &cpu in cpus {
        if cpu >= max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is out of range: CPU numbers stop at {}", max - 1),
            ));
        }
        // SAFETY: `cpu < max` was checked above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_may_run_somewhere() {
        assert!(!allowed_cpus().unwrap().is_empty());
    }

    #[test]
    fn affinity_is_restored() {
        std::thread::spawn(|| {
            let before = allowed_cpus().unwrap();
            pin_current_thread(before[0]).unwrap();
            assert_eq!(allowed_cpus().unwrap(), vec![before[0]]);
            set_current_affinity(&before).unwrap();
            assert_eq!(allowed_cpus().unwrap(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn pinning_to_an_impossible_cpu_names_it() {
        let e = pin_current_thread(100_000).unwrap_err();
        assert!(e.to_string().contains("CPU 100000"), "{e}");
        let e = std::thread::spawn(|| pin_current_thread(1023).unwrap_err())
            .join()
            .unwrap();
        assert!(e.to_string().contains("CPU 1023"), "{e}");
    }
}
