//! Signature encodings: PKCS#1 v1.5 type 1 (EMSA-PKCS1-v1_5) and PSS
//! (EMSA-PSS with MGF1), as RFC 8017 defines them. These work on public
//! data (what is signed, or a recovered encoding), so they need not be
//! constant-time; decryption padding lives elsewhere.

use crate::digest::{DigestCache, DigestId};
use crate::error::{fail, Reason, Result};

/// EM = 00 01 FF..FF 00 || t, `k` bytes, at least 8 bytes of FF.
pub fn pkcs1_type1_encode(t: &[u8], k: usize) -> Result<Vec<u8>> {
    if t.len() + 11 > k {
        return fail(
            Reason::BadLength,
            format!(
                "{} bytes to sign do not fit PKCS#1 v1.5 padding for a {}-byte modulus (at most {})",
                t.len(),
                k,
                k.saturating_sub(11)
            ),
        );
    }
    let mut em = vec![0xffu8; k];
    em[0] = 0;
    em[1] = 1;
    em[k - t.len() - 1] = 0;
    em[k - t.len()..].copy_from_slice(t);
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

pub fn mgf1(digests: &DigestCache, md: DigestId, seed: &[u8], len: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(len + md.size());
    let mut counter: u32 = 0;
    let mut input = seed.to_vec();
    input.extend_from_slice(&[0; 4]);
    while out.len() < len {
        let at = input.len() - 4;
        input[at..].copy_from_slice(&counter.to_be_bytes());
        out.extend(digests.digest(md, &input)?);
        counter += 1;
    }
    out.truncate(len);
    Ok(out)
}

/// Salt length conventions of OpenSSL's `saltlen` parameter.
pub const SALT_DIGEST: i32 = -1;
pub const SALT_AUTO: i32 = -2;
pub const SALT_MAX: i32 = -3;

pub struct Pss<'a> {
    pub digests: &'a DigestCache,
    pub md: DigestId,
    pub mgf1: DigestId,
    /// Bits of the modulus.
    pub mod_bits: usize,
}

impl Pss<'_> {
    fn em_bits(&self) -> usize {
        self.mod_bits - 1
    }
    fn em_len(&self) -> usize {
        self.em_bits().div_ceil(8)
    }

    /// The largest salt this key and digest allow.
    pub fn max_salt(&self) -> Option<usize> {
        self.em_len().checked_sub(self.md.size() + 2)
    }

    /// The salt length a signature will use for OpenSSL's `saltlen` value.
    pub fn signing_salt_len(&self, saltlen: i32) -> Result<usize> {
        let max = self.max_salt();
        let wanted = match saltlen {
            SALT_DIGEST => Some(self.md.size()),
            SALT_AUTO | SALT_MAX => max,
            n if n >= 0 => Some(n as usize),
            n => {
                return fail(
                    Reason::InvalidParameter,
                    format!("PSS salt length {n} is not valid"),
                )
            }
        };
        match (wanted, max) {
            (Some(s), Some(m)) if s <= m => Ok(s),
            (s, _) => fail(
                Reason::InvalidParameter,
                format!(
                    "PSS salt length {} is too large for a {}-bit key with {} (at most {})",
                    s.map_or_else(|| "max".into(), |v| v.to_string()),
                    self.mod_bits,
                    self.md.info().name.to_string_lossy(),
                    max.map_or_else(|| "none fits".into(), |v| v.to_string())
                ),
            ),
        }
    }

    fn h_of(&self, mhash: &[u8], salt: &[u8]) -> Result<Vec<u8>> {
        let mut m = vec![0u8; 8];
        m.extend_from_slice(mhash);
        m.extend_from_slice(salt);
        self.digests.digest(self.md, &m)
    }

    /// EMSA-PSS-ENCODE, left-padded to `k` bytes.
    pub fn encode(&self, mhash: &[u8], salt: &[u8], k: usize) -> Result<Vec<u8>> {
        let (em_len, h_len) = (self.em_len(), self.md.size());
        if mhash.len() != h_len || em_len < h_len + salt.len() + 2 {
            return fail(
                Reason::BadLength,
                "message hash or salt does not fit the PSS encoding",
            );
        }
        let h = self.h_of(mhash, salt)?;
        let db_len = em_len - h_len - 1;
        let mut db = vec![0u8; db_len];
        db[db_len - salt.len() - 1] = 1;
        db[db_len - salt.len()..].copy_from_slice(salt);
        let mask = mgf1(self.digests, self.mgf1, &h, db_len)?;
        db.iter_mut().zip(&mask).for_each(|(d, m)| *d ^= m);
        db[0] &= 0xff >> (8 * em_len - self.em_bits());
        let mut em = vec![0u8; k - em_len];
        em.extend(db);
        em.extend(h);
        em.push(0xbc);
        Ok(em)
    }

    /// EMSA-PSS-VERIFY over the `k`-byte result of the public operation.
    /// `saltlen` is OpenSSL's value; SALT_AUTO recovers the salt length.
    pub fn verify(&self, mhash: &[u8], em_full: &[u8], saltlen: i32) -> Result<bool> {
        let (em_len, h_len) = (self.em_len(), self.md.size());
        if mhash.len() != h_len || em_full.len() < em_len {
            return Ok(false);
        }
        let (lead, em) = em_full.split_at(em_full.len() - em_len);
        if lead.iter().any(|&b| b != 0) || em_len < h_len + 2 || em[em_len - 1] != 0xbc {
            return Ok(false);
        }
        let db_len = em_len - h_len - 1;
        let (masked_db, rest) = em.split_at(db_len);
        let h = &rest[..h_len];
        let unused_bits = 8 * em_len - self.em_bits();
        if unused_bits > 0 && masked_db[0] >> (8 - unused_bits) != 0 {
            return Ok(false);
        }
        let mask = mgf1(self.digests, self.mgf1, h, db_len)?;
        let mut db: Vec<u8> = masked_db.iter().zip(&mask).map(|(d, m)| d ^ m).collect();
        db[0] &= 0xff >> unused_bits;
        let Some(one) = db.iter().position(|&b| b != 0) else {
            return Ok(false);
        };
        if db[one] != 1 {
            return Ok(false);
        }
        let salt = &db[one + 1..];
        let expected = match saltlen {
            SALT_AUTO => None,
            SALT_DIGEST => Some(h_len),
            SALT_MAX => self.max_salt(),
            n if n >= 0 => Some(n as usize),
            _ => return Ok(false),
        };
        if expected.is_some_and(|s| s != salt.len()) {
            return Ok(false);
        }
        Ok(self.h_of(mhash, salt)? == h)
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
        let mut em = pkcs1_type1_encode(b"abc", 64).unwrap();
        em[1] = 2;
        assert_eq!(pkcs1_type1_decode(&em), None);
        let mut em = vec![0u8, 1, 0xff, 0xff, 0];
        em.extend([1u8; 20]);
        assert_eq!(pkcs1_type1_decode(&em), None);
    }
}
