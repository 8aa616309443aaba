//! The digests RSA signatures use: names and aliases, DER identifiers, and
//! hashing through EVP_MD fetched from the library context rustica was
//! loaded into, per operation context.
//!
//! Fetches use the query "provider!=rustica", which also overrides any
//! inherited default properties on the provider name, so rustica can never
//! be asked to hash for itself.

use std::ffi::CStr;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use crate::error::{Error, Reason, Result};
use crate::ffi;

mod hasher;
pub use hasher::{Digest, Hasher, MAX_DIGEST_LEN};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestId {
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    Sha512_224,
    Sha512_256,
    Sha3_224,
    Sha3_256,
    Sha3_384,
    Sha3_512,
    /// MD5 and SHA-1 concatenated (36 bytes): what TLS 1.0 and 1.1 sign
    /// with RSA, as PKCS#1 v1.5 without a DigestInfo.
    Md5Sha1,
    Ripemd160,
    /// Signs with RSA on OpenSSL 3.4 and later only, as the default
    /// provider does (see `SigCtx::set_md`).
    Sm3,
    Md5,
    /// MD4, MD2 and MDC2 come from the legacy provider (MD2 only where
    /// OpenSSL was built with it); the default provider signs with each
    /// digest any loaded provider offers, and so does rustica.
    Md4,
    Md2,
    /// PKCS#1 v1.5 only; signed as a bare OCTET STRING, as OpenSSL's
    /// RSA_sign_ASN1_OCTET_STRING does (see `der::mdc2_octet_string`).
    Mdc2,
}

pub struct DigestInfo {
    pub id: DigestId,
    /// OpenSSL's canonical name, also what rustica reports back.
    pub name: &'static CStr,
    /// Names accepted without a fetch (compared case-insensitively).
    pub aliases: &'static [&'static str],
    pub size: usize,
    /// DER of the digest's OBJECT IDENTIFIER value (without tag and length);
    /// empty for MD5-SHA1, which has none and is signed without DigestInfo.
    pub oid: &'static [u8],
    /// DER of the sha*WithRSAEncryption signature algorithm OID value.
    pub pkcs1_sig_oid: &'static [u8],
}

const NIST_HASH: [u8; 8] = [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02];

macro_rules! nist_oid {
    ($arc:expr) => {
        &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, $arc]
    };
}
macro_rules! pkcs1_oid {
    ($arc:expr) => {
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, $arc]
    };
}
/// 1.2.840.113549.2.n: RSA Data Security's digest arc (MD2, MD4, MD5).
macro_rules! rsadsi_digest_oid {
    ($arc:expr) => {
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, $arc]
    };
}
macro_rules! nist_sig_oid {
    ($arc:expr) => {
        &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, $arc]
    };
}

pub static DIGESTS: [DigestInfo; DIGEST_COUNT] = [
    DigestInfo {
        id: DigestId::Sha1,
        name: c"SHA1",
        aliases: &["SHA1", "SHA-1", "SSL3-SHA1"],
        size: 20,
        oid: &[0x2b, 0x0e, 0x03, 0x02, 0x1a],
        pkcs1_sig_oid: pkcs1_oid!(5),
    },
    DigestInfo {
        id: DigestId::Sha224,
        name: c"SHA2-224",
        aliases: &["SHA2-224", "SHA-224", "SHA224"],
        size: 28,
        oid: nist_oid!(4),
        pkcs1_sig_oid: pkcs1_oid!(14),
    },
    DigestInfo {
        id: DigestId::Sha256,
        name: c"SHA2-256",
        aliases: &["SHA2-256", "SHA-256", "SHA256"],
        size: 32,
        oid: nist_oid!(1),
        pkcs1_sig_oid: pkcs1_oid!(11),
    },
    DigestInfo {
        id: DigestId::Sha384,
        name: c"SHA2-384",
        aliases: &["SHA2-384", "SHA-384", "SHA384"],
        size: 48,
        oid: nist_oid!(2),
        pkcs1_sig_oid: pkcs1_oid!(12),
    },
    DigestInfo {
        id: DigestId::Sha512,
        name: c"SHA2-512",
        aliases: &["SHA2-512", "SHA-512", "SHA512"],
        size: 64,
        oid: nist_oid!(3),
        pkcs1_sig_oid: pkcs1_oid!(13),
    },
    DigestInfo {
        id: DigestId::Sha512_224,
        name: c"SHA2-512/224",
        aliases: &["SHA2-512/224", "SHA-512/224", "SHA512-224"],
        size: 28,
        oid: nist_oid!(5),
        pkcs1_sig_oid: pkcs1_oid!(15),
    },
    DigestInfo {
        id: DigestId::Sha512_256,
        name: c"SHA2-512/256",
        aliases: &["SHA2-512/256", "SHA-512/256", "SHA512-256"],
        size: 32,
        oid: nist_oid!(6),
        pkcs1_sig_oid: pkcs1_oid!(16),
    },
    DigestInfo {
        id: DigestId::Sha3_224,
        name: c"SHA3-224",
        aliases: &["SHA3-224"],
        size: 28,
        oid: nist_oid!(7),
        pkcs1_sig_oid: nist_sig_oid!(13),
    },
    DigestInfo {
        id: DigestId::Sha3_256,
        name: c"SHA3-256",
        aliases: &["SHA3-256"],
        size: 32,
        oid: nist_oid!(8),
        pkcs1_sig_oid: nist_sig_oid!(14),
    },
    DigestInfo {
        id: DigestId::Sha3_384,
        name: c"SHA3-384",
        aliases: &["SHA3-384"],
        size: 48,
        oid: nist_oid!(9),
        pkcs1_sig_oid: nist_sig_oid!(15),
    },
    DigestInfo {
        id: DigestId::Sha3_512,
        name: c"SHA3-512",
        aliases: &["SHA3-512"],
        size: 64,
        oid: nist_oid!(10),
        pkcs1_sig_oid: nist_sig_oid!(16),
    },
    DigestInfo {
        id: DigestId::Md5Sha1,
        name: c"MD5-SHA1",
        aliases: &["MD5-SHA1"],
        size: 36,
        oid: &[],
        pkcs1_sig_oid: &[],
    },
    DigestInfo {
        id: DigestId::Ripemd160,
        name: c"RIPEMD160",
        aliases: &["RIPEMD160", "RIPEMD-160", "RIPEMD", "RMD160"],
        size: 20,
        oid: &[0x2b, 0x24, 0x03, 0x02, 0x01],
        pkcs1_sig_oid: &[0x2b, 0x24, 0x03, 0x03, 0x01, 0x02],
    },
    DigestInfo {
        id: DigestId::Sm3,
        name: c"SM3",
        aliases: &["SM3"],
        size: 32,
        oid: &[0x2a, 0x81, 0x1c, 0xcf, 0x55, 0x01, 0x83, 0x11],
        pkcs1_sig_oid: &[0x2a, 0x81, 0x1c, 0xcf, 0x55, 0x01, 0x83, 0x78],
    },
    DigestInfo {
        id: DigestId::Md5,
        name: c"MD5",
        aliases: &["MD5", "SSL3-MD5"],
        size: 16,
        oid: rsadsi_digest_oid!(5),
        pkcs1_sig_oid: pkcs1_oid!(4),
    },
    DigestInfo {
        id: DigestId::Md4,
        name: c"MD4",
        aliases: &["MD4"],
        size: 16,
        oid: rsadsi_digest_oid!(4),
        pkcs1_sig_oid: pkcs1_oid!(3),
    },
    DigestInfo {
        id: DigestId::Md2,
        name: c"MD2",
        aliases: &["MD2"],
        size: 16,
        oid: rsadsi_digest_oid!(2),
        pkcs1_sig_oid: pkcs1_oid!(2),
    },
    DigestInfo {
        id: DigestId::Mdc2,
        name: c"MDC2",
        aliases: &["MDC2"],
        size: 16,
        // 2.5.8.3.101 (mdc-2) and 2.5.8.3.100 (mdc2WithRSASignature).
        oid: &[0x55, 0x08, 0x03, 0x65],
        pkcs1_sig_oid: &[0x55, 0x08, 0x03, 0x64],
    },
];

/// How many digests rustica knows (the length of [`DIGESTS`]).
pub const DIGEST_COUNT: usize = 18;

impl DigestId {
    pub fn info(self) -> &'static DigestInfo {
        &DIGESTS[self as usize]
    }
    pub fn size(self) -> usize {
        self.info().size
    }
    /// True for digests whose AlgorithmIdentifier takes no NULL parameter
    /// inside RSASSA-PSS parameters (all SHA-2 and SHA-3 here; SHA-1 too).
    pub fn is_nist(self) -> bool {
        self.info().oid.starts_with(&NIST_HASH)
    }
    /// False for MD5-SHA1: no OID, no DigestInfo, no PSS, no
    /// AlgorithmIdentifier (it exists for TLS 1.0/1.1 signatures only).
    pub fn has_oid(self) -> bool {
        !self.info().oid.is_empty()
    }
}

const FETCH_QUERY: &CStr = c"provider!=rustica";

/// Digests fetched for one operation context (fetched at first use, freed
/// with the context), so an operation never fetches per call and nothing
/// fetched outlives the operations: provider teardown holds no EVP_MD.
/// A slot is an atomic pointer (NULL until fetched): a fresh context per
/// operation, as DNSSEC signers make, sets and frees one slot in a few
/// instructions, with no once-cell machinery.
pub struct DigestCache {
    libctx: *mut ffi::OSSL_LIB_CTX,
    slots: [AtomicPtr<ffi::EVP_MD>; DIGEST_COUNT],
    /// Bit i set: slot i holds a digest (what drop visits, no more).
    held: AtomicU32,
}
// SAFETY: the library context pointer is only passed to EVP_MD_fetch, which
// is thread-safe; a slot holds a fetched EVP_MD, immutable and reference
// counted by OpenSSL (usable from several threads by design), and is only
// set through a compare-and-swap.
unsafe impl Send for DigestCache {}
// SAFETY: see Send.
unsafe impl Sync for DigestCache {}

impl DigestCache {
    pub fn new(libctx: *mut ffi::OSSL_LIB_CTX) -> Self {
        DigestCache {
            libctx,
            slots: Default::default(),
            held: AtomicU32::new(0),
        }
    }

    fn fetch(&self, name: &CStr) -> *mut ffi::EVP_MD {
        // SAFETY: libctx is the library context rustica works in (or NULL,
        // the default one); both strings are NUL-terminated.
        unsafe { ffi::EVP_MD_fetch(self.libctx, name.as_ptr(), FETCH_QUERY.as_ptr()) }
    }

    /// The EVP_MD for a known digest, fetched once.
    pub fn md(&self, id: DigestId) -> Result<*const ffi::EVP_MD> {
        let slot = &self.slots[id as usize];
        let held = slot.load(Ordering::Acquire);
        if !held.is_null() {
            return Ok(held);
        }
        let md = self.fetch(id.info().name);
        if md.is_null() {
            return Err(unavailable(id));
        }
        match slot.compare_exchange(ptr::null_mut(), md, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                self.held.fetch_or(1 << id as u32, Ordering::Relaxed);
                Ok(md)
            }
            Err(won) => {
                // Another thread set the slot first; drop our copy.
                // SAFETY: `md` came from EVP_MD_fetch and is not shared.
                unsafe { ffi::EVP_MD_free(md) };
                Ok(won)
            }
        }
    }

    /// Resolves a user-supplied digest name (any alias OpenSSL knows).
    pub fn resolve(&self, name: &str) -> Result<DigestId> {
        if let Some(id) = self.resolve_alias(name.as_bytes())? {
            return Ok(id);
        }
        self.resolve_other(name)
    }

    /// [`resolve`](Self::resolve) of a C string (an init call's digest
    /// name): the aliases compare as bytes, no UTF-8 check or copy.
    pub fn resolve_c(&self, name: &CStr) -> Result<DigestId> {
        if let Some(id) = self.resolve_alias(name.to_bytes())? {
            return Ok(id);
        }
        self.resolve_other(&name.to_string_lossy())
    }

    /// A digest known by one of its aliases (any case), if `name` is one.
    fn resolve_alias(&self, name: &[u8]) -> Result<Option<DigestId>> {
        let Some(id) = common_alias(name).or_else(|| table_alias(name)) else {
            return Ok(None);
        };
        // Known by name, but usable only where a provider offers it (MD4
        // without the legacy provider is refused here, as by the default
        // provider).
        self.md(id)?;
        Ok(Some(id))
    }

    /// A name that is no alias of rustica's table: out of line, off the
    /// path of the usual names.
    #[inline(never)]
    fn resolve_other(&self, name: &str) -> Result<DigestId> {
        let unknown = || unknown_digest(name);
        // Other aliases (OIDs, lower-case spellings OpenSSL knows): ask the
        // digest's own provider which one it is.
        let cname = std::ffi::CString::new(name).map_err(|_| unknown())?;
        let md = self.fetch(&cname);
        if md.is_null() {
            return Err(unknown());
        }
        // SAFETY: md is a valid fetched digest; names are NUL-terminated.
        let found = DIGESTS
            .iter()
            .find(|d| unsafe { ffi::EVP_MD_is_a(md, d.name.as_ptr()) } == 1)
            .map(|d| d.id);
        // SAFETY: md came from EVP_MD_fetch above and is not kept.
        unsafe { ffi::EVP_MD_free(md) };
        found.ok_or_else(unknown)
    }

    /// One-shot hash.
    pub fn digest(&self, id: DigestId, data: &[u8]) -> Result<Vec<u8>> {
        let mut h = Hasher::new(self, id)?;
        h.update(data)?;
        h.finish()
    }
}

impl Clone for DigestCache {
    /// A cache over the same library context, empty: a duplicated operation
    /// fetches what it uses again, and each copy releases its own.
    fn clone(&self) -> Self {
        DigestCache::new(self.libctx)
    }
}

impl Drop for DigestCache {
    /// Runs when the operation context that owns the cache is freed, while
    /// the library context the digests came from is alive (applications
    /// free their operation contexts before their library contexts).
    fn drop(&mut self) {
        let mut held = *self.held.get_mut();
        while held != 0 {
            let i = held.trailing_zeros() as usize;
            held &= held - 1;
            let md = std::mem::replace(self.slots[i].get_mut(), ptr::null_mut());
            // SAFETY: each slot holds its own reference from EVP_MD_fetch,
            // released once here.
            unsafe { ffi::EVP_MD_free(md) };
        }
    }
}

/// The SHA-1 and SHA-2 names as OpenSSL and applications usually spell
/// them (EVP_MD_get0_name's, and the short ones), matched against byte
/// constants: a fresh context per signature finds its digest without
/// walking DIGESTS and its alias lists. Any other spelling goes to
/// [`table_alias`]; a unit test keeps the two in agreement.
fn common_alias(name: &[u8]) -> Option<DigestId> {
    Some(match name {
        b"SHA2-256" | b"SHA256" | b"SHA-256" => DigestId::Sha256,
        b"SHA2-384" | b"SHA384" | b"SHA-384" => DigestId::Sha384,
        b"SHA2-512" | b"SHA512" | b"SHA-512" => DigestId::Sha512,
        b"SHA2-224" | b"SHA224" | b"SHA-224" => DigestId::Sha224,
        b"SHA1" | b"SHA-1" => DigestId::Sha1,
        _ => return None,
    })
}

/// A digest of DIGESTS by one of its aliases, in any case.
#[inline(never)]
fn table_alias(name: &[u8]) -> Option<DigestId> {
    DIGESTS
        .iter()
        .find(|d| {
            d.aliases
                .iter()
                .any(|a| a.as_bytes().eq_ignore_ascii_case(name))
        })
        .map(|d| d.id)
}

/// The error of a digest name rustica does not sign with.
#[cold]
#[inline(never)]
fn unknown_digest(name: &str) -> Error {
    Error::new(
        Reason::UnsupportedDigest,
        format!(
            "digest '{name}' is not supported for RSA signatures, or no loaded provider \
             offers it (the default provider's list: MD5, MD5-SHA1, SHA-1, SHA-2, SHA-3, \
             RIPEMD-160, SM3, and MD2, MD4, MDC2 from the legacy provider)"
        ),
    )
}

/// The error of a known digest that no loaded provider offers.
#[cold]
#[inline(never)]
fn unavailable(id: DigestId) -> Error {
    Error::new(
        Reason::UnsupportedDigest,
        format!(
            "digest {} is not available from any loaded provider",
            id.info().name.to_string_lossy()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-constant fast path names exactly what the alias table
    /// does for each of its spellings, in upper and lower case.
    #[test]
    fn common_aliases_agree_with_the_table() {
        let mut matched = 0;
        for d in &DIGESTS {
            for a in d.aliases {
                if let Some(id) = common_alias(a.as_bytes()) {
                    assert_eq!(id, d.id, "{a}");
                    matched += 1;
                }
                assert_eq!(table_alias(a.as_bytes()), Some(d.id), "{a}");
                let lower = a.to_ascii_lowercase();
                assert_eq!(table_alias(lower.as_bytes()), Some(d.id), "{lower}");
            }
        }
        assert_eq!(matched, 14);
        for name in ["SHA2-256", "SHA256", "SHA-256", "SHA1", "SHA-1", "SHA2-512"] {
            assert_eq!(common_alias(name.as_bytes()), table_alias(name.as_bytes()));
        }
    }
}
