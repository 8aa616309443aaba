//! rustica: an OpenSSL 3 provider doing RSA, with modular exponentiation in
//! `ibmca-shim` (libica offload or software).
//!
//! Layers, top to bottom: `prov` (entry point, operation table) →
//! `keymgmt` / `signature` / `asym_cipher` (operations) → `key` →
//! `boundary` → `context` → padding, digests, parameters → `ibmca_shim`
//! (the primitive). docs/architecture.md ("Layers") has the whole table;
//! scripts/check-layers.py enforces it.

pub mod asym_cipher;
pub mod boundary;
pub mod config;
pub mod context;
pub mod ct;
pub mod der;
pub mod digest;
pub mod dispatch;
pub mod enc_padding;
pub mod error;
pub mod ffi;
pub mod key;
pub mod keymgmt;
pub mod pad_mode;
pub mod padding;
pub mod params;
pub mod prov;
pub mod signature;
