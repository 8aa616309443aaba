//! Key and operand conversion to libica's buffers: big-endian, right-aligned
//! (left-padded with zeros) to the lengths libica documents.

use std::os::raw::c_uint;

use zeroize::Zeroizing;

use super::abi::{ica_rsa_key_crt_t, ica_rsa_key_mod_expo_t};
use crate::bn::Bn;
use crate::secret::SecretBytes;

/// Length of the `p`, `dp` and `qInverse` buffers for a `key_length`-byte
/// modulus.
pub(crate) fn crt_long_len(key_length: usize) -> usize {
    key_length / 2 + 8
}

/// Length of the `q` and `dq` buffers.
pub(crate) fn crt_short_len(key_length: usize) -> usize {
    key_length / 2
}

/// `v` right-aligned in `len` bytes; `None` when it does not fit.
pub(crate) fn right_aligned(v: &Bn, len: usize) -> Option<Zeroizing<Vec<u8>>> {
    if v.num_bytes() > len {
        return None;
    }
    v.to_be_padded(len).ok()
}

/// Secret `v` right-aligned in `len` bytes of secret memory; `None` when it
/// does not fit.
pub(crate) fn right_aligned_secret(v: &Bn, len: usize) -> Option<SecretBytes> {
    if v.num_bytes() > len {
        return None;
    }
    let mut out = SecretBytes::zeroed(len);
    v.write_be_padded(&mut out).ok()?;
    Some(out)
}

/// Big-endian bytes (any length) right-aligned in `len` bytes.
#[cfg(test)]
fn right_aligned_bytes(v: &[u8], len: usize) -> Option<Zeroizing<Vec<u8>>> {
    let start = v.iter().position(|&b| b != 0).unwrap_or(v.len());
    let v = &v[start..];
    if v.len() > len {
        return None;
    }
    let mut out = Zeroizing::new(vec![0u8; len]);
    out[len - v.len()..].copy_from_slice(v);
    Some(out)
}

/// A key in modulus/exponent form, in buffers owned by this value.
#[derive(Clone)]
pub(crate) struct ModExpoKey {
    key_length: usize,
    modulus: Modulus,
    exponent: SecretBytes,
}

/// A key's public modulus, or a secret one: a prime candidate of key
/// generation, the secret that becomes p or q.
#[derive(Clone)]
enum Modulus {
    Public(Zeroizing<Vec<u8>>),
    Secret(SecretBytes),
}

impl Modulus {
    fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            Modulus::Public(v) => v.as_mut_ptr(),
            Modulus::Secret(v) => v.as_mut_ptr(),
        }
    }
}

impl ModExpoKey {
    /// `None` when a part does not fit `key_length` bytes.
    pub(crate) fn new(key_length: usize, n: &Bn, exponent: &Bn) -> Option<ModExpoKey> {
        Some(ModExpoKey {
            key_length,
            modulus: Modulus::Public(right_aligned(n, key_length)?),
            exponent: right_aligned_secret(exponent, key_length)?,
        })
    }

    /// A Miller-Rabin round's key: the prime candidate as modulus, kept in
    /// secret memory as its exponent is (the secure heap when the
    /// application set one up), as the default provider keeps its
    /// candidates in secure BIGNUMs.
    pub(crate) fn for_candidate(key_length: usize, w: &Bn, m: &Bn) -> Option<ModExpoKey> {
        Some(ModExpoKey {
            key_length,
            modulus: Modulus::Secret(right_aligned_secret(w, key_length)?),
            exponent: right_aligned_secret(m, key_length)?,
        })
    }

    /// Whether the modulus lives in the secure heap; for tests.
    #[cfg(test)]
    pub(crate) fn modulus_is_secure(&self) -> bool {
        matches!(&self.modulus, Modulus::Secret(s) if s.is_secure())
    }

    #[cfg(test)]
    fn exponent_mut(&mut self) -> &mut [u8] {
        &mut self.exponent
    }

    #[cfg(test)]
    fn modulus(&self) -> &[u8] {
        match &self.modulus {
            Modulus::Public(v) => v,
            Modulus::Secret(v) => v,
        }
    }

    /// The C struct pointing into this value's buffers; valid while `self`
    /// is neither moved nor dropped.
    pub(crate) fn as_ica(&mut self) -> ica_rsa_key_mod_expo_t {
        ica_rsa_key_mod_expo_t {
            key_length: self.key_length as c_uint,
            modulus: self.modulus.as_mut_ptr(),
            exponent: self.exponent.as_mut_ptr(),
        }
    }
}

/// A private key in CRT form, in buffers owned by this value (p > q).
#[derive(Clone)]
pub(crate) struct CrtKey {
    key_length: usize,
    pub(crate) p: SecretBytes,
    pub(crate) q: SecretBytes,
    pub(crate) dp: SecretBytes,
    pub(crate) dq: SecretBytes,
    pub(crate) qinv: SecretBytes,
}

impl CrtKey {
    /// `None` when a part does not fit its buffer (possible for moduli of
    /// an odd number of bytes, whose primes differ in size).
    pub(crate) fn new(
        key_length: usize,
        p: &Bn,
        q: &Bn,
        dp: &Bn,
        dq: &Bn,
        qinv: &Bn,
    ) -> Option<CrtKey> {
        let long = crt_long_len(key_length);
        let short = crt_short_len(key_length);
        Some(CrtKey {
            key_length,
            p: right_aligned_secret(p, long)?,
            q: right_aligned_secret(q, short)?,
            dp: right_aligned_secret(dp, long)?,
            dq: right_aligned_secret(dq, short)?,
            qinv: right_aligned_secret(qinv, long)?,
        })
    }

    /// The C struct pointing into this value's buffers; valid while `self`
    /// is neither moved nor dropped.
    pub(crate) fn as_ica(&mut self) -> ica_rsa_key_crt_t {
        ica_rsa_key_crt_t {
            key_length: self.key_length as c_uint,
            p: self.p.as_mut_ptr(),
            q: self.q.as_mut_ptr(),
            dp: self.dp.as_mut_ptr(),
            dq: self.dq.as_mut_ptr(),
            q_inverse: self.qinv.as_mut_ptr(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bn(v: &[u8]) -> Bn {
        Bn::from_be(v).unwrap()
    }

    #[test]
    fn right_alignment() {
        let v = right_aligned(&bn(&[0, 0, 1, 2]), 5).unwrap();
        assert_eq!(&v[..], &[0, 0, 0, 1, 2]);
        assert!(right_aligned(&bn(&[1, 2, 3]), 2).is_none());
        let v = right_aligned_bytes(&[0, 0, 1, 0, 1], 4).unwrap();
        assert_eq!(&v[..], &[0, 1, 0, 1]);
        assert!(right_aligned_bytes(&[1, 0, 0, 0, 1], 4).is_none());
        assert_eq!(&right_aligned_bytes(&[], 2).unwrap()[..], &[0, 0]);
    }

    #[test]
    fn crt_buffer_lengths() {
        // A 2048-bit key: 256-byte modulus, 128-byte primes.
        let p = bn(&[0xff; 128]);
        let q = bn(&[0xfe; 128]);
        let mut k = CrtKey::new(256, &p, &q, &p, &q, &q).unwrap();
        assert_eq!(k.p.len(), 136);
        assert_eq!(k.dp.len(), 136);
        assert_eq!(k.qinv.len(), 136);
        assert_eq!(k.q.len(), 128);
        assert_eq!(k.dq.len(), 128);
        assert_eq!(&k.p[..8], &[0; 8]);
        assert_eq!(k.p[8], 0xff);
        assert_eq!(k.q[0], 0xfe);
        let c = k.as_ica();
        assert_eq!(c.key_length, 256);
        assert_eq!(c.p, k.p.as_mut_ptr());
        // A q one byte longer than key_length / 2 does not fit.
        let big_q = bn(&[0x01; 129]);
        assert!(CrtKey::new(256, &p, &big_q, &p, &q, &q).is_none());
    }

    #[test]
    fn mod_expo_buffers() {
        let mut k = ModExpoKey::new(8, &bn(&[0xc5, 0x01]), &bn(&[1, 0, 1])).unwrap();
        assert_eq!(k.modulus(), &[0, 0, 0, 0, 0, 0, 0xc5, 0x01]);
        assert_eq!(k.exponent_mut(), &[0, 0, 0, 0, 0, 1, 0, 1]);
        assert_eq!(k.as_ica().key_length, 8);
    }
}
