//! [`keep_largest`]: the N largest of a stream of findings, kept in bounded memory.

/// Keeps the `keep` largest of `v` by `key` (ties: the earliest first), once `v` holds twice as many or when
/// `force`d (at the stream's end): amortised, and the kept set is the same as sorting all.
pub(crate) fn keep_largest<T, K: Ord>(v: &mut Vec<T>, keep: usize, force: bool, key: impl Fn(&T) -> K) {
    if force || v.len() >= 2 * keep {
        v.sort_by_key(|x| std::cmp::Reverse(key(x)));
        v.truncate(keep);
    }
}
