//! Whether a core serves, for the accept loops that watch it (`serve::accept`): core 0's
//! `driven` (a thread is in `block_on`) and a core's `yielded` (it stepped back from crowded
//! CPUs). A loop serves a listener that is not its own while that listener's core cannot:
//! core 1's loop core 0's while no thread drives core 0, core 0's loop another core's while
//! that core stepped back; and a core that stepped back stops accepting on its own.
//!
//! # Protocol
//!
//! The flags change, and are looked at, under one lock; a change that a watcher must follow
//! wakes every watcher registered before it. A watcher registers, then reads, under that lock:
//! either it reads the new value, or its registration came first and the change wakes it. No
//! connection waits on a listener nobody accepts from. (Loom: `serve_watch`.)

use std::task::Waker;

use crate::sync::{lock, Mutex};

/// The wakers of the accept loops watching one core.
#[derive(Default)]
pub(crate) struct ServeWatch {
    /// Each watching loop's waker, once (`will_wake`); all taken by a change that wakes.
    watchers: Mutex<Vec<Waker>>,
}

impl ServeWatch {
    /// Makes `change` under the lock; then, if `wake`, wakes every watcher (each loop looks
    /// again, and registers again if it still watches).
    pub(crate) fn store(&self, change: impl FnOnce(), wake: bool) {
        let woken = {
            let mut watchers = lock(&self.watchers);
            change();
            if !wake {
                return;
            }
            std::mem::take(&mut *watchers)
        };
        for waker in woken {
            crate::catch::wake_caught(waker);
        }
    }

    /// Registers `waker` (once), then makes `look`, under the lock: a later change that wakes
    /// wakes `waker`.
    pub(crate) fn load_watching<R>(&self, waker: &Waker, look: impl FnOnce() -> R) -> R {
        let mut watchers = lock(&self.watchers);
        if !watchers.iter().any(|w| w.will_wake(waker)) {
            watchers.push(waker.clone());
        }
        look()
    }

    /// Unregisters `waker` (a loop that ended).
    pub(crate) fn forget(&self, waker: &Waker) {
        lock(&self.watchers).retain(|w| !w.will_wake(waker));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_change_wakes_every_watcher_once_and_a_quiet_one_none() {
        let (watch, flag) = (ServeWatch::default(), AtomicBool::new(false));
        let loops: Vec<Arc<Count>> = (0..3)
            .map(|_| Arc::new(Count(AtomicUsize::new(0))))
            .collect();
        for l in &loops {
            // Twice each: registered once.
            let waker = Waker::from(l.clone());
            assert!(!watch.load_watching(&waker, || flag.load(Ordering::SeqCst)));
            assert!(!watch.load_watching(&waker, || flag.load(Ordering::SeqCst)));
        }
        watch.store(|| flag.store(false, Ordering::SeqCst), false);
        assert!(loops.iter().all(|l| l.0.load(Ordering::SeqCst) == 0));
        watch.forget(&Waker::from(loops[2].clone()));
        watch.store(|| flag.store(true, Ordering::SeqCst), true);
        let woken: Vec<usize> = loops.iter().map(|l| l.0.load(Ordering::SeqCst)).collect();
        assert_eq!(
            woken,
            [1, 1, 0],
            "every watcher once, a forgotten one never"
        );
        assert!(watch.load_watching(&Waker::from(loops[0].clone()), || flag
            .load(Ordering::SeqCst)));
    }
}
