//! The libica backend: libica's C ABI ([`abi`]), loaded at run time
//! ([`Libica`]), and key conversion to its buffers ([`convert`]).
//!
//! Routing (which operation goes to libica) lives in [`crate::backend`];
//! the primitive in [`crate::RsaKey`] calls libica through it, checks every
//! result and falls back to software.

pub mod abi;
pub(crate) mod convert;
mod loader;

pub use loader::{CallError, Libica, DEFAULT_NAMES};
