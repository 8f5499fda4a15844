//! Locks that outlive a panic.
//!
//! A thread that panics while holding a lock poisons it; the data behind toolbelt's
//! locks (caches, stamps, pending questions) stays usable after any such panic, so
//! every lock is taken through these helpers, which ignore the poison.
//!
//! ```
//! use std::sync::{Mutex, RwLock};
//! use toolbelt_core::sync::{lock, read, write};
//!
//! let seen = Mutex::new(Vec::new());
//! lock(&seen).push("a");
//! assert_eq!(*lock(&seen), ["a"]);
//!
//! let names = RwLock::new(vec!["grep"]);
//! write(&names).push("glob");
//! assert_eq!(read(&names).len(), 2);
//! ```

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, poisoned or not.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Read-locks `lock`, poisoned or not.
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write-locks `lock`, poisoned or not.
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn a_poisoned_lock_still_opens() {
        let m = Mutex::new(1);
        let r = RwLock::new(1);
        std::thread::scope(|s| {
            let _ = s
                .spawn(|| {
                    let _m = m.lock().unwrap();
                    let _r = r.write().unwrap();
                    panic!("poison both");
                })
                .join();
        });
        assert!(m.is_poisoned() && r.is_poisoned());
        *lock(&m) += 1;
        *write(&r) += 1;
        assert_eq!((*lock(&m), *read(&r)), (2, 2));
    }
}
