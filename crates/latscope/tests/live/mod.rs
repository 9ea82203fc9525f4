//! What the live tests share: whether this machine can run them (and skip or fail when it cannot,
//! [`require`]), machine-wide turns of the tests that load CPUs ([`turn`]), running latscope as `nobody`
//! ([`nobody`]), and a normal task that makes RT throttling regular ([`normal_load`]).
// Each test binary uses its part of this module.
#![allow(dead_code, unused_imports)]

pub mod guest_lock;
pub mod nobody;
pub mod normal_load;
pub mod require;
pub mod turn;

pub use require::{ready, skip, Need};
