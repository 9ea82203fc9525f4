//! SIGINT/SIGTERM handling. A command that changes kernel state (measures, records): the first signal asks
//! the run to stop cleanly (guards restore the kernel state on the way out, the partial result is still
//! written, and the exit code is then 128 + the signal, 130 or 143, as shells expect); a second one exits
//! at once. A command that only reads files and writes results changes nothing to restore: it exits at once.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set when SIGINT or SIGTERM arrived. Commands poll it and measurement threads receive it.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// The first signal that arrived (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The signal that stopped the run, if one did.
pub fn received() -> Option<i32> {
    let s = SIGNAL.load(Ordering::SeqCst);
    (s != 0).then_some(s)
}

extern "C" fn on_signal(sig: libc::c_int) {
    let _ = SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    if STOP.swap(true, Ordering::SeqCst) {
        // Second signal: the user insists. _exit is async-signal-safe.
        unsafe { libc::_exit(128 + sig) };
    }
}

extern "C" fn exit_at_once(sig: libc::c_int) {
    // Nothing to restore: exit with the status shells expect (130, 143), whatever the threads are doing.
    unsafe { libc::_exit(128 + sig) };
}

/// Installs the handlers of a command that changes kernel state: the first signal sets [`STOP`]. Called
/// once at start.
pub fn install() {
    install_handler(on_signal);
}

/// Installs the handlers of a command that only reads and writes files (decode, analyze, compare,
/// report, audit): a signal ends the process at once with 128 + its number, even while a thread is
/// stuck. Called once at start, instead of [`install`].
pub fn install_exit_at_once() {
    install_handler(exit_at_once);
}

fn install_handler(handler: extern "C" fn(libc::c_int)) {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handlers only touch atomics and call _exit, both async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Set when SIGHUP arrived, for a long-running command that reopens its files then (`monitor`).
static HANGUP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_hangup(_: libc::c_int) {
    HANGUP.store(true, Ordering::SeqCst);
}

/// Makes SIGHUP a request to reopen files ([`take_hangup`]) instead of the end of the process.
pub fn install_hangup() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_hangup as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGHUP, &sa, std::ptr::null_mut());
    }
}

/// Whether SIGHUP arrived since the last call.
pub fn take_hangup() -> bool {
    HANGUP.swap(false, Ordering::SeqCst)
}

/// The flag as a reference with a static lifetime, for libraries that take `&AtomicBool`.
pub fn stop_flag() -> &'static AtomicBool {
    &STOP
}
