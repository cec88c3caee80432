//! The mutex the priority-inversion workers share: a plain futex lock, or a PI futex
//! (what glibc's PTHREAD_PRIO_INHERIT mutexes use), one of each per worker process.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use nix::errno::Errno;

/// The lock of every lock worker in this process that asked for no priority inheritance.
static PLAIN: AtomicU32 = AtomicU32::new(0);
/// The lock of every lock worker in this process that asked for priority inheritance.
static INHERIT: AtomicU32 = AtomicU32::new(0);

/// One of the process's two locks. Holders and waiters with the same `pi` share it.
pub fn shared(pi: bool) -> Lock {
    Lock {
        word: if pi { &INHERIT } else { &PLAIN },
        pi,
    }
}

/// A futex word and its protocol.
#[derive(Clone, Copy)]
pub struct Lock {
    word: &'static AtomicU32,
    pi: bool,
}

fn futex(word: &AtomicU32, op: i32, val: u32) -> i64 {
    // SAFETY: the word is a live, aligned u32 for the program's lifetime; the timeout
    // and second address are unused by these ops (null).
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    }
}

impl Lock {
    /// Take the lock, sleeping while another thread holds it. Fails only if the kernel
    /// refuses the PI futex (ENOSYS without CONFIG_FUTEX_PI).
    pub fn lock(&self) -> Result<(), Errno> {
        if self.pi {
            self.lock_pi()
        } else {
            self.lock_plain();
            Ok(())
        }
    }

    pub fn unlock(&self) {
        if self.pi {
            let tid = nix::unistd::gettid().as_raw() as u32;
            // Uncontended: release in user space. With waiters (FUTEX_WAITERS set) the
            // kernel hands the lock to the highest-priority one and ends our boost.
            if self
                .word
                .compare_exchange(tid, 0, Release, Relaxed)
                .is_err()
            {
                futex(self.word, libc::FUTEX_UNLOCK_PI, 0);
            }
        } else if self.word.swap(0, Release) == 2 {
            // Someone sleeps on it: wake one (the kernel picks the highest priority).
            futex(self.word, libc::FUTEX_WAKE, 1);
        }
    }

    /// Drepper's three-state mutex ("Futexes are tricky"): 0 free, 1 held, 2 held with
    /// sleepers. A sleeping waiter lends the holder nothing.
    fn lock_plain(&self) {
        if self.word.compare_exchange(0, 1, Acquire, Relaxed).is_ok() {
            return;
        }
        while self.word.swap(2, Acquire) != 0 {
            futex(self.word, libc::FUTEX_WAIT, 2);
        }
    }

    /// The word holds the owner's TID; a contended lock goes to the kernel, which boosts
    /// the owner to the highest waiter's priority until it unlocks (kernel/futex/pi.c,
    /// rt_mutex).
    fn lock_pi(&self) -> Result<(), Errno> {
        let tid = nix::unistd::gettid().as_raw() as u32;
        if self.word.compare_exchange(0, tid, Acquire, Relaxed).is_ok() {
            return Ok(());
        }
        loop {
            if futex(self.word, libc::FUTEX_LOCK_PI, 0) == 0 {
                return Ok(());
            }
            match Errno::last() {
                // The owner was exiting, or a signal: try again.
                Errno::EAGAIN | Errno::EINTR => continue,
                e => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    /// Both protocols exclude: two threads adding under the lock lose no update.
    #[test]
    fn both_locks_exclude() {
        for pi in [false, true] {
            let count = Arc::new(AtomicU64::new(0));
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let count = Arc::clone(&count);
                    std::thread::spawn(move || {
                        let lock = shared(pi);
                        for _ in 0..20_000 {
                            lock.lock().expect("lock");
                            // A non-atomic read-modify-write: only the lock protects it.
                            let v = count.load(Relaxed);
                            count.store(v + 1, Relaxed);
                            lock.unlock();
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().expect("thread");
            }
            assert_eq!(count.load(Relaxed), 40_000, "pi={pi}");
        }
    }
}
