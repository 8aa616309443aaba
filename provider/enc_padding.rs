//! Encryption paddings: PKCS#1 v1.5 type 2, OAEP (RFC 8017) and the TLS
//! premaster-secret variant. Every decoder is constant-time from the
//! decrypted block to the returned length: no branch or memory access
//! depends on the padding's validity or the message length until the
//! caller's single final decision.

use zeroize::Zeroizing;

use crate::ct;
use std::ptr;

use crate::digest::{DigestCache, DigestId, Hasher, MAX_DIGEST_LEN};
use crate::error::{fail, Reason, Result};
use crate::ffi;

/// MGF1 (RFC 8017, B.2.1) whose output and working buffers are wiped when
/// dropped: in OAEP both masks and the seed they come from are secret.
/// Hashes with `h` (the MGF1 digest's context, restarted per block), so one
/// OAEP operation needs one digest context.
fn mgf1(h: &mut Hasher, seed: &[u8], len: usize) -> Result<Zeroizing<Vec<u8>>> {
    let mut out = Zeroizing::new(Vec::with_capacity(len + h.id().size()));
    // Each block's digest lands in a wiped stack buffer.
    let mut block = Zeroizing::new([0u8; MAX_DIGEST_LEN]);
    let mut counter: u32 = 0;
    while out.len() < len {
        h.restart()?;
        h.update(seed)?;
        h.update(&counter.to_be_bytes())?;
        let got = h.finish_into(&mut block)?;
        out.extend_from_slice(&block[..got]);
        counter += 1;
    }
    out.truncate(len);
    Ok(out)
}

/// EM = 00 02 PS 00 M with PS nonzero random, `k` bytes.
pub fn pkcs1_type2_encode(
    m: &[u8],
    k: usize,
    random: impl Fn(usize) -> Result<Vec<u8>>,
) -> Result<Zeroizing<Vec<u8>>> {
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
    let mut em = Zeroizing::new(Vec::with_capacity(k));
    em.extend_from_slice(&[0, 2]);
    while em.len() < 2 + ps_len {
        let bytes = Zeroizing::new(random(ps_len)?);
        let room = 2 + ps_len - em.len();
        em.extend(bytes.iter().copied().filter(|&b| b != 0).take(room));
    }
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

/// SHA-256 fetched from `libctx` for one operation and freed with it.
/// Deliberately not the provider's digest cache: what an operation fetches
/// it releases itself, so nothing of it is left for provider teardown.
pub struct Sha256(*mut ffi::EVP_MD);

// SAFETY: a fetched EVP_MD is immutable and reference counted by OpenSSL,
// made to be used from any thread (as digest.rs's Md).
unsafe impl Send for Sha256 {}
// SAFETY: as above; nothing here mutates the EVP_MD.
unsafe impl Sync for Sha256 {}

impl Clone for Sha256 {
    /// Another reference to the same digest (a duplicated operation
    /// context releases its own).
    fn clone(&self) -> Self {
        // SAFETY: self.0 is a live EVP_MD this value holds a reference to;
        // up_ref adds the one the copy releases on drop.
        unsafe { ffi::EVP_MD_up_ref(self.0) };
        Sha256(self.0)
    }
}

impl Sha256 {
    /// # Safety
    /// `libctx` must be NULL (the default library context) or a live one.
    pub unsafe fn fetch(libctx: *mut ffi::OSSL_LIB_CTX) -> Result<Sha256> {
        // SAFETY: libctx is valid per the contract above; both strings are
        // NUL-terminated. The query keeps the fetch away from rustica itself.
        let md = unsafe {
            ffi::EVP_MD_fetch(libctx, c"SHA2-256".as_ptr(), c"provider!=rustica".as_ptr())
        };
        if md.is_null() {
            return fail(
                Reason::UnsupportedDigest,
                "SHA-256 (for implicit rejection) is not available from any loaded provider",
            );
        }
        Ok(Sha256(md))
    }

    fn start(&self) -> Result<MdCtx> {
        // SAFETY: plain allocation.
        let ctx = MdCtx(unsafe { ffi::EVP_MD_CTX_new() });
        // SAFETY: ctx (checked non-NULL) is fresh, self.0 a fetched digest.
        if ctx.0.is_null() || unsafe { ffi::EVP_DigestInit_ex2(ctx.0, self.0, ptr::null()) } != 1 {
            return fail(Reason::Internal, "SHA-256 initialisation failed");
        }
        Ok(ctx)
    }

    pub fn digest(&self, data: &[u8]) -> Result<Zeroizing<[u8; SHA256_LEN]>> {
        let mut ctx = self.start()?;
        ctx.update(data)?;
        ctx.finish()
    }
}

impl Drop for Sha256 {
    fn drop(&mut self) {
        // SAFETY: our own reference from EVP_MD_fetch.
        unsafe { ffi::EVP_MD_free(self.0) };
    }
}

/// A running SHA-256; OpenSSL wipes its state when it is freed.
struct MdCtx(*mut ffi::EVP_MD_CTX);

impl MdCtx {
    fn update(&mut self, data: &[u8]) -> Result<()> {
        if !data.is_empty()
            // SAFETY: an initialised context; data valid for its length.
            && unsafe { ffi::EVP_DigestUpdate(self.0, data.as_ptr().cast(), data.len()) } != 1
        {
            return fail(Reason::Internal, "SHA-256 update failed");
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<Zeroizing<[u8; SHA256_LEN]>> {
        let mut out = Zeroizing::new([0u8; SHA256_LEN]);
        let mut len = 0u32;
        // SAFETY: out holds the 32 bytes SHA-256 writes.
        if unsafe { ffi::EVP_DigestFinal_ex(self.0, out.as_mut_ptr(), &mut len) } != 1
            || len as usize != SHA256_LEN
        {
            return fail(Reason::Internal, "SHA-256 finalisation failed");
        }
        Ok(out)
    }

    /// An empty context, to be overwritten by `copy_from`.
    fn empty() -> Result<MdCtx> {
        // SAFETY: plain allocation.
        let ctx = MdCtx(unsafe { ffi::EVP_MD_CTX_new() });
        if ctx.0.is_null() {
            return fail(Reason::Internal, "SHA-256 allocation failed");
        }
        Ok(ctx)
    }

    /// Becomes a copy of `src`'s running state, in this same context.
    fn copy_from(&mut self, src: &MdCtx) -> Result<()> {
        // SAFETY: both contexts are valid and distinct (a shared and an
        // exclusive borrow); src is initialised.
        if unsafe { ffi::EVP_MD_CTX_copy_ex(self.0, src.0) } != 1 {
            return fail(Reason::Internal, "SHA-256 copy failed");
        }
        Ok(())
    }
}

impl Drop for MdCtx {
    fn drop(&mut self) {
        // SAFETY: allocated by EVP_MD_CTX_new (or NULL, which is accepted).
        unsafe { ffi::EVP_MD_CTX_free(self.0) };
    }
}

/// HMAC-SHA-256 (RFC 2104) for a key of at most one block: the two keyed
/// states are made once and copied per message into one working context.
pub struct HmacSha256 {
    inner: MdCtx,
    outer: MdCtx,
    work: MdCtx,
}

const SHA256_BLOCK: usize = 64;
pub const SHA256_LEN: usize = 32;

impl HmacSha256 {
    pub fn new(sha: &Sha256, key: &[u8]) -> Result<HmacSha256> {
        if key.len() > SHA256_BLOCK {
            return fail(Reason::Internal, "HMAC key longer than one block");
        }
        let mut ipad = Zeroizing::new([0x36u8; SHA256_BLOCK]);
        let mut opad = Zeroizing::new([0x5cu8; SHA256_BLOCK]);
        for (i, &k) in key.iter().enumerate() {
            ipad[i] ^= k;
            opad[i] ^= k;
        }
        let mut inner = sha.start()?;
        let mut outer = sha.start()?;
        inner.update(&ipad[..])?;
        outer.update(&opad[..])?;
        Ok(HmacSha256 {
            inner,
            outer,
            work: MdCtx::empty()?,
        })
    }

    /// The MAC of the concatenation of `parts`.
    pub fn mac(&mut self, parts: &[&[u8]]) -> Result<Zeroizing<[u8; SHA256_LEN]>> {
        self.work.copy_from(&self.inner)?;
        for part in parts {
            self.work.update(part)?;
        }
        let inner_hash = self.work.finish()?;
        self.work.copy_from(&self.outer)?;
        self.work.update(&inner_hash[..])?;
        self.work.finish()
    }

    /// The implicit-rejection PRF: HMAC in counter mode over
    /// `counter (2 bytes) || label || bit length (2 bytes)`, `len` bytes.
    fn prf(&mut self, label: &[u8], len: usize) -> Result<Zeroizing<Vec<u8>>> {
        let bits = u16::try_from(len * 8)
            .map_err(|_| crate::error::Error::new(Reason::Internal, "PRF output too long"))?;
        let mut out = Zeroizing::new(Vec::with_capacity(len + SHA256_LEN));
        let mut counter: u16 = 0;
        while out.len() < len {
            let block = self.mac(&[&counter.to_be_bytes(), label, &bits.to_be_bytes()])?;
            out.extend_from_slice(&block[..]);
            counter += 1;
        }
        out.truncate(len);
        Ok(out)
    }
}

/// The key of the implicit-rejection key derivation: SHA-256 of the private
/// exponent as a big-endian string of the modulus' length `k`.
pub fn implicit_rejection_key(
    sha: &Sha256,
    d: &[u8],
    k: usize,
) -> Result<Zeroizing<[u8; SHA256_LEN]>> {
    let d = crate::params::strip_zeros(d);
    if d.len() > k {
        return fail(
            Reason::InvalidKey,
            "the private exponent is longer than the modulus",
        );
    }
    let mut padded = Zeroizing::new(vec![0u8; k]);
    padded[k - d.len()..].copy_from_slice(d);
    sha.digest(&padded)
}

/// PKCS#1 v1.5 decoding with implicit rejection (the algorithm of
/// draft-irtf-cfrg-rsa-guidance, as OpenSSL 3.2+ does it): a block with bad
/// padding yields a synthetic message derived from the private key and the
/// ciphertext, deterministic for a ciphertext, instead of an error. `key`
/// comes from [`implicit_rejection_key`]; `c` is the ciphertext left-padded
/// to the modulus length. The result is always "good"; nothing branches on
/// which message was chosen.
pub fn pkcs1_type2_decode_implicit(
    sha: &Sha256,
    key: &[u8; SHA256_LEN],
    c: &[u8],
    em: &[u8],
) -> Result<Decoded> {
    let k = em.len();
    if k < 11 || c.len() != k {
        return fail(
            Reason::InvalidKey,
            "the modulus is too small for PKCS#1 v1.5 decryption",
        );
    }
    let kdk = HmacSha256::new(sha, key)?.mac(&[c])?;
    let mut prf = HmacSha256::new(sha, &kdk[..])?;
    // 128 candidate lengths, two bytes each.
    let candidates = prf.prf(b"length", 256)?;
    let random_message = prf.prf(b"message", k)?;

    // The synthetic length is the last candidate, masked to the bit width of
    // the largest message, that is below that maximum.
    let max_len = (k - 10) as u32;
    let mut mask = max_len;
    for shift in [1, 2, 4, 8, 16] {
        mask |= mask >> shift;
    }
    let mut synthetic_len = 0u32;
    for pair in candidates.chunks_exact(2) {
        let len = u32::from(u16::from_be_bytes([pair[0], pair[1]])) & mask;
        synthetic_len = ct::select(ct::lt(len, max_len), len, synthetic_len);
    }
    // The synthetic message is the last `synthetic_len` bytes of the PRF
    // output; moved to the front without a length-dependent access.
    // (In the PRF output's own buffer; its first 11 bytes dropped.)
    let mut synthetic = random_message;
    synthetic.drain(..11);
    ct::shift_left(&mut synthetic, (max_len - 1 - synthetic_len) as usize);

    // The chosen message overwrites the synthetic one in place.
    let real = pkcs1_type2_decode(em);
    let mut message = synthetic;
    for (out, &r) in message.iter_mut().zip(real.message.iter()) {
        *out = ct::select_u8(real.good, r, *out);
    }
    Ok(Decoded {
        good: u32::MAX,
        len: ct::select(real.good, real.len as u32, synthetic_len) as usize,
        message,
    })
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
    ) -> Result<Zeroizing<Vec<u8>>> {
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
        // EM = 00 || maskedSeed || maskedDB, built in its one buffer: DB =
        // lHash || PS || 01 || M goes in place and is masked there.
        let mut em = Zeroizing::new(vec![0u8; k]);
        let (masked_seed, masked_db) = em[1..].split_at_mut(h);
        let mut hasher = Hasher::new(self.digests, self.mgf1)?;
        masked_db[..h].copy_from_slice(&self.label_hash(&mut hasher)?[..h]);
        masked_db[db_len - m.len() - 1] = 1;
        masked_db[db_len - m.len()..].copy_from_slice(m);
        let seed = Zeroizing::new(random(h)?);
        let db_mask = mgf1(&mut hasher, &seed, db_len)?;
        masked_db
            .iter_mut()
            .zip(db_mask.iter())
            .for_each(|(d, x)| *d ^= x);
        let seed_mask = mgf1(&mut hasher, masked_db, h)?;
        masked_seed
            .iter_mut()
            .zip(seed.iter().zip(seed_mask.iter()))
            .for_each(|(out, (s, x))| *out = s ^ x);
        Ok(em)
    }

    /// lHash, the digest of the label (public), on the stack; with
    /// `mgf1_hasher` (restarted) when MGF1 uses the same digest.
    fn label_hash(&self, mgf1_hasher: &mut Hasher) -> Result<[u8; MAX_DIGEST_LEN]> {
        let mut own;
        let hasher = if mgf1_hasher.id() == self.md {
            mgf1_hasher.restart()?;
            mgf1_hasher
        } else {
            own = Hasher::new(self.digests, self.md)?;
            &mut own
        };
        hasher.update(self.label)?;
        let mut out = [0u8; MAX_DIGEST_LEN];
        let len = hasher.finish_into(&mut out)?;
        if len != self.md.size() {
            return fail(Reason::Internal, "OAEP digest has an unexpected length");
        }
        Ok(out)
    }

    /// Constant-time EME-OAEP decoding of a `k`-byte block. Errors only for
    /// public reasons (key too small, digest failure).
    pub fn decode(&self, em: &[u8]) -> Result<Decoded> {
        let k = em.len();
        let h = self.check_size(k)?;
        let mut hasher = Hasher::new(self.digests, self.mgf1)?;
        let l_hash = self.label_hash(&mut hasher)?;
        let (masked_seed, masked_db) = em[1..].split_at(h);
        // Each mask is unmasked in its own wiped buffer.
        let mut seed = mgf1(&mut hasher, masked_db, h)?;
        seed.iter_mut().zip(masked_seed).for_each(|(x, m)| *x ^= m);
        let mut db = mgf1(&mut hasher, &seed, masked_db.len())?;
        db.iter_mut().zip(masked_db).for_each(|(x, m)| *x ^= m);

        let mut good = ct::is_zero(u32::from(em[0]));
        good &= ct::bytes_eq(&db[..h], &l_hash[..h]);
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
        // The message candidate is DB past lHash and the first byte after
        // it, moved down in DB's own buffer (a public length).
        let mut message = db;
        message.drain(..h + 1);
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
    let mut out = Zeroizing::new([0u8; TLS_PREMASTER_LEN]);
    if em.len() < TLS_PREMASTER_LEN + 11 {
        out.copy_from_slice(random);
        return out;
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
