//! OSSL_PARAM plumbing: finding, reading and writing parameters, static
//! parameter tables, and owned parameter arrays for export.
//!
//! Big integers travel in OSSL_PARAM as native-endian unsigned integers; the
//! rest of rustica works in big-endian bytes, converted here.

use std::ffi::{c_char, c_void, CStr};
use std::ptr;

use zeroize::Zeroizing;

use crate::error::{fail, Reason, Result};
use crate::ffi::{self, OSSL_PARAM};

pub const fn param(key: &'static [u8], data_type: u32) -> OSSL_PARAM {
    OSSL_PARAM {
        key: key.as_ptr() as *const c_char,
        data_type,
        data: ptr::null_mut(),
        data_size: 0,
        return_size: 0,
    }
}

pub const END: OSSL_PARAM = OSSL_PARAM {
    key: ptr::null(),
    data_type: 0,
    data: ptr::null_mut(),
    data_size: 0,
    return_size: 0,
};

pub const INT: u32 = ffi::OSSL_PARAM_INTEGER;
pub const UINT: u32 = ffi::OSSL_PARAM_UNSIGNED_INTEGER;
pub const UTF8: u32 = ffi::OSSL_PARAM_UTF8_STRING;
pub const OCTETS: u32 = ffi::OSSL_PARAM_OCTET_STRING;
pub const OCTET_PTR: u32 = ffi::OSSL_PARAM_OCTET_PTR;

/// A table entry for a C `unsigned int`, sized as OpenSSL's `OSSL_PARAM_uint`
/// makes it (tables are shown by `openssl list -verbose` and read by the
/// text-to-parameter conversion, which uses the size).
pub const fn uint_param(key: &'static [u8]) -> OSSL_PARAM {
    OSSL_PARAM {
        data_size: std::mem::size_of::<std::ffi::c_uint>(),
        ..param(key, UINT)
    }
}

/// A table entry for a C `int`, as `OSSL_PARAM_int` makes it.
pub const fn int_param(key: &'static [u8]) -> OSSL_PARAM {
    OSSL_PARAM {
        data_size: std::mem::size_of::<std::ffi::c_int>(),
        ..param(key, INT)
    }
}

/// A table entry for a `size_t`, as `OSSL_PARAM_size_t` makes it.
pub const fn size_param(key: &'static [u8]) -> OSSL_PARAM {
    OSSL_PARAM {
        data_size: std::mem::size_of::<usize>(),
        ..param(key, UINT)
    }
}

/// A static, NUL-terminated parameter table handed to OpenSSL.
#[repr(transparent)]
pub struct ParamTable<const N: usize>(pub [OSSL_PARAM; N]);
// SAFETY: the tables are immutable and point only at static strings; their
// data pointers are NULL.
unsafe impl<const N: usize> Sync for ParamTable<N> {}

impl<const N: usize> ParamTable<N> {
    pub fn as_ptr(&'static self) -> *const OSSL_PARAM {
        self.0.as_ptr()
    }
}

fn key_bytes(key: &[u8]) -> &[u8] {
    key.strip_suffix(b"\0").unwrap_or(key)
}

/// Iterates a NUL-terminated OSSL_PARAM array (NULL is an empty array).
///
/// # Safety
/// `params` must be NULL or point at an array terminated by an entry whose
/// key is NULL, valid for the lifetime `'a`.
pub unsafe fn iter<'a>(params: *const OSSL_PARAM) -> impl Iterator<Item = &'a OSSL_PARAM> {
    let mut cur = params;
    std::iter::from_fn(move || {
        // SAFETY: guaranteed by the caller: every entry up to the terminator
        // is readable.
        unsafe {
            if cur.is_null() || (*cur).key.is_null() {
                return None;
            }
            let p = &*cur;
            cur = cur.add(1);
            Some(p)
        }
    })
}

/// The name of a parameter.
pub fn name(p: &OSSL_PARAM) -> &[u8] {
    // SAFETY: OSSL_PARAM keys are NUL-terminated strings (checked non-NULL
    // by `iter`).
    unsafe { CStr::from_ptr(p.key).to_bytes() }
}

/// Finds `key` in a const parameter array.
///
/// # Safety
/// As for [`iter`].
pub unsafe fn find<'a>(params: *const OSSL_PARAM, key: &[u8]) -> Option<&'a OSSL_PARAM> {
    let key = key_bytes(key);
    // SAFETY: forwarded from the caller.
    unsafe { iter(params) }.find(|p| name(p) == key)
}

/// Finds `key` in a parameter array the caller asks us to fill.
///
/// # Safety
/// As for [`iter`], and the array must be writable.
pub unsafe fn find_mut<'a>(params: *mut OSSL_PARAM, key: &[u8]) -> Option<&'a mut OSSL_PARAM> {
    let key = key_bytes(key);
    let mut cur = params;
    // SAFETY: forwarded from the caller: entries up to the terminator are
    // valid and writable, and we hand out one of them.
    unsafe {
        while !cur.is_null() && !(*cur).key.is_null() {
            if name(&*cur) == key {
                return Some(&mut *cur);
            }
            cur = cur.add(1);
        }
    }
    None
}

fn what(p: &OSSL_PARAM) -> String {
    String::from_utf8_lossy(name(p)).into_owned()
}

/// Refuses an integer parameter without data before libcrypto reads it:
/// OpenSSL 3.0's OSSL_PARAM_get_* read the byte before the buffer (or
/// dereference NULL) for a zero-sized integer.
fn check_number(p: &OSSL_PARAM) -> Result<()> {
    if p.data.is_null() || p.data_size == 0 {
        return fail(
            Reason::InvalidParameter,
            format!("parameter '{}' has no value", what(p)),
        );
    }
    Ok(())
}

pub fn get_int(p: &OSSL_PARAM) -> Result<i32> {
    check_number(p)?;
    let mut v = 0i32;
    // SAFETY: `p` is a valid parameter; OSSL_PARAM_get_int checks its type and size.
    if unsafe { ffi::OSSL_PARAM_get_int(p, &mut v) } == 1 {
        Ok(v)
    } else {
        fail(
            Reason::InvalidParameter,
            format!("parameter '{}' is not a valid integer", what(p)),
        )
    }
}

pub fn get_size(p: &OSSL_PARAM) -> Result<usize> {
    check_number(p)?;
    let mut v = 0usize;
    // SAFETY: as for get_int.
    if unsafe { ffi::OSSL_PARAM_get_size_t(p, &mut v) } == 1 {
        Ok(v)
    } else {
        fail(
            Reason::InvalidParameter,
            format!("parameter '{}' is not a valid size", what(p)),
        )
    }
}

pub fn get_str(p: &OSSL_PARAM) -> Result<&str> {
    // libcrypto dereferences the data of a UTF8_PTR parameter unchecked.
    if p.data.is_null() {
        return fail(
            Reason::InvalidParameter,
            format!("parameter '{}' has no value", what(p)),
        );
    }
    let bytes: &[u8] = match p.data_type {
        // A UTF8_STRING's bytes are its data, data_size long; a terminating
        // NUL is optional, so never read past data_size looking for one.
        UTF8 => {
            // SAFETY: data is non-NULL and the caller's parameter promises
            // data_size readable bytes that live as long as the parameter.
            let all = unsafe { std::slice::from_raw_parts(p.data as *const u8, p.data_size) };
            all.split(|&b| b == 0).next().unwrap_or(&[])
        }
        ffi::OSSL_PARAM_UTF8_PTR => {
            // SAFETY: a UTF8_PTR's data holds one pointer (checked non-NULL
            // above); read it unaligned, as C callers may pack it anywhere.
            let s = unsafe { (p.data as *const *const c_char).read_unaligned() };
            if s.is_null() {
                return fail(
                    Reason::InvalidParameter,
                    format!("parameter '{}' has no value", what(p)),
                );
            }
            // SAFETY: the pointed-to string is NUL-terminated by the UTF8_PTR
            // contract and lives as long as the parameter.
            unsafe { CStr::from_ptr(s) }.to_bytes()
        }
        _ => {
            return fail(
                Reason::InvalidParameter,
                format!("parameter '{}' is not a string", what(p)),
            )
        }
    };
    std::str::from_utf8(bytes).or_else(|_| {
        fail(
            Reason::InvalidParameter,
            format!("parameter '{}' is not UTF-8", what(p)),
        )
    })
}

pub fn get_octets(p: &OSSL_PARAM) -> Result<&[u8]> {
    if p.data_type != OCTETS || (p.data.is_null() && p.data_size != 0) {
        return fail(
            Reason::InvalidParameter,
            format!("parameter '{}' is not an octet string", what(p)),
        );
    }
    if p.data_size == 0 {
        return Ok(&[]);
    }
    // SAFETY: an octet-string parameter's data holds data_size bytes.
    Ok(unsafe { std::slice::from_raw_parts(p.data as *const u8, p.data_size) })
}

/// Reads an unsigned big integer; returns it big-endian.
pub fn get_uint_be(p: &OSSL_PARAM) -> Result<Zeroizing<Vec<u8>>> {
    if p.data_type != UINT || p.data.is_null() || p.data_size == 0 {
        return fail(
            Reason::InvalidParameter,
            format!("parameter '{}' is not an unsigned integer", what(p)),
        );
    }
    // SAFETY: an integer parameter's data holds data_size bytes.
    let raw = unsafe { std::slice::from_raw_parts(p.data as *const u8, p.data_size) };
    Ok(Zeroizing::new(native_to_be(raw)))
}

pub fn native_to_be(raw: &[u8]) -> Vec<u8> {
    let mut v = raw.to_vec();
    if cfg!(target_endian = "little") {
        v.reverse();
    }
    v
}

fn be_to_native_padded(be: &[u8], size: usize) -> Zeroizing<Vec<u8>> {
    let digits = strip_zeros(be);
    let mut out = Zeroizing::new(vec![0u8; size]);
    out[size - digits.len()..].copy_from_slice(digits);
    if cfg!(target_endian = "little") {
        out.reverse();
    }
    out
}

pub fn strip_zeros(be: &[u8]) -> &[u8] {
    let first = be.iter().position(|&b| b != 0).unwrap_or(be.len());
    &be[first..]
}

pub fn set_int(p: &mut OSSL_PARAM, v: i32) -> Result<()> {
    // SAFETY: `p` is a caller-provided writable parameter; the setter checks
    // type and size.
    if unsafe { ffi::OSSL_PARAM_set_int(p, v) } == 1 {
        Ok(())
    } else {
        fail(
            Reason::InvalidParameter,
            format!("cannot return integer parameter '{}'", what(p)),
        )
    }
}

pub fn set_size(p: &mut OSSL_PARAM, v: usize) -> Result<()> {
    // SAFETY: as for set_int.
    if unsafe { ffi::OSSL_PARAM_set_size_t(p, v) } == 1 {
        Ok(())
    } else {
        fail(
            Reason::InvalidParameter,
            format!("cannot return size parameter '{}'", what(p)),
        )
    }
}

pub fn set_str(p: &mut OSSL_PARAM, v: &CStr) -> Result<()> {
    // SAFETY: as for set_int; `v` is NUL-terminated.
    if unsafe { ffi::OSSL_PARAM_set_utf8_string(p, v.as_ptr()) } == 1 {
        Ok(())
    } else {
        fail(
            Reason::InvalidParameter,
            format!("cannot return string parameter '{}'", what(p)),
        )
    }
}

/// Like `set_str`, and also fills UTF8_PTR parameters (which keep a
/// pointer, hence the static lifetime).
pub fn set_static_str(p: &mut OSSL_PARAM, v: &'static CStr) -> Result<()> {
    if p.data_type == ffi::OSSL_PARAM_UTF8_PTR {
        // SAFETY: `v` lives for the whole program.
        if unsafe { ffi::OSSL_PARAM_set_utf8_ptr(p, v.as_ptr()) } == 1 {
            return Ok(());
        }
        return fail(
            Reason::InvalidParameter,
            format!("cannot return string parameter '{}'", what(p)),
        );
    }
    set_str(p, v)
}

pub fn set_octets(p: &mut OSSL_PARAM, v: &[u8]) -> Result<()> {
    // SAFETY: as for set_int; `v` is valid for v.len() bytes.
    if unsafe { ffi::OSSL_PARAM_set_octet_string(p, v.as_ptr() as *const c_void, v.len()) } == 1 {
        Ok(())
    } else {
        fail(
            Reason::InvalidParameter,
            format!("cannot return octet parameter '{}'", what(p)),
        )
    }
}

/// Returns bytes that live as long as the context they come from, in the
/// form the caller asked for: a pointer to them for an octet-pointer
/// parameter (what `EVP_PKEY_CTX_get0_rsa_oaep_label` builds; NULL when
/// there are none, as the default provider answers), a copy otherwise.
pub fn set_octets_ref(p: &mut OSSL_PARAM, v: Option<&[u8]>) -> Result<()> {
    if p.data_type != OCTET_PTR {
        return set_octets(p, v.unwrap_or(&[]));
    }
    let (ptr, len) = v.map_or((ptr::null(), 0), |v| (v.as_ptr() as *const c_void, v.len()));
    // SAFETY: `p` is a parameter of the caller's array (find_mut); the
    // pointer stored in it is valid for `len` bytes for as long as the
    // context owning `v` is unchanged, which is the octet-pointer contract.
    if unsafe { ffi::OSSL_PARAM_set_octet_ptr(p, ptr, len) } == 1 {
        Ok(())
    } else {
        fail(
            Reason::InvalidParameter,
            format!("cannot return octet parameter '{}'", what(p)),
        )
    }
}

/// Writes a big-endian unsigned integer into an integer parameter, padded
/// to the parameter's buffer as OpenSSL does; a NULL buffer asks for the size.
pub fn set_uint_be(p: &mut OSSL_PARAM, be: &[u8]) -> Result<()> {
    let digits = strip_zeros(be);
    let needed = digits.len().max(1);
    if p.data_type != UINT {
        return fail(
            Reason::InvalidParameter,
            format!("parameter '{}' must be an unsigned integer", what(p)),
        );
    }
    p.return_size = needed;
    if p.data.is_null() {
        return Ok(());
    }
    if p.data_size < needed {
        return fail(
            Reason::BadLength,
            format!(
                "buffer for '{}' holds {} bytes, {} needed",
                what(p),
                p.data_size,
                needed
            ),
        );
    }
    let native = be_to_native_padded(digits, p.data_size);
    // SAFETY: the caller's buffer holds data_size bytes (checked above).
    unsafe { ptr::copy_nonoverlapping(native.as_ptr(), p.data as *mut u8, p.data_size) };
    p.return_size = p.data_size;
    Ok(())
}

/// Copies the value of `src` (one of ours: integer, unsigned or string)
/// into the caller's parameter `dst`.
pub fn copy_value(dst: &mut OSSL_PARAM, src: &OSSL_PARAM) -> Result<()> {
    match src.data_type {
        UINT => set_uint_be(dst, &get_uint_be(src)?),
        INT => set_int(dst, get_int(src)?),
        _ => {
            let s = std::ffi::CString::new(get_str(src)?).unwrap_or_default();
            set_str(dst, &s)
        }
    }
}

/// An owned parameter array whose integer buffers are zeroized on drop;
/// used to hand key material to an export callback.
#[derive(Default)]
pub struct OwnedParams {
    entries: Vec<OSSL_PARAM>,
    buffers: Vec<Zeroizing<Vec<u8>>>,
}

impl OwnedParams {
    pub fn push_uint_be(&mut self, key: &'static [u8], be: &[u8]) {
        let digits = strip_zeros(be);
        let buf = be_to_native_padded(digits, digits.len().max(1));
        let mut p = param(key, UINT);
        p.data = buf.as_ptr() as *mut c_void;
        p.data_size = buf.len();
        // The heap buffer does not move when the Vec holding it grows.
        self.buffers.push(buf);
        self.entries.push(p);
    }

    pub fn push_str(&mut self, key: &'static [u8], value: &CStr) {
        let buf = Zeroizing::new(value.to_bytes_with_nul().to_vec());
        let mut p = param(key, UTF8);
        p.data = buf.as_ptr() as *mut c_void;
        p.data_size = buf.len() - 1;
        self.buffers.push(buf);
        self.entries.push(p);
    }

    pub fn push_int(&mut self, key: &'static [u8], value: i32) {
        let buf = Zeroizing::new(value.to_ne_bytes().to_vec());
        let mut p = param(key, INT);
        p.data = buf.as_ptr() as *mut c_void;
        p.data_size = buf.len();
        self.buffers.push(buf);
        self.entries.push(p);
    }

    /// The terminated array, valid while `self` lives.
    pub fn finish(&mut self) -> *const OSSL_PARAM {
        if self.entries.last().is_none_or(|p| !p.key.is_null()) {
            self.entries.push(END);
        }
        self.entries.as_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_strings_without_data_are_refused_not_read() {
        let mut byte = 0u8;
        for data_type in [INT, UINT, ffi::OSSL_PARAM_UTF8_PTR] {
            let mut p = param(b"x\0", data_type);
            assert!(get_int(&p).is_err());
            assert!(get_size(&p).is_err());
            assert!(get_str(&p).is_err());
            // Non-NULL data of size zero: libcrypto would read before it.
            p.data = &mut byte as *mut u8 as *mut c_void;
            assert!(get_int(&p).is_err());
            assert!(get_size(&p).is_err());
        }
    }

    #[test]
    fn utf8_string_is_read_within_data_size_only() {
        // "sha256" followed by bytes that are not part of the value and no
        // NUL inside data_size: the reader must stop at data_size.
        let buf = *b"sha256XYZ";
        let mut p = param(b"digest\0", UTF8);
        p.data = buf.as_ptr() as *mut c_void;
        p.data_size = 6;
        assert_eq!(get_str(&p).unwrap(), "sha256");
        // An embedded NUL ends the value early, as in C.
        let buf = *b"sha1\0junk";
        p.data = buf.as_ptr() as *mut c_void;
        p.data_size = buf.len();
        assert_eq!(get_str(&p).unwrap(), "sha1");
        // A UTF8_PTR holding NULL is refused, not dereferenced.
        let null: *const c_char = ptr::null();
        let mut q = param(b"digest\0", ffi::OSSL_PARAM_UTF8_PTR);
        q.data = &null as *const *const c_char as *mut c_void;
        q.data_size = 0;
        assert!(get_str(&q).is_err());
        // A UTF8_PTR to a string is read.
        let s = c"sha512";
        let sp = s.as_ptr();
        q.data = &sp as *const *const c_char as *mut c_void;
        assert_eq!(get_str(&q).unwrap(), "sha512");
        // Other types are refused.
        let n = 5i32;
        let mut r = param(b"digest\0", INT);
        r.data = &n as *const i32 as *mut c_void;
        r.data_size = 4;
        assert!(get_str(&r).is_err());
    }
}
