//! Shared pieces of rustica's fuzz targets: a byte reader, OSSL_PARAM
//! arrays built from fuzz input (well-formed as OpenSSL's constructors make
//! them, with hostile names, types, sizes and contents), and an in-process
//! library context with rustica registered as a built-in provider (so the
//! provider code runs instrumented inside the fuzz binary).

use std::ffi::{c_char, c_int, c_void};
use std::ptr;

use rustica::digest::{DigestCache, DigestId};
use rustica::ffi::{self, OSSL_PARAM};
use rustica::padding::{self, Pss};

/// Reads fuzz input front to back; past the end it yields zeros.
pub struct Bytes<'a>(pub &'a [u8]);

impl<'a> Bytes<'a> {
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    pub fn rest(&mut self) -> &'a [u8] {
        self.take(self.0.len())
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

pub const DIGESTS: [DigestId; 11] = [
    DigestId::Sha1,
    DigestId::Sha224,
    DigestId::Sha256,
    DigestId::Sha384,
    DigestId::Sha512,
    DigestId::Sha512_224,
    DigestId::Sha512_256,
    DigestId::Sha3_224,
    DigestId::Sha3_256,
    DigestId::Sha3_384,
    DigestId::Sha3_512,
];

pub fn digest(b: u8) -> DigestId {
    DIGESTS[usize::from(b) % DIGESTS.len()]
}

const TYPES: [u32; 5] = [
    ffi::OSSL_PARAM_UNSIGNED_INTEGER,
    ffi::OSSL_PARAM_INTEGER,
    ffi::OSSL_PARAM_UTF8_STRING,
    ffi::OSSL_PARAM_OCTET_STRING,
    ffi::OSSL_PARAM_UTF8_PTR,
];

/// Strings worth trying as UTF-8 parameter values (the fuzzer also makes
/// its own).
const WORDS: [&[u8]; 14] = [
    b"pkcs1",
    b"oaep",
    b"pss",
    b"none",
    b"x931",
    b"SHA256",
    b"SHA1",
    b"SHA2-512/224",
    b"SHA3-256",
    b"MD5",
    b"digest",
    b"max",
    b"auto",
    b"-4",
];

/// An OSSL_PARAM array built from fuzz bytes. Each entry: a name chosen
/// from `names` (or an unknown one), a type, and a value. Buffers are owned
/// here; UTF-8 strings are always NUL-terminated, as OpenSSL's constructors
/// make them, and a NULL data pointer only comes with size 0.
pub struct FuzzParams {
    entries: Vec<OSSL_PARAM>,
    buffers: Vec<Vec<u8>>,
    /// Targets of UTF8_PTR entries (their data points at one of these);
    /// boxed so that they keep their address while the Vec grows.
    #[allow(clippy::vec_box)]
    ptrs: Vec<Box<*const c_char>>,
}

impl FuzzParams {
    pub fn new(input: &mut Bytes, names: &[&'static [u8]], max_entries: usize) -> FuzzParams {
        let mut fp = FuzzParams {
            entries: Vec::new(),
            buffers: Vec::new(),
            ptrs: Vec::new(),
        };
        let count = usize::from(input.u8()) % (max_entries + 1);
        for _ in 0..count {
            if input.is_empty() {
                break;
            }
            let sel = usize::from(input.u8());
            let key: &'static [u8] = names
                .get(sel % (names.len() + 1))
                .copied()
                .unwrap_or(b"bogus\0");
            let ty = TYPES[usize::from(input.u8()) % TYPES.len()];
            let how = input.u8();
            let len = usize::from(input.u8()) % 80;
            let value: Vec<u8> =
                if ty == ffi::OSSL_PARAM_UTF8_STRING || ty == ffi::OSSL_PARAM_UTF8_PTR {
                    if how & 0x80 != 0 {
                        WORDS[usize::from(how) % WORDS.len()].to_vec()
                    } else {
                        input.take(len).to_vec()
                    }
                } else {
                    input.take(len).to_vec()
                };
            let null_data = how & 0x40 != 0 && value.is_empty();
            fp.push(key, ty, value, null_data);
        }
        fp
    }

    fn push(&mut self, key: &'static [u8], ty: u32, value: Vec<u8>, null_data: bool) {
        let size = value.len();
        let mut buf = value;
        if ty == ffi::OSSL_PARAM_UTF8_STRING || ty == ffi::OSSL_PARAM_UTF8_PTR {
            buf.push(0);
        }
        buf.reserve(1);
        let mut p = OSSL_PARAM {
            key: key.as_ptr() as *const c_char,
            data_type: ty,
            data: if null_data {
                ptr::null_mut()
            } else {
                buf.as_mut_ptr() as *mut c_void
            },
            data_size: size,
            return_size: 0,
        };
        if ty == ffi::OSSL_PARAM_UTF8_PTR {
            // data points at a char* that points at the string.
            let target = Box::new(buf.as_ptr() as *const c_char);
            p.data = &*target as *const *const c_char as *mut c_void;
            p.data_size = size;
            self.ptrs.push(target);
        }
        self.buffers.push(buf);
        self.entries.push(p);
    }

    /// The terminated array; valid while `self` lives.
    pub fn as_ptr(&mut self) -> *const OSSL_PARAM {
        if self.entries.last().is_none_or(|p| !p.key.is_null()) {
            self.entries.push(OSSL_PARAM {
                key: ptr::null(),
                data_type: 0,
                data: ptr::null_mut(),
                data_size: 0,
                return_size: 0,
            });
        }
        self.entries.as_ptr()
    }
}

extern "C" {
    fn OSSL_LIB_CTX_new() -> *mut c_void;
    fn OSSL_PROVIDER_add_builtin(
        ctx: *mut c_void,
        name: *const c_char,
        init: ffi::OSSL_provider_init_fn,
    ) -> c_int;
    fn OSSL_PROVIDER_load(ctx: *mut c_void, name: *const c_char) -> *mut c_void;
}

/// A library context (created once, never freed) with rustica as a
/// built-in provider and the default provider for digests.
pub fn libctx() -> *mut c_void {
    struct Ctx(*mut c_void);
    // SAFETY: a library context may be shared between threads.
    unsafe impl Send for Ctx {}
    unsafe impl Sync for Ctx {}
    static CTX: std::sync::OnceLock<Ctx> = std::sync::OnceLock::new();
    CTX.get_or_init(|| {
        // Keep the fuzz runs out of the user's shared counters file.
        if std::env::var_os("RUSTICA_STATS").is_none() {
            std::env::set_var("RUSTICA_STATS", "0");
        }
        // SAFETY: plain library calls; OSSL_provider_init has the
        // OSSL_provider_init_fn signature.
        unsafe {
            let ctx = OSSL_LIB_CTX_new();
            assert!(!ctx.is_null());
            assert_eq!(
                OSSL_PROVIDER_add_builtin(
                    ctx,
                    c"rustica".as_ptr(),
                    Some(rustica::prov::OSSL_provider_init)
                ),
                1
            );
            assert!(!OSSL_PROVIDER_load(ctx, c"rustica".as_ptr()).is_null());
            assert!(!OSSL_PROVIDER_load(ctx, c"default".as_ptr()).is_null());
            Ctx(ctx)
        }
    })
    .0
}

/// Turns the stats file off for targets that call the primitive directly.
pub fn quiet_stats() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("RUSTICA_STATS").is_none() {
            std::env::set_var("RUSTICA_STATS", "0");
        }
    });
}

impl FuzzParams {
    /// A one-entry array holding an unsigned integer (for fixed setup).
    pub fn from_uint(key: &'static [u8], value: usize) -> FuzzParams {
        let mut fp = FuzzParams {
            entries: Vec::new(),
            buffers: Vec::new(),
            ptrs: Vec::new(),
        };
        fp.push(
            key,
            ffi::OSSL_PARAM_UNSIGNED_INTEGER,
            value.to_ne_bytes().to_vec(),
            false,
        );
        fp
    }
}

/// A digest cache on the default library context, for targets that call
/// the padding code directly.
pub fn digest_cache() -> &'static DigestCache {
    static CACHE: std::sync::OnceLock<DigestCache> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| DigestCache::new(ptr::null_mut()))
}

/// RFC 8017's EMSA-PKCS1-v1_5 structure, written plainly.
fn reference_type1(em: &[u8]) -> Option<&[u8]> {
    if em.len() < 11 || em[0] != 0 || em[1] != 1 {
        return None;
    }
    let sep = em[2..].iter().position(|&b| b != 0xff)? + 2;
    if em[sep] != 0 || sep < 10 {
        return None;
    }
    Some(&em[sep + 1..])
}

/// The sig_padding target (kept here so unit tests can replay inputs
/// through the same code the fuzzer runs). First byte picks:
/// 0: PKCS#1 v1.5 type 1 decoding against `reference_type1`;
/// 1: PSS with fuzzed digests, key size (0 to 4199 bits) and salt rule on
///    a hostile encoded message; an impossible key size must be refused by
///    `Pss::new`, exactly the sizes below `Pss::min_mod_bits`;
/// 2: encode/verify round trips (PSS and type 1).
pub fn sig_padding(data: &[u8]) {
    let mut input = Bytes(data);
    let which = input.u8();
    match which % 3 {
        0 => {
            let em = input.rest();
            assert_eq!(padding::pkcs1_type1_decode(em), reference_type1(em));
        }
        1 => {
            let md = digest(input.u8());
            let mgf1 = digest(input.u8());
            let mod_bits = usize::from(input.u16()) % 4200;
            let saltlen = i32::from(input.u8() as i8);
            let mhash = input.take(md.size()).to_vec();
            let em = input.rest();
            let pss = match Pss::new(digest_cache(), md, mgf1, mod_bits) {
                Ok(pss) => pss,
                Err(_) => {
                    assert!(mod_bits < Pss::min_mod_bits(md), "{mod_bits} bits refused");
                    return;
                }
            };
            assert!(mod_bits >= Pss::min_mod_bits(md));
            let _ = pss.verify(&mhash, em, saltlen);
            let max = pss.max_salt();
            if let Ok(salt_len) = pss.signing_salt_len(saltlen) {
                assert!(salt_len <= max);
            }
        }
        _ => {
            // Round trip: whatever encodes must verify with its salt length.
            let md = digest(input.u8());
            let mgf1 = digest(input.u8());
            let mod_bits = 256 + usize::from(input.u16()) % 4000;
            let salt_len = usize::from(input.u8());
            let mut mhash = input.take(md.size()).to_vec();
            mhash.resize(md.size(), 0);
            let salt = input.take(salt_len).to_vec();
            let k = mod_bits.div_ceil(8);
            if let Ok(pss) = Pss::new(digest_cache(), md, mgf1, mod_bits) {
                match pss.encode(&mhash, &salt) {
                    Ok(em) => {
                        assert_eq!(em.len(), k);
                        assert!(pss.verify(&mhash, &em, salt.len() as i32).unwrap());
                        assert!(pss.verify(&mhash, &em, padding::SALT_AUTO).unwrap());
                    }
                    Err(_) => assert!(salt.len() > pss.max_salt()),
                }
            } else {
                assert!(mod_bits < Pss::min_mod_bits(md));
            }
            let t = input.rest();
            if let Ok(em) = padding::pkcs1_type1_encode(t, k) {
                assert_eq!(padding::pkcs1_type1_decode(&em), Some(t));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The input that made `Pss::em_bits` underflow (SHA3-512, a 0-bit
    /// modulus); with overflow checks on it panicked.
    #[test]
    fn sig_padding_zero_bit_modulus_reproducer() {
        sig_padding(&[0x0a, 0x0a]);
        assert!(Pss::new(digest_cache(), digest(0x0a), digest(0), 0).is_err());
    }

    /// Every committed seed of the sig_padding corpus replays cleanly.
    #[test]
    fn sig_padding_corpus_replays() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/sig_padding");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            sig_padding(&std::fs::read(entry.unwrap().path()).unwrap());
            seen += 1;
        }
        assert!(seen > 0, "no seeds in {}", dir.display());
    }
}
