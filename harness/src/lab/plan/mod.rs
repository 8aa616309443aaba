//! The lab's plan room: what a run is made of before anything is measured.
//! The command line and a run's options (`options`), the `openssl`
//! program, the module and the sides (`setup`), timed processes
//! (`openssl`), the configuration files (`cnf`) and servers (`server`),
//! every column of the matrix with what the reports read of it
//! (`column_table`), what a step is (`columns`) with its command lines
//! (`commands`) and when they run (`skips`), reading rustica's counters
//! (`counters`), the kernel's and the shared card's request counts
//! (`zcrypt`, `card_use`), the progress line (`progress`) and what the
//! report records about the host and the run (`host`).
//!
//! It may use the statistics room only (scripts/check-layers.py gives the
//! order inside).

pub mod card_use;
pub mod cnf;
pub mod column_table;
pub mod columns;
pub mod commands;
pub mod counters;
pub mod host;
pub mod openssl;
pub mod options;
pub mod progress;
pub mod server;
pub mod setup;
pub mod skips;
pub mod zcrypt;
