//! Random numbers for one operation (blinding, primes, padding, salts).
//!
//! They come from the random generator of the library context rustica was
//! loaded into, as the default provider's do. That generator is fetched with
//! the application's default properties, so an application that selects
//! rustica strictly (`provider=rustica` as its default properties) leaves it
//! with no DRBG to fetch: no provider matches. Then, and only then, the
//! operation instantiates a DRBG of its own from the same context with a
//! query that cannot select rustica ("provider!=rustica" overrides the
//! inherited provider clause), seeded by that provider from the core's
//! entropy. Any other failure of the context's generator is the host's
//! policy speaking (a `[random]` section naming a seed source or DRBG that
//! cannot be instantiated, an error state, a failing RAND_METHOD) and fails
//! the operation, exactly where the default provider fails. The two are
//! told apart by whether the context's default properties admit any
//! CTR-DRBG at all, not by `RAND_get0_private` returning NULL: that also
//! happens when a configured generator exists and cannot be instantiated. It lives as long as the operation's [`Random`], so rustica holds
//! no OpenSSL object across operations and none at teardown, and processes
//! whose context has a working generator never make one.

use std::cell::OnceCell;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::ptr::NonNull;

use crate::error::RsaError;
use crate::libctx::LibCtx;

#[repr(C)]
struct EvpRand {
    _opaque: [u8; 0],
}
#[repr(C)]
struct EvpRandCtx {
    _opaque: [u8; 0],
}

/// OSSL_PARAM as <openssl/core.h> lays it out.
#[repr(C)]
struct Param {
    key: *const c_char,
    data_type: c_uint,
    data: *mut c_void,
    data_size: usize,
    return_size: usize,
}

const OSSL_PARAM_UTF8_STRING: c_uint = 4;

extern "C" {
    fn RAND_bytes_ex(ctx: *mut c_void, buf: *mut u8, num: usize, strength: c_uint) -> c_int;
    fn RAND_priv_bytes_ex(ctx: *mut c_void, buf: *mut u8, num: usize, strength: c_uint) -> c_int;
    fn EVP_RAND_fetch(
        ctx: *mut c_void,
        algorithm: *const c_char,
        props: *const c_char,
    ) -> *mut EvpRand;
    fn EVP_RAND_free(rand: *mut EvpRand);
    fn EVP_RAND_CTX_new(rand: *mut EvpRand, parent: *mut EvpRandCtx) -> *mut EvpRandCtx;
    fn EVP_RAND_CTX_free(ctx: *mut EvpRandCtx);
    fn EVP_RAND_CTX_set_params(ctx: *mut EvpRandCtx, params: *const Param) -> c_int;
    fn EVP_RAND_instantiate(
        ctx: *mut EvpRandCtx,
        strength: c_uint,
        prediction_resistance: c_int,
        pstr: *const u8,
        pstr_len: usize,
        params: *const Param,
    ) -> c_int;
    fn EVP_RAND_generate(
        ctx: *mut EvpRandCtx,
        out: *mut u8,
        outlen: usize,
        strength: c_uint,
        prediction_resistance: c_int,
        addin: *const u8,
        addin_len: usize,
    ) -> c_int;
    fn ERR_set_mark() -> c_int;
    fn ERR_pop_to_mark() -> c_int;
}

/// Never selects rustica (which offers no random generator anyway), and
/// overrides an inherited `provider=...` default property.
const QUERY: &CStr = c"provider!=rustica";
/// The DRBG OpenSSL's library contexts use by default, with its default
/// cipher.
const DRBG: &CStr = c"CTR-DRBG";
const DRBG_CIPHER: &CStr = c"AES-256-CTR";
/// Personalisation string: separates this DRBG's output from any other
/// instantiated from the same entropy.
const PERSONALISATION: &[u8] = b"rustica operation DRBG";

/// A DRBG owned by one operation.
struct OwnDrbg(NonNull<EvpRandCtx>);

// SAFETY: the DRBG context is owned by this value alone and used through
// `&self` by one thread at a time (Random is not Sync); moving it to
// another thread hands that thread sole use of it, which OpenSSL allows
// for an EVP_RAND_CTX.
unsafe impl Send for OwnDrbg {}

impl Drop for OwnDrbg {
    fn drop(&mut self) {
        // SAFETY: created by EVP_RAND_CTX_new and owned by this value; the
        // operation that made it is over, so nothing else uses it.
        unsafe { EVP_RAND_CTX_free(self.0.as_ptr()) }
    }
}

impl OwnDrbg {
    fn new(libctx: LibCtx) -> Result<OwnDrbg, RsaError> {
        // Errors of a failed attempt stay off the caller's queue: the
        // caller reports one error of its own.
        // SAFETY: pairs with ERR_pop_to_mark at the end of this function.
        unsafe { ERR_set_mark() };
        let made = Self::instantiate(libctx);
        // SAFETY: drops what the attempt queued, down to the mark above.
        unsafe { ERR_pop_to_mark() };
        made.ok_or_else(|| {
            RsaError::libcrypto(
                "no random generator: the library context's DRBG failed and no provider \
                 other than rustica offers CTR-DRBG with AES-256-CTR",
            )
        })
    }

    fn instantiate(libctx: LibCtx) -> Option<OwnDrbg> {
        // SAFETY: libctx is NULL or live (LibCtx's contract); the strings
        // are NUL-terminated constants.
        let rand = unsafe { EVP_RAND_fetch(libctx.as_ptr(), DRBG.as_ptr(), QUERY.as_ptr()) };
        if rand.is_null() {
            return None;
        }
        // SAFETY: rand is a fetched method; a NULL parent makes the DRBG
        // seed itself through its provider's entropy upcall. The context
        // keeps its own reference to the method, so ours is released.
        let ctx = unsafe {
            let ctx = EVP_RAND_CTX_new(rand, std::ptr::null_mut());
            EVP_RAND_free(rand);
            ctx
        };
        let drbg = OwnDrbg(NonNull::new(ctx)?);
        let text = |key: &'static CStr, value: &'static CStr| Param {
            key: key.as_ptr(),
            data_type: OSSL_PARAM_UTF8_STRING,
            data: value.as_ptr() as *mut c_void,
            data_size: value.to_bytes().len(),
            return_size: usize::MAX,
        };
        // The cipher is fetched by the DRBG with these properties, which
        // must not inherit `provider=rustica` either.
        let params = [
            text(c"cipher", DRBG_CIPHER),
            text(c"properties", QUERY),
            Param {
                key: std::ptr::null(),
                data_type: 0,
                data: std::ptr::null_mut(),
                data_size: 0,
                return_size: 0,
            },
        ];
        // SAFETY: a fresh context and a terminated parameter array whose
        // strings outlive the calls (constants).
        let ok = unsafe {
            EVP_RAND_CTX_set_params(drbg.0.as_ptr(), params.as_ptr()) == 1
                && EVP_RAND_instantiate(
                    drbg.0.as_ptr(),
                    0,
                    0,
                    PERSONALISATION.as_ptr(),
                    PERSONALISATION.len(),
                    std::ptr::null(),
                ) == 1
        };
        ok.then_some(drbg)
    }

    fn fill(&self, buf: &mut [u8]) -> bool {
        // SAFETY: buf is writable for its length; the DRBG is instantiated
        // and used by this operation's thread only.
        unsafe {
            EVP_RAND_generate(
                self.0.as_ptr(),
                buf.as_mut_ptr(),
                buf.len(),
                0,
                0,
                std::ptr::null(),
                0,
            ) == 1
        }
    }
}

/// Whether the context's default properties admit a CTR-DRBG: if they do,
/// the context's generator could be made by the application's own rules,
/// and its failure is not rustica's to work around. Fetching has no side
/// effect on the context's generators (unlike `RAND_get0_private`, which
/// makes and seeds one for the calling thread).
fn drbg_selectable(libctx: LibCtx) -> bool {
    // SAFETY: libctx is NULL or live (LibCtx's contract); a NULL query
    // means the context's default properties; the name is a constant.
    let rand = unsafe { EVP_RAND_fetch(libctx.as_ptr(), DRBG.as_ptr(), std::ptr::null()) };
    if rand.is_null() {
        return false;
    }
    // SAFETY: our own reference from the fetch above, released once.
    unsafe { EVP_RAND_free(rand) };
    true
}

/// Whether random bytes may become public (padding, salts) or must stay
/// secret (blinding, primes): the library context keeps a generator for
/// each, as OpenSSL's RAND_bytes and RAND_priv_bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Secrecy {
    Public,
    Private,
}

/// The random source of one operation; cheap to make: nothing happens
/// until the first bytes are asked for. Not shared between threads.
pub struct Random {
    libctx: LibCtx,
    own: OnceCell<OwnDrbg>,
    /// Unit tests: a fixed stream instead (same seed, same numbers).
    #[cfg(test)]
    fixed: Option<std::cell::Cell<u64>>,
}

impl Random {
    pub fn new(libctx: LibCtx) -> Random {
        Random {
            libctx,
            own: OnceCell::new(),
            #[cfg(test)]
            fixed: None,
        }
    }

    /// A generator apart from the library context's: a DRBG of its own,
    /// seeded from the context's entropy source, so that drawing from it
    /// leaves the context's generator where it was. `None` when it cannot
    /// be made.
    pub(crate) fn independent(libctx: LibCtx) -> Option<Random> {
        let own = OwnDrbg::new(libctx).ok()?;
        let r = Random::new(libctx);
        let _ = r.own.set(own);
        Some(r)
    }

    /// A deterministic stream (splitmix64) for tests that need the same
    /// numbers twice; nothing cryptographic.
    #[cfg(test)]
    pub(crate) fn fixed(seed: u64) -> Random {
        let mut r = Random::new(LibCtx::DEFAULT);
        r.fixed = Some(std::cell::Cell::new(seed));
        r
    }

    /// The library context this source draws from first.
    pub fn libctx(&self) -> LibCtx {
        self.libctx
    }

    /// Fills `buf`.
    pub fn fill(&self, buf: &mut [u8], secrecy: Secrecy) -> Result<(), RsaError> {
        if buf.is_empty() {
            return Ok(());
        }
        #[cfg(test)]
        if let Some(state) = &self.fixed {
            for chunk in buf.chunks_mut(8) {
                let mut z = state.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
                state.set(z);
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
            }
            return Ok(());
        }
        if let Some(own) = self.own.get() {
            return own
                .fill(buf)
                .then_some(())
                .ok_or_else(|| RsaError::libcrypto("rustica's DRBG failed to generate"));
        }
        // SAFETY: pairs with ERR_pop_to_mark below: a failure here is not
        // the caller's error (the fallback decides).
        unsafe { ERR_set_mark() };
        // SAFETY: buf is writable for its length; libctx is NULL or live.
        let ok = unsafe {
            let ctx = self.libctx.as_ptr();
            match secrecy {
                Secrecy::Public => RAND_bytes_ex(ctx, buf.as_mut_ptr(), buf.len(), 0),
                Secrecy::Private => RAND_priv_bytes_ex(ctx, buf.as_mut_ptr(), buf.len(), 0),
            }
        } == 1;
        // A generator that failed (an error state, a failing RAND_METHOD,
        // a `[random]` policy whose seed source or DRBG cannot be
        // instantiated) is the host's to answer for: the operation fails,
        // as it does in the default provider. Only a context whose default
        // properties admit no DRBG at all gets rustica's own.
        let selectable = !ok && drbg_selectable(self.libctx);
        // SAFETY: drops what a failed attempt queued, down to the mark.
        unsafe { ERR_pop_to_mark() };
        if ok {
            return Ok(());
        }
        if selectable {
            return Err(RsaError::libcrypto(
                "the library context's random generator failed to generate (the host's \
                 random configuration, or its generator's error state)",
            ));
        }
        let own = OwnDrbg::new(self.libctx)?;
        let own = self.own.get_or_init(|| own);
        own.fill(buf)
            .then_some(())
            .ok_or_else(|| RsaError::libcrypto("rustica's DRBG failed to generate"))
    }

    /// `len` random bytes.
    pub fn bytes(&self, len: usize, secrecy: Secrecy) -> Result<Vec<u8>, RsaError> {
        let mut v = vec![0u8; len];
        self.fill(&mut v, secrecy)?;
        Ok(v)
    }

    /// Whether this operation had to make a DRBG of its own (the library
    /// context's generator failed); for tests.
    pub fn uses_own_drbg(&self) -> bool {
        self.own.get().is_some()
    }
}
