//! SIGINT/SIGTERM handling: the first signal asks the run to stop cleanly (guards restore the
//! kernel state on the way out); a second one exits at once.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set when SIGINT or SIGTERM arrived. Commands poll it and measurement threads receive it.
pub static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    if STOP.swap(true, Ordering::SeqCst) {
        // Second signal: the user insists. _exit is async-signal-safe.
        unsafe { libc::_exit(128 + sig) };
    }
}

/// Installs the handlers. Called once at start.
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only touches an atomic and calls _exit, both async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The flag as a reference with a static lifetime, for libraries that take `&AtomicBool`.
pub fn stop_flag() -> &'static AtomicBool {
    &STOP
}
