//! The lab's measure room: the step table (`steps`, `inprocess_steps`),
//! the one runner of it, row by row (`matrix`; its sampling of a step,
//! round by round and turn by turn: `turns`), the runs that are not one
//! timed process (`inprocess`: TLS and `openssl speed`; `dnssec` and
//! `pdns`: the DNS signers; `async_jobs`: `--async-jobs`), the checks
//! across the sides (`crosscheck`), and the data all of it produces
//! (`results`, with each cell's comparisons and verdicts in `verdicts`).
//!
//! It may use the statistics, plan and DNS rooms; the output room reads
//! what it produces.

pub mod async_jobs;
pub mod crosscheck;
pub mod dnssec;
pub mod inprocess;
pub mod inprocess_steps;
pub mod matrix;
pub mod pdns;
pub mod results;
pub mod steps;
pub mod turns;
pub mod verdicts;
