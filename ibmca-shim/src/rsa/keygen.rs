//! Key generation: in software by the method OpenSSL's default provider
//! uses for the same size and exponent, and on libica (accepted only when
//! the key checks out).
//!
//! The default provider (crypto/rsa/rsa_gen.c) generates two-prime keys of
//! 2048 bits and more with e > 2^16 by SP 800-56B rev 2 (primes from FIPS
//! 186-5 A.1.6, see [`super::sp800_56b`]); smaller keys and e <= 2^16 get
//! its classic method, two random probable primes ([`classic`]). rustica
//! applies the same rule, so an A/B comparison differs only where the
//! arithmetic runs.

use std::cmp::Ordering;

use super::generated::GeneratedKey;
use super::key::{check_exponent, CrtIn};
use super::{sp800_56b, Context, KeyCheck, RsaKey, RsaParts, MAX_BITS, MIN_BITS};
use crate::bn::{self, prime, Bn, BnCtx};
use crate::error::{bad_input, ErrorKind, RsaError};
use crate::libica::convert::{self, CrtKey, ModExpoKey};
use crate::libica::Libica;
use crate::random::Random;

/// How a software key is generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeygenMethod {
    /// SP 800-56B rev 2 with FIPS 186-5 A.1.6 probable primes (auxiliary
    /// primes), d > 2^(nbits/2), |p-q| and |Xp-Xq| bounds, pairwise test.
    Sp800_56b,
    /// Two random probable primes of half the size each (OpenSSL's
    /// rsa_multiprime_keygen with two primes), d = e^-1 mod (p-1)(q-1).
    Classic,
}

impl KeygenMethod {
    /// The default provider's choice for a two-prime key.
    pub fn for_key(bits: u32, e: &[u8]) -> KeygenMethod {
        let e = crate::bn::Bn::from_be(e).map(|e| e.num_bits()).unwrap_or(0);
        if bits >= 2048 && e > 16 {
            KeygenMethod::Sp800_56b
        } else {
            KeygenMethod::Classic
        }
    }

    /// The modulus size a request for `bits` yields: SP 800-56B makes
    /// both primes nbits/2 bits long, so an odd size gives one bit less
    /// (as with the default provider).
    pub fn modulus_bits(self, bits: u32) -> u32 {
        match self {
            KeygenMethod::Sp800_56b => bits & !1,
            KeygenMethod::Classic => bits,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            KeygenMethod::Sp800_56b => {
                "SP 800-56B rev 2 (FIPS 186-5 A.1.6 probable primes from auxiliary primes)"
            }
            KeygenMethod::Classic => "OpenSSL's classic method (two random probable primes)",
        }
    }
}

impl RsaKey {
    pub(super) fn check_gen_params(bits: u32, e: &[u8]) -> Result<Bn, RsaError> {
        let size = KeygenMethod::for_key(bits, e).modulus_bits(bits);
        if bits < MIN_BITS || size > MAX_BITS {
            return bad_input(format!(
                "key size {bits} bits is outside the supported {MIN_BITS}..={MAX_BITS}"
            ));
        }
        let e = Bn::from_be(e)?;
        // The default provider's rule (ossl_rsa_check_public_exponent): odd
        // and greater than 1.
        check_exponent(&e).map_err(|_| {
            RsaError::new(
                ErrorKind::BadInput,
                "public exponent out of range: e must be odd and greater than 1",
            )
        })?;
        if e.num_bits() >= bits {
            return bad_input(format!(
                "public exponent e ({} bits) is not smaller than a {bits}-bit modulus",
                e.num_bits()
            ));
        }
        Ok(e)
    }

    /// Key generation on libica; the key is accepted only if it is a
    /// consistent key of exactly `bits` bits with exponent `e`.
    pub(super) fn generate_libica(
        rng: &Random,
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
        key.check_with(rng, KeyCheck::Pair)
            .map_err(|x| format!("libica generated an inconsistent key: {x}"))?;
        Ok(key)
    }

    /// A key generated in software by the default provider's method for
    /// `bits` and `e` (see [`KeygenMethod::for_key`]).
    pub(super) fn generate_software(
        ctx: &Context<'_>,
        bits: u32,
        e: &Bn,
    ) -> Result<RsaKey, RsaError> {
        let rng = Random::new(ctx.libctx);
        let mut bn = BnCtx::new(ctx.libctx)?;
        let e = e.dup()?;
        let parts = match KeygenMethod::for_key(bits, &e.to_be()) {
            KeygenMethod::Sp800_56b => {
                sp800_56b::generate(bits, &e, ctx.openssl_version(), &rng, &mut bn)?
            }
            KeygenMethod::Classic => classic(bits, &e, &rng, &mut bn)?,
        };
        let GeneratedKey { n, d, p, q } = parts;
        let crt = CrtIn {
            p,
            q,
            dp: None,
            dq: None,
            qinv: None,
        };
        Self::assemble(n, e, Some(d), Some(crt), &mut bn)
    }
}

/// OpenSSL's classic two-prime method (rsa_multiprime_keygen): p of
/// ceil(bits/2) bits and q of floor(bits/2) bits, each a random prime with
/// its two top bits set and p-1, q-1 prime to e; q is drawn again until p
/// and q differ and n has exactly `bits` bits with a top nibble of at least
/// 0x9 (after four tries both are drawn again); d = e^-1 mod (p-1)(q-1).
fn classic(bits: u32, e: &Bn, rng: &Random, bn: &mut BnCtx) -> Result<GeneratedKey, RsaError> {
    let sizes = [bits.div_ceil(2), bits / 2];
    let prime_for_e = |size: u32, other: Option<&Bn>, bn: &mut BnCtx| -> Result<Bn, RsaError> {
        loop {
            let p = prime::classic_prime(size, rng, bn)?;
            if other.is_some_and(|o| o.cmp(&p) == Ordering::Equal) {
                continue;
            }
            let p1 = bn::minus_one(&p)?;
            if bn::gcd(&p1, e, bn)?.is_one() {
                return Ok(p);
            }
        }
    };
    'restart: loop {
        let p = prime_for_e(sizes[0], None, bn)?;
        for _ in 0..=4 {
            let q = prime_for_e(sizes[1], Some(&p), bn)?;
            let mut n = Bn::new()?;
            bn::mul(&mut n, &p, &q, bn)?;
            let top = bn::shift_right(&n, bits - 4)?;
            if !(0x9..=0xf).contains(&top.to_be().first().copied().unwrap_or(0)) {
                continue;
            }
            let (mut p, mut q) = (p, q);
            if p.cmp(&q) == Ordering::Less {
                std::mem::swap(&mut p, &mut q);
            }
            let mut phi = Bn::new()?;
            let (p1, q1) = (bn::minus_one(&p)?, bn::minus_one(&q)?);
            bn::mul(&mut phi, &p1, &q1, bn)?;
            phi.set_consttime();
            let Some(mut d) = bn::mod_inverse(e, &phi, bn)? else {
                return Err(RsaError::new(
                    ErrorKind::KeyGeneration,
                    "key generation failed: e has no inverse modulo (p-1)(q-1)",
                ));
            };
            d.set_consttime();
            return Ok(GeneratedKey { n, d, p, q });
        }
        continue 'restart;
    }
}
