//! A stalled thread's backtrace, taken on that thread: the watchdog sends it a signal, whose
//! handler walks its own stack into a static buffer; the watchdog reads the addresses back and
//! resolves them to symbols.
//!
//! # What the handler does
//!
//! Nothing that allocates or locks: it compares two atomics (is this the thread asked for, is
//! the poll the watchdog saw still running), walks the stack with libgcc's unwinder
//! (`_Unwind_Backtrace`, through `backtrace::trace_unsynchronized`) into a fixed array of
//! atomics, and publishes the count. The unwinder finds each frame's unwind table through
//! glibc's `_dl_find_object` (glibc 2.35 and libgcc 12 on: lock-free, and async-signal-safe by
//! glibc's documentation); older libgcc's walk the loaded objects under the loader's lock,
//! which the interrupted thread could hold, so with a glibc that lacks `_dl_find_object` the
//! detector takes no backtrace and reports without one. The unwinder's one-time setup is done
//! on the watchdog's thread, by a walk of its own stack when it starts.
//!
//! The signal is a real-time one (`SIGRTMIN + 7`), installed with `SA_RESTART` once per
//! process, and only if nothing else handles it: where something does, stalls are reported
//! without backtraces. A system call the stalled thread was in restarts (`read`, `futex`,
//! `std::thread::sleep`'s `nanosleep`, which std resumes for the rest of its time); one that
//! the kernel never restarts (`epoll_wait`, `poll`, `select` with a timeout) returns `EINTR`,
//! as it would for any signal.
//!
//! # One request at a time
//!
//! `SLOT` is the process's one buffer, taken by one watchdog at a time (a lock), and handed
//! between it and the handler by `state`: `IDLE` -> `ASKED` (watchdog) -> `WRITING` (handler,
//! by a compare-and-swap, so a late signal writes nothing) -> `DONE` (handler) -> `IDLE`
//! (watchdog). A watchdog tired of waiting takes `ASKED` back to `IDLE` by a compare-and-swap;
//! if the handler got there first, it waits for `DONE`.

use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The most frames a backtrace keeps (the innermost ones).
const MAX_FRAMES: usize = 64;
/// How long the watchdog waits for the handler to start (a thread the kernel has not
/// scheduled for that long is reported without a backtrace).
const WAIT_START: Duration = Duration::from_millis(200);
/// How long it waits for a started walk to finish.
const WAIT_WALK: Duration = Duration::from_secs(2);

/// `state`: no request.
const IDLE: u32 = 0;
/// `state`: a request is out.
const ASKED: u32 = 1;
/// `state`: the handler is walking.
const WRITING: u32 = 2;
/// `state`: the handler is done (`len` frames, 0 when the poll had ended).
const DONE: u32 = 3;

/// The buffer the handler writes into.
struct Slot {
    /// Where the request is (the constants above).
    state: AtomicU32,
    /// The thread asked for.
    tid: AtomicI32,
    /// The core's poll word, and the poll it held when the watchdog asked: the handler walks
    /// only if the poll still runs.
    poll_word: AtomicPtr<AtomicU64>,
    /// That poll.
    poll: AtomicU64,
    /// Frames written.
    len: AtomicUsize,
    /// Instruction addresses, innermost first.
    frames: [AtomicUsize; MAX_FRAMES],
}

/// The one buffer.
static SLOT: Slot = Slot {
    state: AtomicU32::new(IDLE),
    tid: AtomicI32::new(0),
    poll_word: AtomicPtr::new(std::ptr::null_mut()),
    poll: AtomicU64::new(0),
    len: AtomicUsize::new(0),
    frames: [const { AtomicUsize::new(0) }; MAX_FRAMES],
};

/// Taken by the watchdog that uses `SLOT`.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The signal, once it is installed; `None` where backtraces cannot be taken.
static SIGNAL: OnceLock<Option<i32>> = OnceLock::new();

/// Installs the handler (once per process) if backtraces can be taken safely here; returns
/// the signal, or `None` (and why not, for the report) where they cannot.
pub(crate) fn install() -> Result<i32, &'static str> {
    let signal = *SIGNAL.get_or_init(|| {
        if !has_dl_find_object() {
            return None;
        }
        // Walk once here: the unwinder's one-time setup is done before any handler runs.
        let mut n = 0;
        backtrace::trace(|_| {
            n += 1;
            n < 4
        });
        install_handler()
    });
    signal.ok_or("no safe backtrace here (a glibc without _dl_find_object, or the signal taken)")
}

/// Whether glibc has `_dl_find_object` (2.35 on), through which libgcc's unwinder finds unwind
/// tables without the loader's lock.
fn has_dl_find_object() -> bool {
    // SAFETY: `dlsym` with `RTLD_DEFAULT` and a NUL-terminated name only looks a symbol up.
    !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_dl_find_object".as_ptr()) }.is_null()
}

/// Installs `on_signal` for `SIGRTMIN + 7` unless something already handles it.
fn install_handler() -> Option<i32> {
    let signal = libc::SIGRTMIN() + 7;
    if signal > libc::SIGRTMAX() {
        return None;
    }
    // SAFETY: `sigaction` with a zeroed (then filled) struct reads the current disposition and
    // installs ours; the handler is an `extern "C"` fn with the `SA_SIGINFO` signature, for
    // the life of the process.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
            || old.sa_sigaction != libc::SIG_DFL
        {
            return None;
        }
        let mut new: libc::sigaction = std::mem::zeroed();
        new.sa_sigaction = on_signal as *const () as usize;
        new.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut new.sa_mask);
        (libc::sigaction(signal, &new, std::ptr::null_mut()) == 0).then_some(signal)
    }
}

/// The handler: walks this thread's stack into `SLOT` if this is the thread asked for and
/// its poll still runs. Async-signal-safe: atomics, `gettid`, the lock-free unwinder.
extern "C" fn on_signal(_: i32, _: *mut libc::siginfo_t, _: *mut c_void) {
    // SAFETY: `__errno_location` gives this thread's errno, saved and restored around the
    // handler so that the interrupted code never sees it change.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: `gettid` has no preconditions.
    let me = unsafe { libc::gettid() };
    if SLOT.tid.load(Ordering::Relaxed) == me
        && SLOT
            .state
            .compare_exchange(ASKED, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    {
        let word = SLOT.poll_word.load(Ordering::Relaxed);
        // SAFETY: the watchdog set `poll_word` to its core's poll word before `ASKED`, and
        // keeps the core's shared half (which holds the word) alive until the state is back
        // to `IDLE`, which only it does, after `DONE`.
        let still = !word.is_null()
            && unsafe { &*word }.load(Ordering::Relaxed) == SLOT.poll.load(Ordering::Relaxed);
        let mut n = 0;
        if still {
            // The walk's first frames are the handler's own, then the signal's return
            // trampoline: kept from the frame after the trampoline on (none if the handler's
            // frame is not recognised).
            let handler = on_signal as *const () as usize;
            // `None`: in the handler; `Some(true)`: at the trampoline; `Some(false)`: past.
            let mut skip: Option<bool> = None;
            // SAFETY: `trace_unsynchronized` asks that no other trace run at the same time
            // in a way that would race its (unsynchronized) state: the libgcc backend keeps
            // none, and the callback only stores into atomics.
            unsafe {
                backtrace::trace_unsynchronized(|frame| {
                    match skip {
                        None if frame.symbol_address() as usize == handler => skip = Some(true),
                        None => {}
                        Some(true) => skip = Some(false),
                        Some(false) => {
                            SLOT.frames[n].store(frame.ip() as usize, Ordering::Relaxed);
                            n += 1;
                        }
                    }
                    n < MAX_FRAMES
                });
            }
        }
        SLOT.len.store(n, Ordering::Relaxed);
        SLOT.state.store(DONE, Ordering::Release);
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Takes the backtrace of thread `tid` while `poll_word` still holds `poll`: the instruction
/// addresses, innermost first (the handler's own frames included); `None` if the poll ended
/// first, the thread could not be signalled, or it did not answer in time. `poll_word` must
/// stay alive until this returns (the caller holds the core's shared half).
pub(crate) fn capture(
    signal: i32,
    tid: i32,
    poll_word: &AtomicU64,
    poll: u64,
) -> Option<Vec<usize>> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if SLOT.state.load(Ordering::Acquire) != IDLE {
        // A handler that never finished (it cannot, short of a broken unwinder): give up on
        // backtraces rather than reuse the buffer under it.
        return None;
    }
    SLOT.tid.store(tid, Ordering::Relaxed);
    SLOT.poll_word
        .store(std::ptr::from_ref(poll_word).cast_mut(), Ordering::Relaxed);
    SLOT.poll.store(poll, Ordering::Relaxed);
    SLOT.state.store(ASKED, Ordering::Release);
    // SAFETY: `tgkill` sends a signal to one thread of this process; a thread that has exited
    // makes it fail with ESRCH, and a handler running on the wrong thread writes nothing.
    let sent = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, signal) } == 0;
    let done = sent && wait_for(Instant::now() + WAIT_START, true);
    let frames = done.then(|| {
        let n = SLOT.len.load(Ordering::Relaxed);
        SLOT.frames[..n]
            .iter()
            .map(|f| f.load(Ordering::Relaxed))
            .collect::<Vec<_>>()
    });
    if done || SLOT.state.load(Ordering::Acquire) == DONE {
        SLOT.poll_word
            .store(std::ptr::null_mut(), Ordering::Relaxed);
        SLOT.state.store(IDLE, Ordering::Release);
    }
    frames.filter(|f| !f.is_empty())
}

/// Waits until the handler is done (`true`); at `deadline`, takes an unanswered request back
/// (`false`), or, if the handler has started, waits a while longer for it (`again`).
fn wait_for(deadline: Instant, again: bool) -> bool {
    loop {
        match SLOT.state.load(Ordering::Acquire) {
            DONE => return true,
            _ if Instant::now() < deadline => std::thread::sleep(Duration::from_micros(200)),
            _ => {
                let taken_back = SLOT
                    .state
                    .compare_exchange(ASKED, IDLE, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok();
                return !taken_back && again && wait_for(Instant::now() + WAIT_WALK, false);
            }
        }
    }
}
