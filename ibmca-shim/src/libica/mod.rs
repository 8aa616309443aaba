//! The libica backend: libica's C ABI ([`abi`]), loaded at run time
//! ([`Libica`]), key conversion to its buffers ([`convert`]), and the
//! kernel's crypto device driven directly with libica's ABI
//! ([`zcrypt`], `backend = zcrypt`).
//!
//! Routing (which operation goes to libica) lives in [`crate::backend`];
//! the primitive in [`crate::RsaKey`] calls libica through it, checks every
//! result and falls back to software.

/// libica's C ABI lives in its own crate so the emulated libica can use
/// it without the primitive.
pub use libica_abi as abi;
pub(crate) mod convert;
mod loader;
pub mod zcrypt;

pub use loader::{CallError, Libica, DEFAULT_NAMES};
