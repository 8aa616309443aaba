//! Key generation: in software, and on libica (accepted only when the
//! key checks out).

use std::cmp::Ordering;

use super::key::{check_exponent, lambda, CrtIn};
use super::{KeyCheck, RsaKey, RsaParts, MAX_BITS, MIN_BITS};
use crate::bn::{self, Bn, BnCtx, LibCtx};
use crate::error::{bad_input, RsaError};
use crate::libica::convert::{self, CrtKey, ModExpoKey};
use crate::libica::Libica;

impl RsaKey {
    pub(super) fn check_gen_params(bits: u32, e: &[u8]) -> Result<Bn, RsaError> {
        if !(MIN_BITS..=MAX_BITS).contains(&bits) {
            return bad_input(format!(
                "key size {bits} bits is outside the supported {MIN_BITS}..={MAX_BITS}"
            ));
        }
        let e = Bn::from_be(e)?;
        check_exponent(&e)?;
        if e.num_bits() >= bits / 2 {
            return bad_input(format!(
                "public exponent e ({} bits) is too large for a {bits}-bit key",
                e.num_bits()
            ));
        }
        Ok(e)
    }

    /// Key generation on libica; the key is accepted only if it is a
    /// consistent key of exactly `bits` bits with exponent `e`.
    pub(super) fn generate_libica(
        libctx: LibCtx,
        ica: &Libica,
        bits: u32,
        e: &Bn,
    ) -> Result<RsaKey, String> {
        let key_length = (bits as usize).div_ceil(8);
        let e_bytes = e.to_be();
        // libica reads the exponent from the last sizeof(unsigned long)
        // bytes of the public key's exponent buffer.
        if e_bytes.len() > std::mem::size_of::<std::os::raw::c_ulong>() {
            return Err("public exponent too long for libica key generation".into());
        }
        let mut public = ModExpoKey::empty(key_length);
        let e_buf = convert::right_aligned_bytes(&e_bytes, key_length)
            .ok_or("public exponent does not fit the key")?;
        public.exponent_mut().copy_from_slice(&e_buf);
        let mut private = CrtKey::empty(key_length);
        match ica.rsa_key_generate_crt(bits, &mut public, &mut private) {
            None => return Err("libica has no ica_rsa_key_generate_crt".into()),
            Some(Err(x)) => return Err(x.to_string()),
            Some(Ok(())) => {}
        }
        // libica's own p > q normalisation, where it has one (from_parts
        // normalises either way).
        if let Some(Err(x)) = ica.rsa_crt_key_check(&mut private) {
            return Err(x.to_string());
        }
        let secret = |b: &[u8]| Some(zeroize::Zeroizing::new(b.to_vec()));
        let parts = RsaParts {
            n: public.modulus().to_vec(),
            e: e_bytes,
            d: None,
            p: secret(&private.p),
            q: secret(&private.q),
            dp: secret(&private.dp),
            dq: secret(&private.dq),
            qinv: secret(&private.qinv),
        };
        let key = RsaKey::from_parts(parts)
            .map_err(|x| format!("libica generated an unusable key: {x}"))?;
        if key.bits != bits {
            return Err(format!(
                "libica generated a {}-bit key instead of {bits} bits",
                key.bits
            ));
        }
        key.check_in(libctx, KeyCheck::Pair)
            .map_err(|x| format!("libica generated an inconsistent key: {x}"))?;
        Ok(key)
    }

    pub(super) fn generate_software(libctx: LibCtx, bits: u32, e: &Bn) -> Result<RsaKey, RsaError> {
        let e = e.dup()?;
        let pbits = bits.div_ceil(2);
        let qbits = bits - pbits;
        let min_diff_bits = bits / 2 - 100;
        let mut ctx = BnCtx::new(libctx)?;
        let prime_for_e = |nbits: u32, ctx: &mut BnCtx| -> Result<Bn, RsaError> {
            loop {
                let p = bn::generate_prime(nbits, ctx)?;
                let p1 = bn::minus_one(&p)?;
                if bn::gcd(&e, &p1, ctx)?.is_one() {
                    return Ok(p);
                }
            }
        };
        for _ in 0..100 {
            let mut p = prime_for_e(pbits, &mut ctx)?;
            let mut q = prime_for_e(qbits, &mut ctx)?;
            let mut diff = Bn::new()?;
            bn::sub(&mut diff, &p, &q)?;
            bn::set_non_negative(&mut diff);
            if diff.num_bits() <= min_diff_bits {
                continue;
            }
            if p.cmp(&q) == Ordering::Less {
                std::mem::swap(&mut p, &mut q);
            }
            let mut n = Bn::new()?;
            bn::mul(&mut n, &p, &q, &mut ctx)?;
            if n.num_bits() != bits {
                continue;
            }
            let l = lambda(&p, &q, &mut ctx)?;
            let Some(mut d) = bn::mod_inverse(&e, &l, &mut ctx)? else {
                continue;
            };
            d.set_consttime();
            if d.num_bits() <= bits / 2 {
                continue;
            }
            let crt = CrtIn {
                p,
                q,
                dp: None,
                dq: None,
                qinv: None,
            };
            return Self::assemble(n, e, Some(d), Some(crt), &mut ctx);
        }
        Err(RsaError::new(
            crate::error::ErrorKind::KeyGeneration,
            "key generation failed: no suitable primes found",
        ))
    }
}
