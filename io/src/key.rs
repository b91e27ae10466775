//! A reactor's key: the lock that makes one thread at a time the reader of a reactor's
//! registrations (its owner, or a core harvesting its ready I/O).
//!
//! Held for a few hundred instructions at most, never across user code or a blocking call, and
//! taken uncontended by the owner on every poll and every wait of a task: a flag and a
//! compare-and-swap, where a `std::sync::Mutex` costs its poison checks (about 40 instructions
//! a lock and unlock, measured on the same-core round trip). A thread that waits for it spins,
//! then yields its CPU (the holder may be a harvester the kernel preempted).

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, Ordering};

/// Spins before a waiting thread yields its CPU.
#[cfg(not(loom))]
const SPINS: u32 = 64;

/// A value that one thread at a time may use, through a [`KeyGuard`].
pub(crate) struct KeyLock<T> {
    /// Whether a guard is out.
    held: AtomicBool,
    /// The value.
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a `KeyGuard`, and at most one guard is out at a
// time (`held`, taken by a compare-and-swap that acquires and released by a store that
// releases, which orders one holder's accesses before the next one's): the lock hands `T`
// from thread to thread, which `T: Send` allows.
unsafe impl<T: Send> Sync for KeyLock<T> {}

impl<T> KeyLock<T> {
    /// An unheld lock of `value`.
    pub(crate) fn new(value: T) -> KeyLock<T> {
        KeyLock {
            held: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// The guard, if nobody holds it.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<KeyGuard<'_, T>> {
        self.held
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| KeyGuard { lock: self })
    }

    /// The guard, waiting for its holder (spinning, then yielding the CPU).
    #[inline]
    pub(crate) fn lock(&self) -> KeyGuard<'_, T> {
        match self.try_lock() {
            Some(guard) => guard,
            None => self.lock_slow(),
        }
    }

    /// [`lock`](Self::lock) when the key is held.
    #[cold]
    #[inline(never)]
    fn lock_slow(&self) -> KeyGuard<'_, T> {
        #[cfg(not(loom))]
        let mut spins = 0;
        loop {
            if !self.held.load(Ordering::Relaxed) {
                if let Some(guard) = self.try_lock() {
                    return guard;
                }
            }
            #[cfg(loom)]
            loom::thread::yield_now();
            #[cfg(not(loom))]
            if spins < SPINS {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// The right to use a [`KeyLock`]'s value, until dropped.
pub(crate) struct KeyGuard<'a, T> {
    /// The lock it holds.
    lock: &'a KeyLock<T>,
}

impl<T> Deref for KeyGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one out (see `KeyLock`'s `Sync`), so no `&mut T`
        // exists elsewhere; the reference lives no longer than the guard.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for KeyGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference through the
        // guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for KeyGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.held.store(false, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn one_guard_at_a_time() {
        let lock = KeyLock::new(1);
        let mut guard = lock.try_lock().expect("free");
        *guard += 1;
        assert!(lock.try_lock().is_none(), "held");
        drop(guard);
        assert_eq!(*lock.lock(), 2);
    }

    #[test]
    fn a_waiter_gets_it_once_the_holder_lets_go() {
        let lock = std::sync::Arc::new(KeyLock::new(0u64));
        let guard = lock.try_lock().expect("free");
        let waiter = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                *lock.lock() += 1;
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(5));
        drop(guard);
        waiter.join().unwrap();
        assert_eq!(*lock.lock(), 1);
    }
}
