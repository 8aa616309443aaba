//! Encryption paddings: PKCS#1 v1.5 type 2, OAEP (RFC 8017) and the TLS
//! premaster-secret variant. Every decoder is constant-time from the
//! decrypted block to the returned length: no branch or memory access
//! depends on the padding's validity or the message length until the
//! caller's single final decision.

use zeroize::Zeroizing;

use crate::ct;
use crate::digest::{DigestCache, DigestId};
use crate::error::{fail, Reason, Result};
use crate::padding::mgf1;

/// EM = 00 02 PS 00 M with PS nonzero random, `k` bytes.
pub fn pkcs1_type2_encode(
    m: &[u8],
    k: usize,
    random: impl Fn(usize) -> Result<Vec<u8>>,
) -> Result<Vec<u8>> {
    if m.len() + 11 > k {
        return fail(
            Reason::BadLength,
            format!(
                "{} bytes do not fit PKCS#1 v1.5 encryption with a {k}-byte modulus (at most {})",
                m.len(),
                k.saturating_sub(11)
            ),
        );
    }
    let ps_len = k - m.len() - 3;
    let mut ps = Vec::with_capacity(ps_len);
    while ps.len() < ps_len {
        ps.extend(random(ps_len)?.into_iter().filter(|&b| b != 0));
    }
    ps.truncate(ps_len);
    let mut em = vec![0u8, 2];
    em.extend(ps);
    em.push(0);
    em.extend_from_slice(m);
    Ok(em)
}

/// The outcome of a constant-time decode: `good` is a mask; `message`
/// holds the message in its first `len` bytes only when `good` is set.
pub struct Decoded {
    pub good: u32,
    pub len: usize,
    pub message: Zeroizing<Vec<u8>>,
}

/// Constant-time PKCS#1 v1.5 type 2 decoding of a `k`-byte block.
pub fn pkcs1_type2_decode(em: &[u8]) -> Decoded {
    let k = em.len();
    if k < 11 {
        return Decoded {
            good: 0,
            len: 0,
            message: Zeroizing::new(Vec::new()),
        };
    }
    let mut good = ct::is_zero(u32::from(em[0])) & ct::eq(u32::from(em[1]), 2);
    let mut found = 0u32;
    let mut zero_at = 0u32;
    for (i, &b) in em.iter().enumerate().skip(2) {
        let is0 = ct::is_zero(u32::from(b));
        zero_at = ct::select(!found & is0, i as u32, zero_at);
        found |= is0;
    }
    good &= found;
    // At least eight bytes of padding string.
    good &= ct::ge(zero_at, 10);
    let msg_at = zero_at.wrapping_add(1);
    let len = ct::select(good, (k as u32).wrapping_sub(msg_at), 0) as usize;
    // The message can start at index 11 at the earliest.
    let mut message = Zeroizing::new(em[11..].to_vec());
    ct::shift_left(
        &mut message,
        ct::select(good, msg_at.wrapping_sub(11), 0) as usize,
    );
    Decoded { good, len, message }
}

pub struct Oaep<'a> {
    pub digests: &'a DigestCache,
    pub md: DigestId,
    pub mgf1: DigestId,
    pub label: &'a [u8],
}

impl Oaep<'_> {
    fn check_size(&self, k: usize) -> Result<usize> {
        let h = self.md.size();
        if k < 2 * h + 2 {
            return fail(
                Reason::InvalidKey,
                format!("a {k}-byte modulus is too small for OAEP with a {h}-byte digest"),
            );
        }
        Ok(h)
    }

    pub fn encode(
        &self,
        m: &[u8],
        k: usize,
        random: impl Fn(usize) -> Result<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        let h = self.check_size(k)?;
        if m.len() > k - 2 * h - 2 {
            return fail(
                Reason::BadLength,
                format!(
                    "{} bytes do not fit OAEP with a {k}-byte modulus and {} (at most {})",
                    m.len(),
                    self.md.info().name.to_string_lossy(),
                    k - 2 * h - 2
                ),
            );
        }
        let db_len = k - h - 1;
        let mut db = self.digests.digest(self.md, self.label)?;
        db.resize(db_len - m.len() - 1, 0);
        db.push(1);
        db.extend_from_slice(m);
        let seed = random(h)?;
        let db_mask = mgf1(self.digests, self.mgf1, &seed, db_len)?;
        db.iter_mut().zip(&db_mask).for_each(|(d, x)| *d ^= x);
        let seed_mask = mgf1(self.digests, self.mgf1, &db, h)?;
        let mut em = vec![0u8];
        em.extend(seed.iter().zip(&seed_mask).map(|(s, x)| s ^ x));
        em.extend(db);
        Ok(em)
    }

    /// Constant-time EME-OAEP decoding of a `k`-byte block. Errors only for
    /// public reasons (key too small, digest failure).
    pub fn decode(&self, em: &[u8]) -> Result<Decoded> {
        let k = em.len();
        let h = self.check_size(k)?;
        let l_hash = self.digests.digest(self.md, self.label)?;
        let (masked_seed, masked_db) = em[1..].split_at(h);
        let seed_mask = mgf1(self.digests, self.mgf1, masked_db, h)?;
        let seed: Zeroizing<Vec<u8>> = Zeroizing::new(
            masked_seed
                .iter()
                .zip(&seed_mask)
                .map(|(a, b)| a ^ b)
                .collect(),
        );
        let db_mask = mgf1(self.digests, self.mgf1, &seed, masked_db.len())?;
        let db: Zeroizing<Vec<u8>> =
            Zeroizing::new(masked_db.iter().zip(&db_mask).map(|(a, b)| a ^ b).collect());

        let mut good = ct::is_zero(u32::from(em[0]));
        good &= ct::bytes_eq(&db[..h], &l_hash);
        let mut found = 0u32;
        let mut one_at = 0u32;
        for (i, &b) in db.iter().enumerate().skip(h) {
            let is1 = ct::eq(u32::from(b), 1);
            let is0 = ct::is_zero(u32::from(b));
            one_at = ct::select(!found & is1, i as u32, one_at);
            // Before the 01 separator only zero bytes are allowed.
            good &= found | is0 | is1;
            found |= is1;
        }
        good &= found;
        let msg_at = one_at.wrapping_add(1);
        let len = ct::select(good, (db.len() as u32).wrapping_sub(msg_at), 0) as usize;
        let mut message = Zeroizing::new(db[h + 1..].to_vec());
        ct::shift_left(
            &mut message,
            ct::select(good, msg_at.wrapping_sub(h as u32 + 1), 0) as usize,
        );
        Ok(Decoded { good, len, message })
    }
}

pub const TLS_PREMASTER_LEN: usize = 48;

/// The TLS RSA key exchange rule: decode PKCS#1 v1.5 in constant time and
/// return the 48-byte premaster secret when padding, length and version
/// are right, else the caller's random 48 bytes; the two cases are
/// indistinguishable to the caller (RFC 5246, 7.4.7.1).
pub fn tls_premaster(
    em: &[u8],
    client_version: u32,
    alt_version: u32,
    random: &[u8; TLS_PREMASTER_LEN],
) -> Zeroizing<[u8; TLS_PREMASTER_LEN]> {
    // A block too short to hold a padded premaster secret (a public fact:
    // the modulus size) gets the random one.
    if em.len() < TLS_PREMASTER_LEN + 11 {
        return Zeroizing::new(*random);
    }
    let d = pkcs1_type2_decode(em);
    let mut good = d.good & ct::eq(d.len as u32, TLS_PREMASTER_LEN as u32);
    let pms = &em[em.len() - TLS_PREMASTER_LEN..];
    let version_ok =
        |v: u32| ct::eq(u32::from(pms[0]), v >> 8) & ct::eq(u32::from(pms[1]), v & 0xff);
    let mut versions = version_ok(client_version);
    if alt_version != 0 {
        versions |= version_ok(alt_version);
    }
    good &= versions;
    let mut out = Zeroizing::new([0u8; TLS_PREMASTER_LEN]);
    for i in 0..TLS_PREMASTER_LEN {
        out[i] = ct::select_u8(good, pms[i], random[i]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_random(n: usize) -> Result<Vec<u8>> {
        Ok((0..n).map(|i| (i % 7) as u8).collect())
    }

    #[test]
    fn type2_round_trip_and_rejections() {
        for mlen in [0usize, 1, 5, 53] {
            let m: Vec<u8> = (0..mlen as u8).collect();
            let em = pkcs1_type2_encode(&m, 64, fake_random).unwrap();
            assert!(em[2..em.len() - mlen - 1].iter().all(|&b| b != 0));
            let d = pkcs1_type2_decode(&em);
            assert_eq!(d.good, u32::MAX);
            assert_eq!(&d.message[..d.len], &m[..]);
        }
        let mut em = pkcs1_type2_encode(b"abc", 64, fake_random).unwrap();
        em[1] = 1;
        assert_eq!(pkcs1_type2_decode(&em).good, 0);
        // Padding string shorter than eight bytes.
        let mut short = vec![0u8, 2, 1, 1, 1, 0];
        short.extend([9u8; 58]);
        assert_eq!(pkcs1_type2_decode(&short).good, 0);
        // No separator at all.
        let no_sep = [[0u8, 2].as_slice(), &[5u8; 62]].concat();
        assert_eq!(pkcs1_type2_decode(&no_sep).good, 0);
    }

    #[test]
    fn tls_premaster_falls_back_to_random() {
        let mut pms = vec![3u8, 3];
        pms.extend([0xab; 46]);
        let em = pkcs1_type2_encode(&pms, 128, fake_random).unwrap();
        let random = [0x11u8; 48];
        assert_eq!(&tls_premaster(&em, 0x0303, 0, &random)[..], &pms[..]);
        assert_eq!(&tls_premaster(&em, 0x0302, 0, &random)[..], &random[..]);
        assert_eq!(&tls_premaster(&em, 0x0302, 0x0303, &random)[..], &pms[..]);
        let mut bad = em.clone();
        bad[1] = 1;
        assert_eq!(&tls_premaster(&bad, 0x0303, 0, &random)[..], &random[..]);
    }

    #[test]
    fn tls_premaster_of_a_short_block_is_random_not_a_panic() {
        let random = [0x22u8; 48];
        for len in [0usize, 1, 47, 48, 58] {
            assert_eq!(
                &tls_premaster(&vec![0u8; len], 0x0303, 0, &random)[..],
                &random[..]
            );
        }
    }
}
