//! The lab's statistics room: B/A with its 95 % interval and verdict
//! (`effect`), the rank distributions and p-values under it (`ranks`), and
//! the rule that says when a cell has sampled enough (`sampling`).
//!
//! It uses nothing else of the lab (plain numbers in, numbers and words
//! out), so `rustica compare` can use it too. Layers inside: ranks, then
//! effect, then sampling (scripts/check-layers.py).

pub mod effect;
pub mod ranks;
pub mod sampling;
