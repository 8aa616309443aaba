//! The shared card model, `rustica-card` (docs/card-model.md): one crypto
//! card for every process that uses it, a process of its own on a Unix
//! socket. Its clients are the emulated libica (libica-emu, shared-card
//! mode) and the z90crypt interposer (testbed/card/interposer/), which plays the
//! kernel's /dev/z90crypt for unmodified programs. A test tool, never
//! packaged.
//!
//! Modules, lowest first (scripts/check-layers.py checks the order):
//! - `bn`: owned BIGNUMs for the arithmetic;
//! - `wire`: the socket's frames, shared with the clients;
//! - `sysfs`: the kernel's AP bus counters as files;
//! - `arith`: the operations' arithmetic, which the emulated libica
//!   without a card computes with too;
//! - `model`: queues, engines, weights, faults, counts (the emulated
//!   libica's in-process faults and latency use its `faults` and
//!   `timeline`);
//! - `server`: the socket, connections and requests.

pub mod arith;
mod bn;
pub mod model;
pub mod server;
pub mod sysfs;
pub mod wire;
