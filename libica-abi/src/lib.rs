//! The part of libica's C ABI that rustica uses, declared from libica's
//! documented interface (`ica_api.h` of libica 3 and 4), in rustica's own
//! words. Nothing here is linked: the loader resolves each symbol with
//! `dlsym` and stores it as one of the function pointer types below.
//!
//! Conventions of the interface:
//! - every integer of a key or an operand is big-endian and right-aligned
//!   in a buffer of the documented length;
//! - functions return 0 on success, else a positive `errno` value
//!   (`ENODEV`, `EPERM`, `EIO`, `EINVAL`, `ENOMEM`, `EFAULT`, `EACCES`);
//! - the adapter handle is a plain `int` (a file descriptor of the crypto
//!   device, or [`DRIVER_NOT_LOADED`] when there is none).

#![allow(non_camel_case_types)]

use std::os::raw::{c_int, c_uint};

/// `ica_adapter_handle_t` (a `#define` for `int` in ica_api.h).
pub type ica_adapter_handle_t = c_int;

/// The handle value `ica_open_adapter` stores when no adapter is present.
pub const DRIVER_NOT_LOADED: ica_adapter_handle_t = -1;

/// A key in modulus/exponent form: `modulus` and `exponent` each point at
/// `key_length` bytes (the modulus size in bytes).
#[repr(C)]
#[derive(Debug)]
pub struct ica_rsa_key_mod_expo_t {
    pub key_length: c_uint,
    pub modulus: *mut u8,
    pub exponent: *mut u8,
}

/// A private key in CRT form. `key_length` is the modulus size in bytes;
/// `p`, `dp` and `q_inverse` point at `key_length / 2 + 8` bytes, `q` and
/// `dq` at `key_length / 2` bytes. libica expects p > q.
#[repr(C)]
#[derive(Debug)]
pub struct ica_rsa_key_crt_t {
    pub key_length: c_uint,
    pub p: *mut u8,
    pub q: *mut u8,
    pub dp: *mut u8,
    pub dq: *mut u8,
    pub q_inverse: *mut u8,
}

/// `libica_version_info`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct libica_version_info {
    pub major_version: c_uint,
    pub minor_version: c_uint,
    pub fixpack_version: c_uint,
}

/// One entry of `ica_get_functionlist`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct libica_func_list_element {
    pub mech_mode_id: c_uint,
    pub flags: c_uint,
    pub property: c_uint,
}

/// Mechanism ids of the function list.
pub const RSA_ME: c_uint = 90;
pub const RSA_CRT: c_uint = 91;
pub const RSA_KEY_GEN_ME: c_uint = 92;
pub const RSA_KEY_GEN_CRT: c_uint = 93;

/// Function list flags.
/// Software implementation (libica's own fallback).
pub const ICA_FLAG_SW: c_uint = 0x1;
/// Dynamic hardware: a crypto adapter (CEX), where RSA runs.
pub const ICA_FLAG_DHW: c_uint = 0x2;
/// Static hardware: CPACF instructions (symmetric functions).
pub const ICA_FLAG_SHW: c_uint = 0x4;

/// Largest modulus the adapters accept; libica returns `EPERM` above it.
pub const ADAPTER_MAX_BITS: u32 = 4096;

// Required entry points.
pub type OpenAdapterFn = unsafe extern "C" fn(handle: *mut ica_adapter_handle_t) -> c_uint;
pub type CloseAdapterFn = unsafe extern "C" fn(handle: ica_adapter_handle_t) -> c_uint;
pub type RsaModExpoFn = unsafe extern "C" fn(
    handle: ica_adapter_handle_t,
    input: *const u8,
    key: *mut ica_rsa_key_mod_expo_t,
    output: *mut u8,
) -> c_uint;
pub type RsaCrtFn = unsafe extern "C" fn(
    handle: ica_adapter_handle_t,
    input: *const u8,
    key: *mut ica_rsa_key_crt_t,
    output: *mut u8,
) -> c_uint;

// Optional entry points.
pub type GetVersionFn = unsafe extern "C" fn(info: *mut libica_version_info) -> c_uint;
/// With a NULL list, stores the number of entries in `*len`; otherwise
/// fills up to `*len` entries.
pub type GetFunctionListFn =
    unsafe extern "C" fn(list: *mut libica_func_list_element, len: *mut c_uint) -> c_uint;
/// Returns 0 when p > q already, 1 when it swapped p/q (and dp/dq) and
/// recomputed qInverse in place, else an errno.
pub type RsaCrtKeyCheckFn = unsafe extern "C" fn(key: *mut ica_rsa_key_crt_t) -> c_uint;
/// The public key's `exponent` buffer holds the wanted public exponent in
/// its last `sizeof(unsigned long)` bytes (all other bytes zero); zero
/// means "random".
pub type RsaKeyGenerateCrtFn = unsafe extern "C" fn(
    handle: ica_adapter_handle_t,
    modulus_bits: c_uint,
    public_key: *mut ica_rsa_key_mod_expo_t,
    private_key: *mut ica_rsa_key_crt_t,
) -> c_uint;
/// Bit field of libica's FIPS state (0 outside FIPS mode).
pub type FipsStatusFn = unsafe extern "C" fn() -> c_int;
/// `ica_fips_status` bit: libica runs in FIPS mode (`ICA_FIPS_MODE`).
pub const ICA_FIPS_MODE: c_int = 1;
/// The smallest RSA modulus libica in FIPS mode computes with: it refuses
/// `ica_rsa_crt` and `ica_rsa_mod_expo` below it with EPERM.
pub const FIPS_MIN_RSA_BITS: u32 = 3072;
/// Releases libica's global resources (libica 4).
pub type CleanupFn = unsafe extern "C" fn();

/// Symbol names (NUL-terminated for dlsym).
pub mod sym {
    pub const OPEN_ADAPTER: &[u8] = b"ica_open_adapter\0";
    pub const CLOSE_ADAPTER: &[u8] = b"ica_close_adapter\0";
    pub const RSA_MOD_EXPO: &[u8] = b"ica_rsa_mod_expo\0";
    pub const RSA_CRT: &[u8] = b"ica_rsa_crt\0";
    pub const GET_VERSION: &[u8] = b"ica_get_version\0";
    pub const GET_FUNCTIONLIST: &[u8] = b"ica_get_functionlist\0";
    pub const RSA_CRT_KEY_CHECK: &[u8] = b"ica_rsa_crt_key_check\0";
    pub const RSA_KEY_GENERATE_CRT: &[u8] = b"ica_rsa_key_generate_crt\0";
    pub const FIPS_STATUS: &[u8] = b"ica_fips_status\0";
    pub const CLEANUP: &[u8] = b"ica_cleanup\0";
}

/// The errno values libica, the kernel's crypto device and the card
/// model answer with, by their symbolic names: the one table every part
/// of rustica names and parses them with (messages, the emulated libica's
/// counts and variables, the card's faults and stats).
pub const ERRNOS: [(&str, c_int); 11] = [
    ("EIO", libc::EIO),
    ("ENODEV", libc::ENODEV),
    ("EPERM", libc::EPERM),
    ("EINVAL", libc::EINVAL),
    ("ENOMEM", libc::ENOMEM),
    ("EFAULT", libc::EFAULT),
    ("EACCES", libc::EACCES),
    ("EBUSY", libc::EBUSY),
    ("EINTR", libc::EINTR),
    ("EAGAIN", libc::EAGAIN),
    ("ETIME", libc::ETIME),
];

/// The symbolic name of an errno in [`ERRNOS`], if it has one there.
pub fn errno_symbol(rc: c_uint) -> Option<&'static str> {
    ERRNOS
        .iter()
        .find(|&&(_, e)| e as c_uint == rc)
        .map(|&(name, _)| name)
}

/// A short label for a return code: its symbolic name, else its number
/// (as counts and stats write outcomes).
pub fn errno_label(rc: c_uint) -> String {
    errno_symbol(rc).map_or_else(|| rc.to_string(), str::to_string)
}

/// The errno a name in [`ERRNOS`] or a positive number stands for.
pub fn parse_errno(text: &str) -> Option<c_uint> {
    let text = text.trim();
    match ERRNOS.iter().find(|&&(name, _)| name == text) {
        Some(&(_, e)) => Some(e as c_uint),
        None => text.parse().ok().filter(|&n: &c_uint| n > 0),
    }
}

/// The name of a libica return code, for messages.
pub fn errno_name(rc: c_uint) -> String {
    match errno_symbol(rc) {
        Some(name) => format!("{name} ({rc})"),
        None => format!("error {rc}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    const PTR: usize = size_of::<*mut u8>();

    /// C layout: an unsigned int, then pointers aligned to pointer size.
    #[test]
    fn mod_expo_key_layout() {
        assert_eq!(offset_of!(ica_rsa_key_mod_expo_t, key_length), 0);
        assert_eq!(offset_of!(ica_rsa_key_mod_expo_t, modulus), PTR);
        assert_eq!(offset_of!(ica_rsa_key_mod_expo_t, exponent), 2 * PTR);
        assert_eq!(size_of::<ica_rsa_key_mod_expo_t>(), 3 * PTR);
        assert_eq!(align_of::<ica_rsa_key_mod_expo_t>(), PTR);
        if cfg!(target_pointer_width = "64") {
            assert_eq!(size_of::<ica_rsa_key_mod_expo_t>(), 24);
        }
    }

    #[test]
    fn crt_key_layout() {
        assert_eq!(offset_of!(ica_rsa_key_crt_t, key_length), 0);
        assert_eq!(offset_of!(ica_rsa_key_crt_t, p), PTR);
        assert_eq!(offset_of!(ica_rsa_key_crt_t, q), 2 * PTR);
        assert_eq!(offset_of!(ica_rsa_key_crt_t, dp), 3 * PTR);
        assert_eq!(offset_of!(ica_rsa_key_crt_t, dq), 4 * PTR);
        assert_eq!(offset_of!(ica_rsa_key_crt_t, q_inverse), 5 * PTR);
        assert_eq!(size_of::<ica_rsa_key_crt_t>(), 6 * PTR);
        if cfg!(target_pointer_width = "64") {
            assert_eq!(size_of::<ica_rsa_key_crt_t>(), 48);
        }
    }

    #[test]
    fn info_layouts() {
        assert_eq!(size_of::<libica_version_info>(), 12);
        assert_eq!(size_of::<libica_func_list_element>(), 12);
        assert_eq!(offset_of!(libica_func_list_element, flags), 4);
        assert_eq!(offset_of!(libica_func_list_element, property), 8);
        assert_eq!(size_of::<ica_adapter_handle_t>(), 4);
    }

    #[test]
    fn errno_names() {
        assert_eq!(errno_name(libc::EIO as c_uint), "EIO (5)");
        assert_eq!(errno_name(4242), "error 4242");
        assert_eq!(errno_label(libc::ETIME as c_uint), "ETIME");
        assert_eq!(errno_label(4242), "4242");
    }

    #[test]
    fn errno_parsing_takes_names_and_numbers() {
        for &(name, e) in &ERRNOS {
            assert_eq!(parse_errno(name), Some(e as c_uint));
            assert_eq!(errno_symbol(e as c_uint), Some(name));
        }
        assert_eq!(parse_errno(" 42 "), Some(42));
        assert_eq!(parse_errno("0"), None);
        assert_eq!(parse_errno("ENOSUCH"), None);
    }
}
