//! RSA and RSA-PSS key generation: the generation context, its
//! parameters, and the generation itself.

use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::Arc;

use ibmca_shim::{ErrorKind, KeygenMethod, RsaKey};

use super::pss::PssFields;
use super::SELECT_KEYPAIR;
use crate::boundary::{free_object, guard, into_object, ProviderObject};
use crate::context::ProvCtx;
use crate::error::{fail, Error, Reason, Result};
use crate::ffi::{self, OSSL_CALLBACK, OSSL_PARAM};
use crate::key::{boxed, KeyKind};
use crate::params::{self, int_param, param, size_param, ParamTable, END, UINT, UTF8};

pub struct GenCtx {
    prov: *const ProvCtx,
    kind: KeyKind,
    selection: c_int,
    bits: u32,
    e: Vec<u8>,
    pss: PssFields,
}

impl ProviderObject for GenCtx {
    fn provider(&self) -> *const ProvCtx {
        self.prov
    }
}

impl GenCtx {
    fn set(&mut self, params: *const OSSL_PARAM) -> Result<()> {
        // SAFETY: `params` is the caller's terminated array (or NULL).
        unsafe {
            if let Some(p) = params::find(params, ffi::OSSL_PKEY_PARAM_RSA_BITS) {
                let bits = params::get_size(p)?;
                if bits < ibmca_shim::MIN_BITS as usize {
                    return fail(
                        Reason::KeySizeTooSmall,
                        format!(
                            "RSA key size {bits} is below the minimum of {} bits",
                            ibmca_shim::MIN_BITS
                        ),
                    );
                }
                // Too large is decided at generation, from the size the
                // method yields (the default provider sets no maximum).
                self.bits = u32::try_from(bits).unwrap_or(u32::MAX);
            }
            if let Some(p) = params::find(params, ffi::OSSL_PKEY_PARAM_RSA_PRIMES) {
                let primes = params::get_size(p)?;
                if primes != 2 {
                    return fail(
                        Reason::Unsupported,
                        format!("RSA keys with {primes} primes are not supported (only 2)"),
                    );
                }
            }
            if let Some(p) = params::find(params, ffi::OSSL_PKEY_PARAM_RSA_E) {
                // Checked when the key is generated (odd, > 1), where the
                // default provider checks it.
                let e = params::get_uint_be(p)?;
                self.e = params::strip_zeros(&e).to_vec();
            }
        }
        if self.kind == KeyKind::RsaPss {
            self.pss.update(self.prov(), params)?;
        }
        Ok(())
    }

    /// What the default provider refuses when it generates (not when the
    /// parameters are set), with its reasons: an even exponent or one
    /// below 3. rustica also refuses what would yield a modulus over
    /// OpenSSL's 16384-bit limit for RSA operations, a key the default
    /// provider would generate but could not use.
    fn check_for_generation(&self) -> Result<()> {
        let odd = self.e.last().is_some_and(|b| b & 1 == 1);
        if !odd || self.e == [1] {
            return fail(
                Reason::PubExponentOutOfRange,
                "the RSA public exponent must be odd and greater than 1 (65537 is usual)",
            );
        }
        let size = ibmca_shim::KeygenMethod::for_key(self.bits, &self.e).modulus_bits(self.bits);
        if size > ibmca_shim::MAX_BITS {
            return fail(
                Reason::KeySizeTooLarge,
                format!(
                    "an RSA key of {} bits would have a {size}-bit modulus, above OpenSSL's \
                     limit of {} bits for RSA operations",
                    self.bits,
                    ibmca_shim::MAX_BITS
                ),
            );
        }
        Ok(())
    }
}

fn gen_init(
    provctx: *mut c_void,
    kind: KeyKind,
    selection: c_int,
    params: *const OSSL_PARAM,
) -> *mut c_void {
    // SAFETY: provctx is ours.
    let prov = unsafe { ProvCtx::from_ptr(provctx) };
    guard(prov, ptr::null_mut(), || {
        let mut g = GenCtx {
            prov: provctx as *const ProvCtx,
            kind,
            selection,
            bits: 2048,
            e: vec![0x01, 0x00, 0x01],
            pss: PssFields::default(),
        };
        g.set(params)?;
        Ok(into_object(g))
    })
}

pub(super) unsafe extern "C" fn rsa_gen_init(
    provctx: *mut c_void,
    selection: c_int,
    params: *const OSSL_PARAM,
) -> *mut c_void {
    gen_init(provctx, KeyKind::Rsa, selection, params)
}

pub(super) unsafe extern "C" fn pss_gen_init(
    provctx: *mut c_void,
    selection: c_int,
    params: *const OSSL_PARAM,
) -> *mut c_void {
    gen_init(provctx, KeyKind::RsaPss, selection, params)
}

pub(super) unsafe extern "C" fn rsa_gen_set_params(
    genctx: *mut c_void,
    params: *const OSSL_PARAM,
) -> c_int {
    // SAFETY: genctx is ours or NULL.
    let Some(g) = (unsafe { (genctx as *mut GenCtx).as_mut() }) else {
        return 0;
    };
    let prov = g.prov;
    // SAFETY: live provider context.
    guard(Some(unsafe { &*prov }), 0, || g.set(params).map(|_| 1))
}

static GEN_SETTABLE: ParamTable<4> = ParamTable([
    size_param(ffi::OSSL_PKEY_PARAM_RSA_BITS),
    size_param(ffi::OSSL_PKEY_PARAM_RSA_PRIMES),
    param(ffi::OSSL_PKEY_PARAM_RSA_E, UINT),
    END,
]);

pub(super) unsafe extern "C" fn rsa_gen_settable_params(
    _genctx: *mut c_void,
    _provctx: *mut c_void,
) -> *const OSSL_PARAM {
    GEN_SETTABLE.as_ptr()
}

static PSS_GEN_SETTABLE: ParamTable<8> = ParamTable([
    size_param(ffi::OSSL_PKEY_PARAM_RSA_BITS),
    size_param(ffi::OSSL_PKEY_PARAM_RSA_PRIMES),
    param(ffi::OSSL_PKEY_PARAM_RSA_E, UINT),
    param(ffi::OSSL_PKEY_PARAM_RSA_DIGEST, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_MASKGENFUNC, UTF8),
    param(ffi::OSSL_PKEY_PARAM_RSA_MGF1_DIGEST, UTF8),
    int_param(ffi::OSSL_PKEY_PARAM_RSA_PSS_SALTLEN),
    END,
]);

pub(super) unsafe extern "C" fn pss_gen_settable_params(
    _genctx: *mut c_void,
    _provctx: *mut c_void,
) -> *const OSSL_PARAM {
    PSS_GEN_SETTABLE.as_ptr()
}

/// Tells the application's callback one generation event, as the default
/// provider's rsa_gencb does: "potential" and "iteration" as ints. Whether
/// to go on.
///
/// # Safety
/// `cb` and `cbarg` are what the core passed to `rsa_gen`, which has not
/// returned.
unsafe fn tell(
    cb: unsafe extern "C" fn(*const OSSL_PARAM, *mut c_void) -> c_int,
    cbarg: *mut c_void,
    potential: i32,
    iteration: i32,
) -> bool {
    let (mut potential, mut iteration) = (potential, iteration);
    let params = [
        OSSL_PARAM {
            data: &mut potential as *mut i32 as *mut c_void,
            ..int_param(ffi::OSSL_GEN_PARAM_POTENTIAL)
        },
        OSSL_PARAM {
            data: &mut iteration as *mut i32 as *mut c_void,
            ..int_param(ffi::OSSL_GEN_PARAM_ITERATION)
        },
        END,
    ];
    // SAFETY: the array is terminated and its two ints live until the call
    // returns; the core's callback only reads them.
    unsafe { cb(params.as_ptr(), cbarg) != 0 }
}

/// What the default provider leaves when the application's callback
/// stopped the generation: the classic method's rsa_multiprime_keygen
/// raises RSA's "BN lib"; SP 800-56B's path raises nothing.
fn cancelled(g: &GenCtx, e: ibmca_shim::RsaError) -> Result<*mut c_void> {
    match KeygenMethod::for_key(g.bits, &g.e) {
        KeygenMethod::Classic => Err(Error::new(Reason::BnLib, e.message())),
        KeygenMethod::Sp800_56b => Ok(ptr::null_mut()),
    }
}

pub(super) unsafe extern "C" fn rsa_gen(
    genctx: *mut c_void,
    cb: OSSL_CALLBACK,
    cbarg: *mut c_void,
) -> *mut c_void {
    // SAFETY: genctx is ours or NULL.
    let Some(g) = (unsafe { (genctx as *const GenCtx).as_ref() }) else {
        return ptr::null_mut();
    };
    guard(Some(g.prov()), ptr::null_mut(), || {
        if g.selection & SELECT_KEYPAIR == 0 {
            return Ok(boxed(g.prov, g.kind, None, g.pss.restrictions()));
        }
        g.check_for_generation()?;
        let ctx = g.prov().op_ctx();
        let generated = match cb {
            // The shim calls `progress` on this thread only, before
            // generate_reporting returns.
            // SAFETY: `cb` and `cbarg` are the core's for this call.
            Some(cb) => RsaKey::generate_reporting(&ctx, g.bits, &g.e, &mut |p, i| unsafe {
                tell(cb, cbarg, p, i)
            }),
            None => RsaKey::generate_in(&ctx, g.bits, &g.e),
        };
        let key = match generated {
            Err(e) if e.kind() == ErrorKind::Cancelled => return cancelled(g, e),
            r => r.map_err(|e| Error::from_rsa("RSA key generation failed", e))?,
        };
        Ok(boxed(
            g.prov,
            g.kind,
            Some(Arc::new(key)),
            g.pss.restrictions(),
        ))
    })
}

pub(super) unsafe extern "C" fn rsa_gen_cleanup(genctx: *mut c_void) {
    // SAFETY: genctx is NULL or came from into_object::<GenCtx> in gen_init.
    unsafe { free_object::<GenCtx>(genctx) }
}
