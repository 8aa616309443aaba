//! Signature encodings: PKCS#1 v1.5 type 1 (EMSA-PKCS1-v1_5) and PSS
//! (EMSA-PSS with MGF1), as RFC 8017 defines them. These work on public
//! data (what is signed, or a recovered encoding), so they need not be
//! constant-time; decryption padding lives elsewhere.

use std::ops::Deref;

use zeroize::Zeroizing;

use crate::digest::{DigestCache, DigestId, Hasher, MAX_DIGEST_LEN};
use crate::error::{fail, Reason, Result};

/// EM = 00 01 FF..FF 00 || t, `k` bytes, at least 8 bytes of FF.
pub fn pkcs1_type1_encode(t: &[u8], k: usize) -> Result<Vec<u8>> {
    pkcs1_type1_encode_parts(&[t], k)
}

/// [`pkcs1_type1_encode`] of `t` given as consecutive parts (a DigestInfo
/// prefix and the hash), written straight into the one `k`-byte buffer.
pub fn pkcs1_type1_encode_parts(parts: &[&[u8]], k: usize) -> Result<Vec<u8>> {
    let t_len: usize = parts.iter().map(|p| p.len()).sum();
    if t_len + 11 > k {
        return fail(
            Reason::BadLength,
            format!(
                "{} bytes to sign do not fit PKCS#1 v1.5 padding for a {}-byte modulus (at most {})",
                t_len,
                k,
                k.saturating_sub(11)
            ),
        );
    }
    let mut em = vec![0xffu8; k];
    em[0] = 0;
    em[1] = 1;
    em[k - t_len - 1] = 0;
    let mut at = k - t_len;
    for part in parts {
        em[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    }
    Ok(em)
}

/// Recovers `t` from a type 1 encoding; None when the encoding is malformed.
pub fn pkcs1_type1_decode(em: &[u8]) -> Option<&[u8]> {
    if em.len() < 11 || em[0] != 0 || em[1] != 1 {
        return None;
    }
    let rest = &em[2..];
    let ff = rest.iter().take_while(|&&b| b == 0xff).count();
    if ff < 8 || ff >= rest.len() || rest[ff] != 0 {
        return None;
    }
    Some(&rest[ff + 1..])
}

/// An MGF1 output. It is a keystream over secret data (the OAEP seed and
/// message), so it is wiped when dropped. It reads as a byte slice.
pub struct Mask(Zeroizing<Vec<u8>>);

impl Deref for Mask {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl<'a> IntoIterator for &'a Mask {
    type Item = &'a u8;
    type IntoIter = std::slice::Iter<'a, u8>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// MGF1 (RFC 8017 B.2.1): `len` bytes of Hash(seed || counter) blocks.
/// Every buffer that holds the seed or mask bytes is wiped on drop, and
/// sized up front so no reallocation leaves an unwiped copy behind.
pub fn mgf1(digests: &DigestCache, md: DigestId, seed: &[u8], len: usize) -> Result<Mask> {
    let h_len = md.size();
    let blocks = len.div_ceil(h_len.max(1));
    // RFC 8017 caps the mask at 2^32 blocks (the counter is 32 bits).
    let capacity = match (h_len, u32::try_from(blocks.saturating_sub(1))) {
        (0, _) | (_, Err(_)) => None,
        (_, Ok(_)) => blocks.checked_mul(h_len),
    };
    let Some(capacity) = capacity else {
        return fail(
            Reason::BadLength,
            format!("an MGF1 mask of {len} bytes with a {h_len}-byte digest is too long"),
        );
    };
    let mut out = Zeroizing::new(Vec::with_capacity(capacity));
    // One digest context for every block; each block's digest lands in a
    // wiped stack buffer.
    let mut hasher = Hasher::new(digests, md)?;
    let mut block = Zeroizing::new([0u8; MAX_DIGEST_LEN]);
    for counter in 0..blocks {
        // Fits: blocks - 1 was checked against u32 above.
        let counter = counter as u32;
        hasher.restart()?;
        hasher.update(seed)?;
        hasher.update(&counter.to_be_bytes())?;
        let got = hasher.finish_into(&mut block)?;
        out.extend_from_slice(&block[..got]);
    }
    out.truncate(len);
    Ok(Mask(out))
}

/// A digest in a stack buffer (PSS's H is public: the signature carries it).
struct HashOut {
    bytes: [u8; MAX_DIGEST_LEN],
    len: usize,
}

impl Deref for HashOut {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Salt length conventions of OpenSSL's `saltlen` parameter.
pub const SALT_DIGEST: i32 = -1;
pub const SALT_AUTO: i32 = -2;
pub const SALT_MAX: i32 = -3;
/// OpenSSL 3.1+: the largest salt up to the digest length when signing
/// (FIPS 186-4), any salt when verifying; the default from 3.1 on.
pub const SALT_AUTO_DIGEST_MAX: i32 = -4;

/// EMSA-PSS for one key size and digest pair. `Pss::new` refuses every
/// size for which no encoding exists, so the length arithmetic below
/// cannot underflow.
pub struct Pss<'a> {
    digests: &'a DigestCache,
    md: DigestId,
    mgf1: DigestId,
    /// Bits of the modulus.
    mod_bits: usize,
    /// emBits = modBits - 1 (RFC 8017 8.1.1).
    em_bits: usize,
    /// emLen = ceil(emBits / 8); at least hLen + 2.
    em_len: usize,
    /// Bytes of the modulus, k >= emLen.
    k: usize,
}

impl<'a> Pss<'a> {
    /// Refuses a modulus with no room for EM = maskedDB || H || 0xbc with
    /// DB = PS || 0x01 (an empty salt): emLen < hLen + 2.
    pub fn new(
        digests: &'a DigestCache,
        md: DigestId,
        mgf1: DigestId,
        mod_bits: usize,
    ) -> Result<Pss<'a>> {
        let h_len = md.size();
        let Some(em_bits) = mod_bits.checked_sub(1) else {
            return fail(
                Reason::InvalidKey,
                "PSS needs a modulus of at least 1 bit, got 0",
            );
        };
        let em_len = em_bits.div_ceil(8);
        if em_len < h_len + 2 {
            return fail(
                Reason::InvalidKey,
                format!(
                    "a {mod_bits}-bit modulus is too small for PSS with {} (needs at least {} bits)",
                    md.info().name.to_string_lossy(),
                    Self::min_mod_bits(md)
                ),
            );
        }
        Ok(Pss {
            digests,
            md,
            mgf1,
            mod_bits,
            em_bits,
            em_len,
            k: mod_bits.div_ceil(8),
        })
    }

    /// The smallest modulus PSS with `md` fits: emLen = hLen + 2 needs
    /// emBits > 8 * (hLen + 1).
    pub fn min_mod_bits(md: DigestId) -> usize {
        8 * (md.size() + 1) + 2
    }

    pub fn md(&self) -> DigestId {
        self.md
    }

    pub fn mgf1(&self) -> DigestId {
        self.mgf1
    }

    /// The largest salt this key and digest allow.
    pub fn max_salt(&self) -> usize {
        self.em_len - self.md.size() - 2
    }

    /// The salt length a signature will use for OpenSSL's `saltlen` value.
    pub fn signing_salt_len(&self, saltlen: i32) -> Result<usize> {
        let max = self.max_salt();
        let wanted = match saltlen {
            SALT_DIGEST => self.md.size(),
            SALT_AUTO | SALT_MAX => max,
            SALT_AUTO_DIGEST_MAX => max.min(self.md.size()),
            n => match usize::try_from(n) {
                Ok(n) => n,
                Err(_) => {
                    return fail(
                        Reason::InvalidParameter,
                        format!("PSS salt length {n} is not valid"),
                    )
                }
            },
        };
        if wanted > max {
            return fail(
                Reason::InvalidParameter,
                format!(
                    "PSS salt length {wanted} is too large for a {}-bit key with {} (at most {max})",
                    self.mod_bits,
                    self.md.info().name.to_string_lossy(),
                ),
            );
        }
        Ok(wanted)
    }

    /// H = Hash(00 x 8 || mHash || salt).
    /// Hashed piece by piece: M' itself is never assembled.
    fn h_of(&self, mhash: &[u8], salt: &[u8]) -> Result<HashOut> {
        let mut hasher = Hasher::new(self.digests, self.md)?;
        hasher.update(&[0u8; 8])?;
        hasher.update(mhash)?;
        hasher.update(salt)?;
        let mut out = HashOut {
            bytes: [0; MAX_DIGEST_LEN],
            len: 0,
        };
        out.len = hasher.finish_into(&mut out.bytes)?;
        Ok(out)
    }

    /// Bits of EM's first byte above emBits, which must be zero.
    fn unused_bits(&self) -> usize {
        8 * self.em_len - self.em_bits
    }

    /// EMSA-PSS-ENCODE, left-padded to the modulus size.
    pub fn encode(&self, mhash: &[u8], salt: &[u8]) -> Result<Vec<u8>> {
        let (em_len, h_len) = (self.em_len, self.md.size());
        if mhash.len() != h_len || salt.len() > self.max_salt() {
            return fail(
                Reason::BadLength,
                format!(
                    "a {}-byte message hash and {}-byte salt do not fit PSS for a {}-bit key with {}",
                    mhash.len(),
                    salt.len(),
                    self.mod_bits,
                    self.md.info().name.to_string_lossy()
                ),
            );
        }
        let h = self.h_of(mhash, salt)?;
        let db_len = em_len - h_len - 1;
        // maskedDB = (PS || 01 || salt) xor mask, made in the mask's own
        // wiped buffer (PS is zeros: those mask bytes stay as they are).
        let Mask(mut masked_db) = mgf1(self.digests, self.mgf1, &h, db_len)?;
        masked_db[db_len - salt.len() - 1] ^= 1;
        masked_db[db_len - salt.len()..]
            .iter_mut()
            .zip(salt)
            .for_each(|(m, s)| *m ^= s);
        masked_db[0] &= 0xff >> self.unused_bits();
        let mut em = vec![0u8; self.k];
        let at = self.k - em_len;
        em[at..at + db_len].copy_from_slice(&masked_db);
        em[at + db_len..at + db_len + h_len].copy_from_slice(&h);
        em[self.k - 1] = 0xbc;
        Ok(em)
    }

    /// EMSA-PSS-VERIFY over the result of the public operation (any length;
    /// bytes in front of EM must be zero). `saltlen` is OpenSSL's value;
    /// SALT_AUTO recovers the salt length.
    pub fn verify(&self, mhash: &[u8], em_full: &[u8], saltlen: i32) -> Result<bool> {
        Ok(self.verify_salt(mhash, em_full, saltlen)?.is_some())
    }

    /// [`Pss::verify`], returning the length of the salt of a valid
    /// encoding (what SALT_AUTO recovers), `None` for an invalid one.
    pub fn verify_salt(&self, mhash: &[u8], em_full: &[u8], saltlen: i32) -> Result<Option<usize>> {
        let (em_len, h_len) = (self.em_len, self.md.size());
        let no = Ok(None);
        if mhash.len() != h_len || em_full.len() < em_len {
            return no;
        }
        let (lead, em) = em_full.split_at(em_full.len() - em_len);
        if lead.iter().any(|&b| b != 0) || em[em_len - 1] != 0xbc {
            return no;
        }
        let db_len = em_len - h_len - 1;
        let (masked_db, rest) = em.split_at(db_len);
        let h = &rest[..h_len];
        let unused_bits = self.unused_bits();
        if unused_bits > 0 && masked_db[0] >> (8 - unused_bits) != 0 {
            return no;
        }
        // DB = maskedDB xor mask, computed in the mask's own wiped buffer.
        let Mask(mut db) = mgf1(self.digests, self.mgf1, h, db_len)?;
        db.iter_mut().zip(masked_db).for_each(|(m, d)| *m ^= d);
        db[0] &= 0xff >> unused_bits;
        let Some(one) = db.iter().position(|&b| b != 0) else {
            return no;
        };
        if db[one] != 1 {
            return no;
        }
        let salt = &db[one + 1..];
        let expected = match saltlen {
            SALT_AUTO | SALT_AUTO_DIGEST_MAX => None,
            SALT_DIGEST => Some(h_len),
            SALT_MAX => Some(self.max_salt()),
            n => match usize::try_from(n) {
                Ok(n) => Some(n),
                Err(_) => return no,
            },
        };
        if expected.is_some_and(|s| s != salt.len()) {
            return no;
        }
        Ok((*self.h_of(mhash, salt)? == *h).then_some(salt.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type1_round_trip() {
        let em = pkcs1_type1_encode(b"abc", 64).unwrap();
        assert_eq!(em.len(), 64);
        assert_eq!(&em[..3], &[0, 1, 0xff]);
        assert_eq!(pkcs1_type1_decode(&em), Some(&b"abc"[..]));
    }

    #[test]
    fn type1_rejects_short_padding_and_bad_markers() {
        assert!(pkcs1_type1_encode(&[0u8; 54], 64).is_err());
        assert_eq!(
            pkcs1_type1_encode_parts(&[b"a", b"", b"bc"], 64).unwrap(),
            pkcs1_type1_encode(b"abc", 64).unwrap()
        );
        assert!(pkcs1_type1_encode_parts(&[&[0u8; 50], &[0u8; 4]], 64).is_err());
        let mut em = pkcs1_type1_encode(b"abc", 64).unwrap();
        em[1] = 2;
        assert_eq!(pkcs1_type1_decode(&em), None);
        let mut em = vec![0u8, 1, 0xff, 0xff, 0];
        em.extend([1u8; 20]);
        assert_eq!(pkcs1_type1_decode(&em), None);
    }

    fn cache() -> &'static DigestCache {
        static CACHE: std::sync::OnceLock<DigestCache> = std::sync::OnceLock::new();
        CACHE.get_or_init(|| DigestCache::new(std::ptr::null_mut()))
    }

    /// Every digest rustica knows that a provider of this process offers
    /// (MD2, MD4 and MDC2 need the legacy provider).
    fn all_digests() -> impl Iterator<Item = DigestId> {
        crate::digest::DIGESTS
            .iter()
            .map(|d| d.id)
            .filter(|&id| cache().md(id).is_ok())
    }

    fn refused_reason(md: DigestId, mod_bits: usize) -> Reason {
        match Pss::new(cache(), md, md, mod_bits) {
            Ok(_) => panic!("a {mod_bits}-bit modulus with {md:?} was accepted"),
            Err(e) => e.reason,
        }
    }

    #[test]
    fn pss_refuses_a_zero_bit_modulus() {
        // The sig_padding fuzz reproducer `0a 0a`: SHA3-512, mod_bits 0,
        // used to underflow in emBits = modBits - 1.
        assert_eq!(refused_reason(DigestId::Sha3_512, 0), Reason::InvalidKey);
        assert_eq!(refused_reason(DigestId::Sha1, 0), Reason::InvalidKey);
    }

    #[test]
    fn pss_refuses_a_one_bit_modulus() {
        // emBits = 0, so emLen = 0: not even the 0xbc trailer fits.
        for md in all_digests() {
            assert_eq!(refused_reason(md, 1), Reason::InvalidKey);
        }
    }

    #[test]
    fn pss_refuses_a_modulus_one_bit_below_the_digest_minimum() {
        for md in all_digests() {
            let min = Pss::min_mod_bits(md);
            assert_eq!(refused_reason(md, min - 1), Reason::InvalidKey, "{md:?}");
            // Every smaller size as well (no wrap makes one fit again).
            for bits in 0..min {
                assert!(Pss::new(cache(), md, md, bits).is_err(), "{md:?} {bits}");
            }
        }
    }

    #[test]
    fn pss_at_the_digest_minimum_fits_only_an_empty_salt() {
        for md in all_digests() {
            let bits = Pss::min_mod_bits(md);
            let pss = Pss::new(cache(), md, DigestId::Sha1, bits).unwrap();
            assert_eq!(pss.max_salt(), 0, "{md:?}");
            let mhash = vec![0x5a; md.size()];
            let em = pss.encode(&mhash, &[]).unwrap();
            assert_eq!(em.len(), bits.div_ceil(8));
            assert!(pss.verify(&mhash, &em, 0).unwrap());
            assert!(pss.verify(&mhash, &em, SALT_AUTO).unwrap());
            assert_eq!(pss.signing_salt_len(SALT_MAX).unwrap(), 0);
            // auto-digestmax caps at the room there is, here none.
            assert_eq!(pss.signing_salt_len(SALT_AUTO_DIGEST_MAX).unwrap(), 0);
            assert!(pss.verify(&mhash, &em, SALT_AUTO_DIGEST_MAX).unwrap());
            // SALT_DIGEST wants hLen bytes of salt: refused, not truncated.
            let e = pss.signing_salt_len(SALT_DIGEST).unwrap_err();
            assert_eq!(e.reason, Reason::InvalidParameter);
            assert_eq!(
                pss.encode(&mhash, &[1]).unwrap_err().reason,
                Reason::BadLength
            );
        }
    }

    #[test]
    fn pss_refuses_salts_longer_than_the_key_allows() {
        let pss = Pss::new(cache(), DigestId::Sha256, DigestId::Sha256, 1024).unwrap();
        // emLen 128 - hLen 32 - 2.
        assert_eq!(pss.max_salt(), 94);
        assert_eq!(pss.signing_salt_len(94).unwrap(), 94);
        for saltlen in [95, i32::MAX] {
            let e = pss.signing_salt_len(saltlen).unwrap_err();
            assert_eq!(e.reason, Reason::InvalidParameter);
        }
        // auto-digestmax: the digest length when it fits.
        assert_eq!(pss.signing_salt_len(SALT_AUTO_DIGEST_MAX).unwrap(), 32);
        for saltlen in [-5, i32::MIN] {
            let e = pss.signing_salt_len(saltlen).unwrap_err();
            assert_eq!(e.reason, Reason::InvalidParameter);
        }
        let mhash = [7u8; 32];
        let e = pss.encode(&mhash, &[0u8; 95]).unwrap_err();
        assert_eq!(e.reason, Reason::BadLength);
        let e = pss.encode(&mhash[..31], &[]).unwrap_err();
        assert_eq!(e.reason, Reason::BadLength);
    }

    #[test]
    fn pss_verify_refuses_short_or_padded_encodings_without_panicking() {
        // 1025 bits: emBits 1024 is a whole number of bytes, so EM is one
        // byte shorter than the modulus and that byte must be zero.
        let pss = Pss::new(cache(), DigestId::Sha256, DigestId::Sha256, 1025).unwrap();
        let mhash = [3u8; 32];
        let em = pss.encode(&mhash, &[9u8; 20]).unwrap();
        assert_eq!(em.len(), 129);
        assert_eq!(em[0], 0);
        assert!(pss.verify(&mhash, &em, 20).unwrap());
        assert_eq!(pss.verify_salt(&mhash, &em, SALT_AUTO).unwrap(), Some(20));
        assert_eq!(pss.verify_salt(&mhash, &em, 21).unwrap(), None);
        assert!(pss.verify(&mhash, &em[1..], 20).unwrap());
        assert!(!pss.verify(&mhash, &em[2..], 20).unwrap());
        assert!(!pss.verify(&mhash, &[], SALT_AUTO).unwrap());
        let mut lead = em.clone();
        lead[0] = 1;
        assert!(!pss.verify(&mhash, &lead, 20).unwrap());
        assert!(!pss.verify(&mhash, &em, 21).unwrap());
        assert!(!pss.verify(&mhash, &em, -7).unwrap());
        assert!(!pss.verify(&mhash[..31], &em, 20).unwrap());
    }

    #[test]
    fn mgf1_matches_known_answers() {
        assert_eq!(
            &mgf1(cache(), DigestId::Sha1, b"foo", 3).unwrap()[..],
            [0x1a, 0xc9, 0x07]
        );
        let long = mgf1(cache(), DigestId::Sha1, b"bar", 50).unwrap();
        let hex: String = long.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "bc0c655e016bc2931d85a2e675181adcef7f581f76df2739da74faac41627be2\
             f7f415c89e983fd0ce80ced9878641cb4876"
        );
        assert!(mgf1(cache(), DigestId::Sha256, b"x", 0).unwrap().is_empty());
    }

    #[test]
    fn mgf1_refuses_a_mask_longer_than_two_to_the_32_blocks() {
        // Refused before anything is allocated or hashed.
        let h = DigestId::Sha1.size();
        let too_long = (1usize << 32) * h + 1;
        let e = mgf1(cache(), DigestId::Sha1, b"s", too_long).err().unwrap();
        assert_eq!(e.reason, Reason::BadLength);
        let e = mgf1(cache(), DigestId::Sha1, b"s", usize::MAX)
            .err()
            .unwrap();
        assert_eq!(e.reason, Reason::BadLength);
    }
}
