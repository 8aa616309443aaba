//! The lab's output room: from the results to what a reader sees. Which
//! cells count (`family`, `order`), why B differs (`explain`, `method`),
//! the summary's list (`summary`), the standing notes (`notes`),
//! report.json and report.csv (`report`), report.md (`markdown`, with its
//! sections in `md_load` and `md_record`, their cells in `md_cells`) and the
//! charts (`svg`: chart.svg, `forest`: forest.svg).
//!
//! It may use every other room; only the lab's top (`lab/mod.rs`) uses it.

pub mod explain;
pub mod family;
pub mod forest;
pub mod markdown;
pub mod md_cells;
pub mod md_load;
pub mod md_record;
pub mod method;
pub mod notes;
pub mod order;
pub mod report;
pub mod summary;
pub mod svg;
