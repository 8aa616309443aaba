//! The arithmetic of the card's operations, in software with libcrypto:
//! modular exponentiation, CRT with libica's key layout (and libica's key
//! check, p > q), and CRT key generation. The card process computes its
//! answers with it and so does the emulated libica without a card, so
//! both give the same results. For tests only: not hardened the way
//! rustica's software backend is.

use std::cmp::Ordering;
use std::os::raw::c_int;

use crate::bn::{self, Bn, Ctx, Fail};

const EINVAL: u32 = libc::EINVAL as u32;
const EIO: u32 = libc::EIO as u32;

fn try_mod_expo(input: &[u8], n: &[u8], e: &[u8], out: &mut [u8]) -> Result<u32, Fail> {
    let ctx = Ctx::new()?;
    let (c, n, e) = (Bn::from_be(input)?, Bn::from_be(n)?, Bn::from_be(e)?);
    if !n.is_odd() || c.cmp(&n) != Ordering::Less {
        return Ok(EINVAL);
    }
    bn::mod_exp(&c, &e, &n, &ctx)?.write_to(out)?;
    Ok(0)
}

/// `input ^ exponent mod modulus` into `out`; an errno or 0.
pub fn mod_expo(input: &[u8], modulus: &[u8], exponent: &[u8], out: &mut [u8]) -> u32 {
    try_mod_expo(input, modulus, exponent, out).unwrap_or(EIO)
}

/// A CRT key in libica's layout: p, dp and qInverse hold L/2 + 8 bytes,
/// q and dq L/2, for a key of L bytes (big-endian, right-aligned).
pub struct CrtParts<'a> {
    pub p: &'a mut [u8],
    pub q: &'a mut [u8],
    pub dp: &'a mut [u8],
    pub dq: &'a mut [u8],
    pub qinv: &'a mut [u8],
}

/// libica's key check: if p < q, swap p/q and dp/dq and recompute qInverse
/// in place. Returns whether it swapped.
fn try_normalise(k: &mut CrtParts<'_>) -> Result<bool, Fail> {
    let (p, q) = (Bn::from_be(k.p)?, Bn::from_be(k.q)?);
    if p.cmp(&q) != Ordering::Less {
        return Ok(false);
    }
    let (dp, dq) = (Bn::from_be(k.dp)?, Bn::from_be(k.dq)?);
    // New p (old q) goes into the long buffer, new q (old p) must fit the
    // short one.
    q.write_to(k.p)?;
    p.write_to(k.q)?;
    dq.write_to(k.dp)?;
    dp.write_to(k.dq)?;
    let ctx = Ctx::new()?;
    bn::mod_inverse(&p, &q, &ctx)?.write_to(k.qinv)?;
    Ok(true)
}

fn try_crt(input: &[u8], k: &mut CrtParts<'_>, out: &mut [u8]) -> Result<(u32, bool), Fail> {
    let swapped = try_normalise(k)?;
    let ctx = Ctx::new()?;
    let c = Bn::from_be(input)?;
    let (p, q) = (Bn::from_be(k.p)?, Bn::from_be(k.q)?);
    let (dp, dq, qinv) = (Bn::from_be(k.dp)?, Bn::from_be(k.dq)?, Bn::from_be(k.qinv)?);
    if !p.is_odd() || !q.is_odd() {
        return Ok((EINVAL, swapped));
    }
    let (c1, c2) = (bn::nnmod(&c, &p, &ctx)?, bn::nnmod(&c, &q, &ctx)?);
    let (m1, m2) = match bn::crt_x2(&c1, &dp, &p, &c2, &dq, &q, &ctx)? {
        Some(pair) => pair,
        None => (
            bn::mod_exp(&c1, &dp, &p, &ctx)?,
            bn::mod_exp(&c2, &dq, &q, &ctx)?,
        ),
    };
    let h = bn::mod_sub_mul(&m1, &m2, &qinv, &p, &ctx)?;
    let m = bn::mul_add(&h, &q, &m2, &ctx)?;
    m.write_to(out)?;
    Ok((0, swapped))
}

/// CRT with libica's key layout (a key with p < q is normalised in
/// place first): an errno or 0, and whether it swapped p and q.
pub fn crt(input: &[u8], key: &mut CrtParts<'_>, out: &mut [u8]) -> (u32, bool) {
    try_crt(input, key, out).unwrap_or((EIO, false))
}

fn try_generate(
    bits: u32,
    e: u64,
    public: &mut [u8],
    parts: &mut CrtParts<'_>,
) -> Result<u32, Fail> {
    struct Rsa(*mut openssl_sys::RSA);
    impl Drop for Rsa {
        fn drop(&mut self) {
            // SAFETY: owned, freed once (RSA_free clears the key).
            unsafe { openssl_sys::RSA_free(self.0) }
        }
    }
    // SAFETY: no preconditions.
    let rsa = Rsa(unsafe { openssl_sys::RSA_new() });
    if rsa.0.is_null() {
        return Err(Fail);
    }
    let ebn = Bn::from_u64(e)?;
    // SAFETY: valid RSA and exponent; NULL callback allowed.
    bn::ok(unsafe {
        openssl_sys::RSA_generate_key_ex(rsa.0, bits as c_int, ebn.ptr(), std::ptr::null_mut())
    })?;
    let mut n = std::ptr::null();
    let (mut p, mut q) = (std::ptr::null(), std::ptr::null());
    let (mut dp, mut dq, mut qinv) = (std::ptr::null(), std::ptr::null(), std::ptr::null());
    // SAFETY: valid RSA; out-pointers receive pointers owned by it.
    unsafe {
        openssl_sys::RSA_get0_key(rsa.0, &mut n, std::ptr::null_mut(), std::ptr::null_mut());
        openssl_sys::RSA_get0_factors(rsa.0, &mut p, &mut q);
        openssl_sys::RSA_get0_crt_params(rsa.0, &mut dp, &mut dq, &mut qinv);
    }
    if [n, p, q, dp, dq, qinv].iter().any(|v| v.is_null()) {
        return Err(Fail);
    }
    // SAFETY: all six are valid BIGNUMs owned by `rsa`, alive here.
    unsafe {
        Bn::dup_raw(n)?.write_to(public)?;
        Bn::dup_raw(p)?.write_to(parts.p)?;
        Bn::dup_raw(q)?.write_to(parts.q)?;
        Bn::dup_raw(dp)?.write_to(parts.dp)?;
        Bn::dup_raw(dq)?.write_to(parts.dq)?;
        Bn::dup_raw(qinv)?.write_to(parts.qinv)?;
    }
    try_normalise(parts)?;
    Ok(0)
}

/// libica's key check (p < q: swap p/q and dp/dq, recompute qInverse, in
/// place): whether it swapped;
/// `None` when the arithmetic failed.
pub fn normalise(key: &mut CrtParts<'_>) -> Option<bool> {
    try_normalise(key).ok()
}

/// A CRT key of `bits` bits with public exponent `e`: the modulus into
/// `public`, the private key into `parts` (normalised, p > q); an errno
/// or 0.
pub fn generate(bits: u32, e: u64, public: &mut [u8], parts: &mut CrtParts<'_>) -> u32 {
    try_generate(bits, e, public, parts).unwrap_or(EIO)
}
