//! Safe wrappers over libcrypto's BIGNUM, BN_CTX and BN_MONT_CTX.
//!
//! Every [`Bn`] is freed with `BN_clear_free`, so whatever it held (secret
//! or not) is wiped. Values that are read concurrently from several threads
//! (key parts, Montgomery contexts) are only ever passed to libcrypto
//! functions that read them.

use std::cmp::Ordering;
use std::os::raw::c_int;
use std::ptr::NonNull;

use openssl_sys::{BIGNUM, BN_CTX, BN_MONT_CTX, OSSL_LIB_CTX};
use zeroize::Zeroizing;

use crate::error::RsaError;
use crate::libctx::LibCtx;
use crate::secret::SecretBytes;

// libcrypto functions that openssl-sys does not declare (all present in
// OpenSSL 3.0's <openssl/bn.h> and exported by libcrypto.so.3).
extern "C" {
    fn BN_bn2lebinpad(a: *const BIGNUM, to: *mut u8, tolen: c_int) -> c_int;
    fn BN_lebin2bn(s: *const u8, len: c_int, ret: *mut BIGNUM) -> *mut BIGNUM;
    fn BN_MONT_CTX_new() -> *mut BN_MONT_CTX;
    fn BN_MONT_CTX_free(mont: *mut BN_MONT_CTX);
    fn BN_MONT_CTX_set(mont: *mut BN_MONT_CTX, m: *const BIGNUM, ctx: *mut BN_CTX) -> c_int;
    fn BN_mod_mul_montgomery(
        r: *mut BIGNUM,
        a: *const BIGNUM,
        b: *const BIGNUM,
        mont: *mut BN_MONT_CTX,
        ctx: *mut BN_CTX,
    ) -> c_int;
    fn BN_from_montgomery(
        r: *mut BIGNUM,
        a: *const BIGNUM,
        mont: *mut BN_MONT_CTX,
        ctx: *mut BN_CTX,
    ) -> c_int;
    fn BN_to_montgomery(
        r: *mut BIGNUM,
        a: *const BIGNUM,
        mont: *mut BN_MONT_CTX,
        ctx: *mut BN_CTX,
    ) -> c_int;
    fn BN_mod_exp_mont(
        r: *mut BIGNUM,
        a: *const BIGNUM,
        p: *const BIGNUM,
        m: *const BIGNUM,
        ctx: *mut BN_CTX,
        m_ctx: *mut BN_MONT_CTX,
    ) -> c_int;
    fn BN_mod_exp_mont_consttime(
        r: *mut BIGNUM,
        a: *const BIGNUM,
        p: *const BIGNUM,
        m: *const BIGNUM,
        ctx: *mut BN_CTX,
        in_mont: *mut BN_MONT_CTX,
    ) -> c_int;
    fn BN_mod_exp_mont_consttime_x2(
        rr1: *mut BIGNUM,
        a1: *const BIGNUM,
        p1: *const BIGNUM,
        m1: *const BIGNUM,
        in_mont1: *mut BN_MONT_CTX,
        rr2: *mut BIGNUM,
        a2: *const BIGNUM,
        p2: *const BIGNUM,
        m2: *const BIGNUM,
        in_mont2: *mut BN_MONT_CTX,
        ctx: *mut BN_CTX,
    ) -> c_int;
    fn BN_is_zero(a: *const BIGNUM) -> c_int;
    fn BN_is_one(a: *const BIGNUM) -> c_int;
    fn BN_copy(a: *mut BIGNUM, b: *const BIGNUM) -> *mut BIGNUM;
    fn BN_CTX_secure_new_ex(libctx: *mut OSSL_LIB_CTX) -> *mut BN_CTX;
    fn BN_secure_new() -> *mut BIGNUM;
    fn BN_get_flags(b: *const BIGNUM, n: c_int) -> c_int;
    fn CRYPTO_secure_malloc_initialized() -> c_int;
    fn BN_CTX_new_ex(libctx: *mut OSSL_LIB_CTX) -> *mut BN_CTX;
    fn ERR_set_mark() -> c_int;
    fn ERR_pop_to_mark() -> c_int;
}

/// <openssl/bn.h>: the BIGNUM's digits come from the secure heap.
const BN_FLG_SECURE: c_int = 0x08;

fn check(ret: c_int, what: &str) -> Result<(), RsaError> {
    if ret == 1 {
        Ok(())
    } else {
        Err(RsaError::libcrypto(format!("libcrypto {what} failed")))
    }
}

/// An owned BIGNUM, cleared when dropped.
pub(crate) struct Bn(NonNull<BIGNUM>);

// SAFETY: a BIGNUM has no thread affinity; it is plain heap memory owned by
// this value.
unsafe impl Send for Bn {}
// SAFETY: `&Bn` only gives access to libcrypto functions taking
// `const BIGNUM *`, which do not modify it; mutation needs `&mut Bn`.
unsafe impl Sync for Bn {}

impl Drop for Bn {
    fn drop(&mut self) {
        // SAFETY: the pointer is owned by this value and freed exactly once;
        // BN_clear_free wipes the digits before freeing.
        unsafe { openssl_sys::BN_clear_free(self.0.as_ptr()) }
    }
}

impl Bn {
    pub(crate) fn new() -> Result<Bn, RsaError> {
        // SAFETY: BN_new has no preconditions; NULL is handled.
        let p = unsafe { openssl_sys::BN_new() };
        NonNull::new(p)
            .map(Bn)
            .ok_or_else(|| RsaError::libcrypto("libcrypto BN_new failed (out of memory)"))
    }

    /// A new BIGNUM for a secret of key generation (a prime candidate,
    /// what is derived from one): its digits in OpenSSL's secure heap when
    /// the application set one up, as the default provider keeps its
    /// candidates (`BN_secure_new`, `BN_CTX_secure_new`); in the ordinary
    /// heap otherwise. As in the default provider, a secure heap too full
    /// for it fails the generation.
    pub(crate) fn new_secret() -> Result<Bn, RsaError> {
        // SAFETY: no preconditions; NULL is handled.
        let p = unsafe { BN_secure_new() };
        NonNull::new(p)
            .map(Bn)
            .ok_or_else(|| RsaError::libcrypto("libcrypto BN_secure_new failed (out of memory)"))
    }

    /// A new BIGNUM kept where `a` is: for a result computed from `a`.
    pub(crate) fn new_like(a: &Bn) -> Result<Bn, RsaError> {
        if a.is_secure() {
            Bn::new_secret()
        } else {
            Bn::new()
        }
    }

    /// Whether the BIGNUM was made for the secure heap (BN_FLG_SECURE).
    pub(crate) fn is_secure(&self) -> bool {
        // SAFETY: a valid BIGNUM owned by self; reads its flags.
        unsafe { BN_get_flags(self.as_ptr(), BN_FLG_SECURE) != 0 }
    }

    /// [`Bn::from_be`] into a [`Bn::new_secret`].
    pub(crate) fn from_be_secret(bytes: &[u8]) -> Result<Bn, RsaError> {
        Bn::new_secret()?.set_be(bytes)
    }

    /// A copy for a secret that lives as long as a key (d, the CRT parts):
    /// in OpenSSL's secure heap when the application set one up
    /// (`CRYPTO_secure_malloc_init`), as the default provider keeps its
    /// private key parts (`BN_secure_new`); marked constant-time. A secure
    /// heap too full for it leaves the copy in the normal heap, as without
    /// a secure heap: a key never fails to load for want of secure memory.
    pub(crate) fn secret_copy(&self) -> Result<Bn, RsaError> {
        // SAFETY: no preconditions; reads a flag set by the application.
        if unsafe { CRYPTO_secure_malloc_initialized() } == 1 {
            // SAFETY: pairs with ERR_pop_to_mark below: a full secure heap
            // is not an error of the caller's operation.
            unsafe { ERR_set_mark() };
            // SAFETY: no preconditions; NULL is handled. The BIGNUM's
            // digits are allocated from the secure heap when it grows.
            let secure = NonNull::new(unsafe { BN_secure_new() }).map(Bn);
            let copied = secure.and_then(|mut b| b.copy_from(self).ok().map(|()| b));
            // SAFETY: drops only what the attempt above queued.
            unsafe { ERR_pop_to_mark() };
            if let Some(mut b) = copied {
                b.set_consttime();
                return Ok(b);
            }
        }
        let mut b = self.dup()?;
        b.set_consttime();
        Ok(b)
    }

    /// Big-endian unsigned bytes (leading zeros allowed).
    pub(crate) fn from_be(bytes: &[u8]) -> Result<Bn, RsaError> {
        Bn::new()?.set_be(bytes)
    }

    /// This BIGNUM (where it lives unchanged) set to `bytes`, big-endian.
    fn set_be(self, bytes: &[u8]) -> Result<Bn, RsaError> {
        let len =
            c_int::try_from(bytes.len()).map_err(|_| RsaError::bad_input("integer is too long"))?;
        // SAFETY: bytes is valid for `len` bytes; self is a valid BIGNUM
        // that BN_bin2bn overwrites and returns on success.
        let r = unsafe { openssl_sys::BN_bin2bn(bytes.as_ptr(), len, self.0.as_ptr()) };
        if r.is_null() {
            return Err(RsaError::libcrypto("libcrypto BN_bin2bn failed"));
        }
        Ok(self)
    }

    pub(crate) fn from_u64(v: u64) -> Result<Bn, RsaError> {
        Bn::from_be(&v.to_be_bytes())
    }

    pub(crate) fn as_ptr(&self) -> *const BIGNUM {
        self.0.as_ptr()
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut BIGNUM {
        self.0.as_ptr()
    }

    /// A copy (flags other than the value are not copied; see
    /// [`Bn::set_consttime`]).
    /// A copy kept where this one is (secure when it is), as BN_dup.
    pub(crate) fn dup(&self) -> Result<Bn, RsaError> {
        let mut b = Bn::new_like(self)?;
        b.copy_from(self)?;
        Ok(b)
    }

    pub(crate) fn copy_from(&mut self, other: &Bn) -> Result<(), RsaError> {
        // SAFETY: both pointers are valid BIGNUMs; when they are the same
        // BN_copy is a no-op (it cannot be, `&mut self` and `&other` do not
        // alias).
        let r = unsafe { BN_copy(self.as_mut_ptr(), other.as_ptr()) };
        if r.is_null() {
            return Err(RsaError::libcrypto("libcrypto BN_copy failed"));
        }
        Ok(())
    }

    /// Marks the value secret: libcrypto then uses its constant-time code
    /// paths for it (division, inversion, exponentiation).
    pub(crate) fn set_consttime(&mut self) {
        // SAFETY: valid BIGNUM; setting a flag bit.
        unsafe { openssl_sys::BN_set_flags(self.as_mut_ptr(), openssl_sys::BN_FLG_CONSTTIME) }
    }

    pub(crate) fn num_bits(&self) -> u32 {
        // SAFETY: valid BIGNUM, read only.
        let b = unsafe { openssl_sys::BN_num_bits(self.as_ptr()) };
        b.max(0) as u32
    }

    pub(crate) fn num_bytes(&self) -> usize {
        (self.num_bits() as usize).div_ceil(8)
    }

    pub(crate) fn is_odd(&self) -> bool {
        // SAFETY: valid BIGNUM, read only.
        unsafe { openssl_sys::BN_is_odd(self.as_ptr()) == 1 }
    }

    pub(crate) fn is_zero(&self) -> bool {
        // SAFETY: valid BIGNUM, read only.
        unsafe { BN_is_zero(self.as_ptr()) == 1 }
    }

    pub(crate) fn is_one(&self) -> bool {
        // SAFETY: valid BIGNUM, read only.
        unsafe { BN_is_one(self.as_ptr()) == 1 }
    }

    /// Variable-time comparison (use on public or blinded values only).
    pub(crate) fn cmp(&self, other: &Bn) -> Ordering {
        // SAFETY: both valid BIGNUMs, read only.
        let c = unsafe { openssl_sys::BN_cmp(self.as_ptr(), other.as_ptr()) };
        c.cmp(&0)
    }

    pub(crate) fn cmp_u64(&self, v: u64) -> Result<Ordering, RsaError> {
        Ok(self.cmp(&Bn::from_u64(v)?))
    }

    /// Minimal big-endian bytes (empty for zero).
    pub(crate) fn to_be(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.num_bytes()];
        // SAFETY: out has room for BN_num_bytes bytes, which is exactly what
        // BN_bn2bin writes.
        unsafe { openssl_sys::BN_bn2bin(self.as_ptr(), out.as_mut_ptr()) };
        out
    }

    /// Big-endian bytes left-padded to exactly `len`, in a zeroizing buffer.
    pub(crate) fn to_be_padded(&self, len: usize) -> Result<Zeroizing<Vec<u8>>, RsaError> {
        self.to_be_padded_public(len).map(Zeroizing::new)
    }

    /// As `to_be_padded`, for public values (no zeroizing on drop).
    ///
    /// The buffer is not zeroed first: BN_bn2binpad writes every byte, and
    /// a zeroed allocation (calloc) is one more libc path in the
    /// instruction cache of every verification (docs/performance.md, "The
    /// instruction cache").
    pub(crate) fn to_be_padded_public(&self, len: usize) -> Result<Vec<u8>, RsaError> {
        let mut out = Vec::<u8>::with_capacity(len);
        // SAFETY: out's allocation has room for len bytes.
        unsafe { self.bn2binpad(out.as_mut_ptr(), len)? };
        // SAFETY: bn2binpad wrote all len bytes (it returned Ok).
        unsafe { out.set_len(len) };
        Ok(out)
    }

    /// Writes the value big-endian, right-aligned, into all of `out`
    /// (secret memory the caller owns); fails when it does not fit.
    pub(crate) fn write_be_padded(&self, out: &mut [u8]) -> Result<(), RsaError> {
        // SAFETY: out is valid for writes of its length.
        unsafe { self.bn2binpad(out.as_mut_ptr(), out.len()) }
    }

    /// BN_bn2binpad into `len` bytes at `to`: every byte written on `Ok`,
    /// none on `Err` (the value does not fit, or `len` is beyond `c_int`).
    ///
    /// # Safety
    /// `to` must be valid for writes of `len` bytes (initialised or not).
    #[inline]
    unsafe fn bn2binpad(&self, to: *mut u8, len: usize) -> Result<(), RsaError> {
        let clen =
            c_int::try_from(len).map_err(|_| RsaError::bad_input("output length is too large"))?;
        // SAFETY: the caller gives len writable bytes at to; BN_bn2binpad
        // writes exactly that many or fails (-1) if the value does not fit.
        let r = unsafe { openssl_sys::BN_bn2binpad(self.as_ptr(), to, clen) };
        if r < 0 {
            return Err(RsaError::bad_input(
                "integer does not fit its output buffer",
            ));
        }
        Ok(())
    }

    /// Writes the value as little-endian 64-bit limbs into all of `out`
    /// (secret memory the caller owns), zero-extended; fails when it does
    /// not fit. The conversion is libcrypto's, the same as
    /// `write_be_padded`'s, in the other byte order.
    pub(crate) fn write_limbs(&self, out: &mut [u64]) -> Result<(), RsaError> {
        let len = out
            .len()
            .checked_mul(8)
            .ok_or_else(|| RsaError::bad_input("output length is too large"))?;
        // SAFETY: out is valid for writes of out.len() * 8 = len bytes, and
        // u8 has no alignment requirement.
        unsafe { self.bn2lebinpad(out.as_mut_ptr().cast::<u8>(), len)? };
        // Little-endian bytes are the limbs' own layout on little-endian
        // hosts (a no-op there); swapped on big-endian ones (s390x).
        for limb in out.iter_mut() {
            *limb = u64::from_le(*limb);
        }
        Ok(())
    }

    /// The value as little-endian bytes filling whole 64-bit limbs, in a
    /// [`SecretBytes`] (the secure heap when the application has one): a
    /// secret key part kept for limb arithmetic.
    pub(crate) fn to_le_limb_bytes(&self) -> Result<SecretBytes, RsaError> {
        let len = self.num_bytes().div_ceil(8).max(1) * 8;
        let mut out = SecretBytes::zeroed(len);
        // SAFETY: out is valid for writes of its len bytes.
        unsafe { self.bn2lebinpad(out.as_mut_ptr(), len)? };
        Ok(out)
    }

    /// [`Bn::bn2binpad`] in little-endian byte order (BN_bn2lebinpad).
    ///
    /// # Safety
    /// `to` must be valid for writes of `len` bytes (initialised or not).
    #[inline]
    unsafe fn bn2lebinpad(&self, to: *mut u8, len: usize) -> Result<(), RsaError> {
        let clen =
            c_int::try_from(len).map_err(|_| RsaError::bad_input("output length is too large"))?;
        // SAFETY: the caller gives len writable bytes at to; BN_bn2lebinpad
        // writes exactly that many or fails (-1) if the value does not fit.
        let r = unsafe { BN_bn2lebinpad(self.as_ptr(), to, clen) };
        if r < 0 {
            return Err(RsaError::bad_input(
                "integer does not fit its output buffer",
            ));
        }
        Ok(())
    }

    /// Sets the value from little-endian 64-bit limbs, where it lives
    /// unchanged. `limbs` is left in little-endian byte order (the same on
    /// little-endian hosts): the caller's buffer, wiped by its owner.
    pub(crate) fn set_limbs(&mut self, limbs: &mut [u64]) -> Result<(), RsaError> {
        let len = limbs
            .len()
            .checked_mul(8)
            .and_then(|len| c_int::try_from(len).ok())
            .ok_or_else(|| RsaError::bad_input("integer is too long"))?;
        for limb in limbs.iter_mut() {
            *limb = limb.to_le();
        }
        // SAFETY: limbs is valid for len = limbs.len() * 8 bytes, now in
        // little-endian byte order; u8 has no alignment requirement; self
        // is a valid BIGNUM that BN_lebin2bn overwrites and returns.
        let r = unsafe { BN_lebin2bn(limbs.as_ptr().cast::<u8>(), len, self.0.as_ptr()) };
        if r.is_null() {
            return Err(RsaError::libcrypto("libcrypto BN_lebin2bn failed"));
        }
        Ok(())
    }

    /// Secret bytes, minimal length, in a zeroizing buffer.
    pub(crate) fn to_be_secret(&self) -> Zeroizing<Vec<u8>> {
        Zeroizing::new(self.to_be())
    }
}

/// An owned BN_CTX (scratch space for one thread at a time).
pub(crate) struct BnCtx(NonNull<BN_CTX>);

impl Drop for BnCtx {
    fn drop(&mut self) {
        // SAFETY: owned, freed once. BN_CTX_free clears the temporaries it
        // handed out (they were obtained with BN_CTX_get inside libcrypto).
        unsafe { openssl_sys::BN_CTX_free(self.0.as_ptr()) }
    }
}

impl BnCtx {
    /// Scratch space for secrets, drawing randomness from `libctx`.
    pub(crate) fn new(libctx: LibCtx) -> Result<BnCtx, RsaError> {
        // SAFETY: libctx is NULL or live (LibCtx::from_ptr's contract); the
        // secure variant keeps temporaries in the secure heap when one is
        // configured, and clears them either way.
        Self::wrap(unsafe { BN_CTX_secure_new_ex(libctx.as_ptr()) })
    }

    /// Scratch space for public operations only (no secrets pass through
    /// it, so it skips the secure heap and the clearing).
    pub(crate) fn new_public() -> Result<BnCtx, RsaError> {
        // SAFETY: NULL selects the default library context; public
        // operations draw no random numbers.
        Self::wrap(unsafe { BN_CTX_new_ex(std::ptr::null_mut()) })
    }

    fn wrap(p: *mut BN_CTX) -> Result<BnCtx, RsaError> {
        NonNull::new(p)
            .map(BnCtx)
            .ok_or_else(|| RsaError::libcrypto("libcrypto BN_CTX_new failed (out of memory)"))
    }

    /// `&mut self`: a BN_CTX must never be used by two calls at once.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut BN_CTX {
        self.0.as_ptr()
    }
}

/// A Montgomery context for an odd modulus, set up once and then only read.
pub(crate) struct MontCtx(NonNull<BN_MONT_CTX>);

// SAFETY: heap memory without thread affinity.
unsafe impl Send for MontCtx {}
// SAFETY: after `new`, libcrypto only reads a BN_MONT_CTX passed as the
// `in_mont`/`mont` argument of the exponentiation and multiplication
// functions (OpenSSL itself shares these contexts between threads in its
// RSA key cache), so concurrent use through `&MontCtx` is sound.
unsafe impl Sync for MontCtx {}

impl Drop for MontCtx {
    fn drop(&mut self) {
        // SAFETY: owned, freed once; BN_MONT_CTX_free clears its BIGNUMs.
        unsafe { BN_MONT_CTX_free(self.0.as_ptr()) }
    }
}

impl MontCtx {
    pub(crate) fn new(m: &Bn, ctx: &mut BnCtx) -> Result<MontCtx, RsaError> {
        if !m.is_odd() {
            return Err(RsaError::invalid_key("Montgomery modulus must be odd"));
        }
        // SAFETY: no preconditions; NULL handled below.
        let p = unsafe { BN_MONT_CTX_new() };
        let mont = NonNull::new(p)
            .map(MontCtx)
            .ok_or_else(|| RsaError::libcrypto("libcrypto BN_MONT_CTX_new failed"))?;
        check(
            // SAFETY: valid context, modulus and BN_CTX; the context is not yet
            // shared.
            unsafe { BN_MONT_CTX_set(mont.ptr(), m.as_ptr(), ctx.as_mut_ptr()) },
            "BN_MONT_CTX_set",
        )?;
        Ok(mont)
    }

    /// The pointer for libcrypto's `BN_MONT_CTX *` parameters, which only
    /// read it (see the `Sync` impl).
    fn ptr(&self) -> *mut BN_MONT_CTX {
        self.0.as_ptr()
    }
}

mod arith;
pub(crate) mod ct_mont;
pub(crate) mod inverse;
pub(crate) mod prime;
pub(crate) mod progress;

pub(crate) use arith::*;

/// Operands for tests of arithmetic modulo `m` (odd, above 1): zero, one,
/// m - 1, a value whose top limbs are zero (as a block with no padding),
/// and `random` values below m.
#[cfg(test)]
pub(crate) fn test_operands(m: &Bn, random: usize, rng: &crate::random::Random) -> Vec<Bn> {
    let mut m_minus_1 = Bn::new().unwrap();
    m_minus_1.copy_from(m).unwrap();
    sub_word(&mut m_minus_1, 1).unwrap();
    let mut values = vec![
        Bn::new().unwrap(),
        Bn::from_be(&[1]).unwrap(),
        m_minus_1,
        Bn::from_be(&[0x41; 7]).unwrap(),
    ];
    for _ in 0..random {
        values.push(prime::rand_range(m, rng).unwrap());
    }
    values
}
