//! [`Symbols`]: a decoder's kernel symbols, either ready or still being loaded on another thread.
//!
//! A `.dat` carries megabytes of kallsyms text, which take longer to inflate and parse than the rest of
//! the metadata together. The reader loads them on a thread of its own ([`Loading`]) and starts decoding
//! at once; a decoder waits for them only when its first record names a code address.

use super::kallsyms::Kallsyms;
use std::cell::OnceCell;
use std::sync::{Arc, Condvar, Mutex};

/// Symbols and the `_stext` address found in them (the base of `preemptirq` caller offsets).
#[derive(Debug, Default)]
pub struct Loaded {
    /// The symbol table.
    pub table: Kallsyms,
    /// Where `_stext` is, when listed.
    pub stext: Option<u64>,
}

impl Loaded {
    /// The table with its `_stext` looked up.
    pub fn new(table: Kallsyms) -> Loaded {
        Loaded { stext: table.stext(), table }
    }
}

/// Symbols being loaded elsewhere: [`finish`](Self::finish) hands them over, [`wait`](Self::wait) blocks
/// until then.
#[derive(Debug, Default)]
pub struct Loading {
    slot: Mutex<Option<Arc<Loaded>>>,
    done: Condvar,
    /// Why loading failed, when it did (the table is then empty).
    problem: Mutex<Option<String>>,
}

impl Loading {
    /// Hand over the loaded table (or an empty one with the reason it could not be loaded).
    pub fn finish(&self, result: Result<Kallsyms, String>) {
        let table = result.unwrap_or_else(|why| {
            *self.problem.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
            Kallsyms::default()
        });
        *self.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(Loaded::new(table)));
        self.done.notify_all();
    }

    /// The table, once loaded.
    pub fn wait(&self) -> Arc<Loaded> {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(t) = &*slot {
                return t.clone();
            }
            slot = self.done.wait(slot).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Why the symbols could not be loaded (taken out).
    pub fn take_problem(&self) -> Option<String> {
        self.problem.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Finishes a [`Loading`] with an empty table if its loader ends without doing so (a panic), so no
/// decoder waits forever.
pub struct LoadingGuard(pub Arc<Loading>);

impl Drop for LoadingGuard {
    fn drop(&mut self) {
        let unfinished = self.0.slot.lock().map_or(true, |s| s.is_none());
        if unfinished {
            self.0.finish(Err("loading the kernel symbols stopped unexpectedly".into()));
        }
    }
}

/// A decoder's view of the symbols: ready, or pending on a [`Loading`].
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    ready: OnceCell<Arc<Loaded>>,
    pending: Option<Arc<Loading>>,
}

impl Symbols {
    /// Symbols already parsed.
    pub fn ready(table: Kallsyms) -> Symbols {
        Symbols { ready: OnceCell::from(Arc::new(Loaded::new(table))), pending: None }
    }

    /// Symbols another thread is loading.
    pub fn pending(loading: Arc<Loading>) -> Symbols {
        Symbols { ready: OnceCell::new(), pending: Some(loading) }
    }

    /// The symbols, waiting for them the first time if they are still loading.
    pub fn get(&self) -> &Loaded {
        self.ready.get_or_init(|| self.pending.as_ref().map_or_else(Arc::default, |l| l.wait()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_table_is_waited_for() {
        let loading = Arc::new(Loading::default());
        let symbols = Symbols::pending(loading.clone());
        let loader = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            loading.finish(Ok(Kallsyms::parse("ffffffff81000000 T _stext\nffffffff81000100 T do_work\n")));
        });
        let loaded = symbols.get();
        assert_eq!(loaded.stext, Some(0xffff_ffff_8100_0000));
        assert_eq!(loaded.table.lookup(0xffff_ffff_8100_0108), Some(("do_work", 8)));
        loader.join().expect("loader");
    }

    #[test]
    fn a_loader_that_stops_leaves_an_empty_table_and_a_reason() {
        let loading = Arc::new(Loading::default());
        let symbols = Symbols::pending(loading.clone());
        let guarded = loading.clone();
        let _ = std::thread::spawn(move || {
            let _guard = LoadingGuard(guarded);
            panic!("loader failed");
        })
        .join();
        assert!(symbols.get().table.is_empty());
        assert!(loading.take_problem().is_some_and(|p| p.contains("stopped")));
    }
}
