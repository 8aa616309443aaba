//! Minimal owned BIGNUM / BN_CTX for the emulator's arithmetic.

use std::os::raw::c_int;
use std::ptr::NonNull;

use openssl_sys::{BIGNUM, BN_CTX};

/// An error of the arithmetic: the emulator reports it as EIO.
#[derive(Debug)]
pub struct Fail;

pub fn ok(r: c_int) -> Result<(), Fail> {
    if r == 1 {
        Ok(())
    } else {
        Err(Fail)
    }
}

pub struct Bn(NonNull<BIGNUM>);

impl Drop for Bn {
    fn drop(&mut self) {
        // SAFETY: owned pointer, freed once; the digits are wiped.
        unsafe { openssl_sys::BN_clear_free(self.0.as_ptr()) }
    }
}

impl Bn {
    pub fn new() -> Result<Bn, Fail> {
        // SAFETY: no preconditions; NULL handled.
        NonNull::new(unsafe { openssl_sys::BN_new() })
            .map(Bn)
            .ok_or(Fail)
    }

    /// From big-endian bytes.
    pub fn from_be(b: &[u8]) -> Result<Bn, Fail> {
        let v = Bn::new()?;
        let len = c_int::try_from(b.len()).map_err(|_| Fail)?;
        // SAFETY: b is valid for len bytes; v is a valid BIGNUM to overwrite.
        let r = unsafe { openssl_sys::BN_bin2bn(b.as_ptr(), len, v.ptr()) };
        if r.is_null() {
            return Err(Fail);
        }
        Ok(v)
    }

    /// A copy of a BIGNUM libcrypto owns.
    ///
    /// # Safety
    /// `p` must be a valid BIGNUM.
    pub unsafe fn dup_raw(p: *const BIGNUM) -> Result<Bn, Fail> {
        // SAFETY: p valid per the caller.
        NonNull::new(unsafe { openssl_sys::BN_dup(p) })
            .map(Bn)
            .ok_or(Fail)
    }

    pub fn from_u64(v: u64) -> Result<Bn, Fail> {
        Bn::from_be(&v.to_be_bytes())
    }

    pub fn ptr(&self) -> *mut BIGNUM {
        self.0.as_ptr()
    }

    pub fn set_consttime(&self) {
        // SAFETY: valid BIGNUM; sets a flag.
        unsafe { openssl_sys::BN_set_flags(self.ptr(), openssl_sys::BN_FLG_CONSTTIME) }
    }

    pub fn cmp(&self, o: &Bn) -> std::cmp::Ordering {
        // SAFETY: valid BIGNUMs, read only.
        unsafe { openssl_sys::BN_cmp(self.ptr(), o.ptr()) }.cmp(&0)
    }

    pub fn is_odd(&self) -> bool {
        // SAFETY: valid BIGNUM, read only.
        unsafe { openssl_sys::BN_is_odd(self.ptr()) == 1 }
    }

    /// Writes the value right-aligned into `out`; fails when it does not fit.
    pub fn write_to(&self, out: &mut [u8]) -> Result<(), Fail> {
        let len = c_int::try_from(out.len()).map_err(|_| Fail)?;
        // SAFETY: out is valid for len bytes; BN_bn2binpad writes exactly
        // that many or fails.
        let r = unsafe { openssl_sys::BN_bn2binpad(self.ptr(), out.as_mut_ptr(), len) };
        if r < 0 {
            Err(Fail)
        } else {
            Ok(())
        }
    }
}

pub struct Ctx(NonNull<BN_CTX>);

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: owned, freed once.
        unsafe { openssl_sys::BN_CTX_free(self.0.as_ptr()) }
    }
}

impl Ctx {
    pub fn new() -> Result<Ctx, Fail> {
        // SAFETY: no preconditions; NULL handled.
        NonNull::new(unsafe { openssl_sys::BN_CTX_new() })
            .map(Ctx)
            .ok_or(Fail)
    }

    pub fn ptr(&self) -> *mut BN_CTX {
        self.0.as_ptr()
    }
}

extern "C" {
    // libcrypto functions openssl-sys does not declare (bn.h).
    fn BN_MONT_CTX_new() -> *mut openssl_sys::BN_MONT_CTX;
    fn BN_MONT_CTX_set(
        mont: *mut openssl_sys::BN_MONT_CTX,
        m: *const BIGNUM,
        ctx: *mut BN_CTX,
    ) -> c_int;
    fn BN_MONT_CTX_free(mont: *mut openssl_sys::BN_MONT_CTX);
    fn BN_mod_exp_mont_consttime_x2(
        rr1: *mut BIGNUM,
        a1: *const BIGNUM,
        p1: *const BIGNUM,
        m1: *const BIGNUM,
        in_mont1: *mut openssl_sys::BN_MONT_CTX,
        rr2: *mut BIGNUM,
        a2: *const BIGNUM,
        p2: *const BIGNUM,
        m2: *const BIGNUM,
        in_mont2: *mut openssl_sys::BN_MONT_CTX,
        ctx: *mut BN_CTX,
    ) -> c_int;
}

impl Bn {
    pub fn bits(&self) -> i32 {
        // SAFETY: valid BIGNUM.
        unsafe { openssl_sys::BN_num_bits(self.ptr()) }
    }
}

/// A Montgomery context for one odd modulus, built per call as a card
/// without state would.
struct Mont(*mut openssl_sys::BN_MONT_CTX);

impl Mont {
    fn new(m: &Bn, ctx: &Ctx) -> Result<Mont, Fail> {
        // SAFETY: plain allocation, then set up for a valid odd modulus.
        unsafe {
            let mont = BN_MONT_CTX_new();
            if mont.is_null() {
                return Err(Fail);
            }
            let mont = Mont(mont);
            ok(BN_MONT_CTX_set(mont.0, m.ptr(), ctx.ptr()))?;
            Ok(mont)
        }
    }
}

impl Drop for Mont {
    fn drop(&mut self) {
        // SAFETY: owned, freed once.
        unsafe { BN_MONT_CTX_free(self.0) }
    }
}

/// Both CRT halves in one call when p and q are 1024 bits each (OpenSSL's
/// AVX-512 path for RSA-2048), so the emulator does the same arithmetic as
/// rustica's software backend; None for other sizes.
pub fn crt_x2(
    c1: &Bn,
    dp: &Bn,
    p: &Bn,
    c2: &Bn,
    dq: &Bn,
    q: &Bn,
    ctx: &Ctx,
) -> Result<Option<(Bn, Bn)>, Fail> {
    if p.bits() != 1024 || q.bits() != 1024 {
        return Ok(None);
    }
    let (mp, mq) = (Mont::new(p, ctx)?, Mont::new(q, ctx)?);
    let (m1, m2) = (Bn::new()?, Bn::new()?);
    dp.set_consttime();
    dq.set_consttime();
    // SAFETY: valid BIGNUMs and Montgomery contexts for p and q; outputs
    // distinct from the inputs; ctx used by this thread only.
    ok(unsafe {
        BN_mod_exp_mont_consttime_x2(
            m1.ptr(),
            c1.ptr(),
            dp.ptr(),
            p.ptr(),
            mp.0,
            m2.ptr(),
            c2.ptr(),
            dq.ptr(),
            q.ptr(),
            mq.0,
            ctx.ptr(),
        )
    })?;
    Ok(Some((m1, m2)))
}

/// r = a^p mod m; constant-time for secret-sized exponents (public
/// exponents are a few bits and need not be).
pub fn mod_exp(a: &Bn, p: &Bn, m: &Bn, ctx: &Ctx) -> Result<Bn, Fail> {
    let r = Bn::new()?;
    if p.bits() > 64 {
        p.set_consttime();
    }
    // SAFETY: valid BIGNUMs, r distinct from the inputs, ctx used by this
    // thread only.
    ok(unsafe { openssl_sys::BN_mod_exp(r.ptr(), a.ptr(), p.ptr(), m.ptr(), ctx.ptr()) })?;
    Ok(r)
}

/// a mod m, non-negative.
pub fn nnmod(a: &Bn, m: &Bn, ctx: &Ctx) -> Result<Bn, Fail> {
    let r = Bn::new()?;
    // SAFETY: as for mod_exp.
    ok(unsafe { openssl_sys::BN_nnmod(r.ptr(), a.ptr(), m.ptr(), ctx.ptr()) })?;
    Ok(r)
}

/// (a - b) * c mod m.
pub fn mod_sub_mul(a: &Bn, b: &Bn, c: &Bn, m: &Bn, ctx: &Ctx) -> Result<Bn, Fail> {
    let d = Bn::new()?;
    // SAFETY: as for mod_exp.
    ok(unsafe { openssl_sys::BN_mod_sub(d.ptr(), a.ptr(), b.ptr(), m.ptr(), ctx.ptr()) })?;
    let r = Bn::new()?;
    // SAFETY: as for mod_exp.
    ok(unsafe { openssl_sys::BN_mod_mul(r.ptr(), d.ptr(), c.ptr(), m.ptr(), ctx.ptr()) })?;
    Ok(r)
}

/// a * b + c.
pub fn mul_add(a: &Bn, b: &Bn, c: &Bn, ctx: &Ctx) -> Result<Bn, Fail> {
    let t = Bn::new()?;
    // SAFETY: as for mod_exp.
    ok(unsafe { openssl_sys::BN_mul(t.ptr(), a.ptr(), b.ptr(), ctx.ptr()) })?;
    let r = Bn::new()?;
    // SAFETY: valid BIGNUMs, r distinct.
    ok(unsafe { openssl_sys::BN_add(r.ptr(), t.ptr(), c.ptr()) })?;
    Ok(r)
}

/// a^-1 mod m.
pub fn mod_inverse(a: &Bn, m: &Bn, ctx: &Ctx) -> Result<Bn, Fail> {
    let r = Bn::new()?;
    // SAFETY: as for mod_exp; NULL means no inverse.
    let p = unsafe { openssl_sys::BN_mod_inverse(r.ptr(), a.ptr(), m.ptr(), ctx.ptr()) };
    if p.is_null() {
        return Err(Fail);
    }
    Ok(r)
}
