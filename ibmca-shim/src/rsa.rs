//! The RSA primitive: keys, the private operation (blind → CRT → check →
//! unblind) and the public operation.

use std::cmp::Ordering;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use zeroize::Zeroizing;

use crate::backend::{self, Router};
use crate::bn::{self, Bn, BnCtx, LibCtx, MontCtx};
use crate::libica::convert::{self, CrtKey, ModExpoKey};
use crate::libica::Libica;
use crate::software;
use crate::stats::{self, Backend, Op};

/// Smallest modulus size accepted.
pub const MIN_BITS: u32 = 512;
/// Largest modulus size accepted.
pub const MAX_BITS: u32 = 16384;
/// Moduli up to this size accept any public exponent below n.
pub const SMALL_MODULUS_BITS: u32 = 3072;
/// The largest public exponent for moduli over [`SMALL_MODULUS_BITS`].
pub const MAX_PUBEXP_BITS: u32 = 64;

/// A blinding pair is used this many times (squared after each use) before
/// a fresh one is drawn.
const BLINDING_USES: u32 = 32;

/// Key parts as big-endian unsigned byte strings (leading zeros allowed).
#[derive(Clone, Default)]
pub struct RsaParts {
    pub n: Vec<u8>,
    pub e: Vec<u8>,
    pub d: Option<Zeroizing<Vec<u8>>>,
    pub p: Option<Zeroizing<Vec<u8>>>,
    pub q: Option<Zeroizing<Vec<u8>>>,
    pub dp: Option<Zeroizing<Vec<u8>>>,
    pub dq: Option<Zeroizing<Vec<u8>>>,
    pub qinv: Option<Zeroizing<Vec<u8>>>,
}

impl fmt::Debug for RsaParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print secrets.
        f.debug_struct("RsaParts")
            .field("n_len", &self.n.len())
            .field("e", &self.e)
            .field("d", &self.d.is_some())
            .field("p", &self.p.is_some())
            .field("q", &self.q.is_some())
            .field("dp", &self.dp.is_some())
            .field("dq", &self.dq.is_some())
            .field("qinv", &self.qinv.is_some())
            .finish()
    }
}

/// An error with a message a person can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RsaError(pub String);

impl fmt::Display for RsaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RsaError {}

fn err<T>(msg: impl Into<String>) -> Result<T, RsaError> {
    Err(RsaError(msg.into()))
}

/// How much of a key [`RsaKey::check`] validates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyCheck {
    /// n and e.
    Public,
    /// n, e and the presence and range of d.
    Private,
    /// Everything: the private parts match the public ones.
    Pair,
}

/// CRT parts with their cached Montgomery contexts (p > q).
pub(crate) struct Crt {
    pub(crate) p: Bn,
    pub(crate) q: Bn,
    pub(crate) dp: Bn,
    pub(crate) dq: Bn,
    pub(crate) qinv: Bn,
    /// qinv * R mod p (Montgomery form for `mont_p`).
    pub(crate) qinv_mont: Bn,
    pub(crate) mont_p: MontCtx,
    pub(crate) mont_q: MontCtx,
}

struct Private {
    d: Bn,
    crt: Option<Crt>,
}

/// The blinding pair, both in Montgomery form for n: A = r^e, Ai = r^-1.
struct Blinding {
    a: Bn,
    ai: Bn,
    uses: u32,
    pid: libc::pid_t,
}

/// An RSA key. `Send + Sync`: share it behind an `Arc`.
pub struct RsaKey {
    n: Bn,
    e: Bn,
    bits: u32,
    size: usize,
    mont_n: MontCtx,
    private: Option<Private>,
    blinding: Mutex<Option<Blinding>>,
}

/// CRT input before completion: what the caller gave.
struct CrtIn {
    p: Bn,
    q: Bn,
    dp: Option<Bn>,
    dq: Option<Bn>,
    qinv: Option<Bn>,
}

fn secret(bytes: &Option<Zeroizing<Vec<u8>>>) -> Result<Option<Bn>, RsaError> {
    match bytes {
        None => Ok(None),
        Some(b) => {
            let mut v = Bn::from_be(b)?;
            v.set_consttime();
            Ok(Some(v))
        }
    }
}

fn check_public(n: &Bn, e: &Bn) -> Result<(), RsaError> {
    let bits = n.num_bits();
    if !(MIN_BITS..=MAX_BITS).contains(&bits) {
        return err(format!(
            "modulus is {bits} bits, outside the supported {MIN_BITS}..={MAX_BITS}"
        ));
    }
    if !n.is_odd() {
        return err("modulus n is even");
    }
    check_exponent(e)?;
    if e.cmp(n) != Ordering::Less {
        return err("public exponent e is not smaller than the modulus n");
    }
    // As OpenSSL: a large e on a large modulus would make every public
    // operation (a peer's certificate, say) cost as much as a private one.
    let e_bits = e.num_bits();
    if bits > SMALL_MODULUS_BITS && e_bits > MAX_PUBEXP_BITS {
        return err(format!(
            "public exponent e is {e_bits} bits; at most {MAX_PUBEXP_BITS} bits are accepted \
             for a modulus over {SMALL_MODULUS_BITS} bits ({bits} bits)"
        ));
    }
    Ok(())
}

fn check_exponent(e: &Bn) -> Result<(), RsaError> {
    if e.cmp_u64(3)? == Ordering::Less {
        return err("public exponent e must be at least 3");
    }
    if !e.is_odd() {
        return err("public exponent e must be odd");
    }
    Ok(())
}

/// lcm(p-1, q-1), marked secret.
fn lambda(p: &Bn, q: &Bn, ctx: &mut BnCtx) -> Result<Bn, RsaError> {
    let mut p1 = bn::minus_one(p)?;
    let mut q1 = bn::minus_one(q)?;
    p1.set_consttime();
    q1.set_consttime();
    let g = bn::gcd(&p1, &q1, ctx)?;
    let mut prod = Bn::new()?;
    bn::mul(&mut prod, &p1, &q1, ctx)?;
    prod.set_consttime();
    let (mut l, _) = bn::div_rem(&prod, &g, ctx)?;
    l.set_consttime();
    Ok(l)
}

impl RsaKey {
    /// Builds a key from its parts. n and e are required; a private key
    /// needs d, or p and q (d and the other CRT parts are then derived), or
    /// d alone (non-CRT). CRT keys are normalised so that p > q.
    pub fn from_parts(parts: RsaParts) -> Result<RsaKey, RsaError> {
        if parts.n.is_empty() {
            return err("modulus n is missing");
        }
        if parts.e.is_empty() {
            return err("public exponent e is missing");
        }
        let n = Bn::from_be(&parts.n)?;
        let e = Bn::from_be(&parts.e)?;
        check_public(&n, &e)?;
        let d = secret(&parts.d)?;
        let p = secret(&parts.p)?;
        let q = secret(&parts.q)?;
        let dp = secret(&parts.dp)?;
        let dq = secret(&parts.dq)?;
        let qinv = secret(&parts.qinv)?;
        let crt = match (p, q) {
            (Some(p), Some(q)) => Some(CrtIn { p, q, dp, dq, qinv }),
            (None, None) if dp.is_none() && dq.is_none() && qinv.is_none() => None,
            _ => {
                return err(
                    "incomplete CRT parameters: the primes p and q are both needed \
                     (give all five CRT parts, p and q, or d alone)",
                )
            }
        };
        let mut ctx = BnCtx::new(LibCtx::DEFAULT)?;
        Self::assemble(n, e, d, crt, &mut ctx)
    }

    fn assemble(
        n: Bn,
        e: Bn,
        d: Option<Bn>,
        crt: Option<CrtIn>,
        ctx: &mut BnCtx,
    ) -> Result<RsaKey, RsaError> {
        let mont_n = MontCtx::new(&n, ctx)?;
        let private = match (d, crt) {
            (None, None) => None,
            (Some(mut d), None) => {
                d.set_consttime();
                Some(Private { d, crt: None })
            }
            (d, Some(c)) => {
                let (d, crt) = Self::complete_crt(&e, d, c, ctx)?;
                Some(Private { d, crt: Some(crt) })
            }
        };
        let bits = n.num_bits();
        Ok(RsaKey {
            size: n.num_bytes(),
            bits,
            n,
            e,
            mont_n,
            private,
            blinding: Mutex::new(None),
        })
    }

    /// Orders p > q, derives the missing parts and sets up the Montgomery
    /// contexts.
    fn complete_crt(
        e: &Bn,
        d: Option<Bn>,
        c: CrtIn,
        ctx: &mut BnCtx,
    ) -> Result<(Bn, Crt), RsaError> {
        let CrtIn {
            mut p,
            mut q,
            mut dp,
            mut dq,
            mut qinv,
        } = c;
        for (name, v) in [("p", &p), ("q", &q)] {
            if !v.is_odd() || v.cmp_u64(3)? == Ordering::Less {
                return err(format!("prime {name} is even or smaller than 3"));
            }
        }
        match p.cmp(&q) {
            Ordering::Equal => return err("primes p and q are equal"),
            Ordering::Less => {
                std::mem::swap(&mut p, &mut q);
                std::mem::swap(&mut dp, &mut dq);
                qinv = None;
            }
            Ordering::Greater => {}
        }
        let mut d = match d {
            Some(d) => d,
            None => {
                let l = lambda(&p, &q, ctx)?;
                match bn::mod_inverse(e, &l, ctx)? {
                    Some(d) => d,
                    None => {
                        return err("public exponent e is not invertible modulo lcm(p-1, q-1): \
                             e does not match p and q")
                    }
                }
            }
        };
        d.set_consttime();
        let mut dp = match dp {
            Some(v) => v,
            None => {
                let mut p1 = bn::minus_one(&p)?;
                p1.set_consttime();
                let mut r = Bn::new()?;
                bn::nnmod(&mut r, &d, &p1, ctx)?;
                r
            }
        };
        let mut dq = match dq {
            Some(v) => v,
            None => {
                let mut q1 = bn::minus_one(&q)?;
                q1.set_consttime();
                let mut r = Bn::new()?;
                bn::nnmod(&mut r, &d, &q1, ctx)?;
                r
            }
        };
        let mut qinv = match qinv {
            Some(v) => v,
            None => match bn::mod_inverse(&q, &p, ctx)? {
                Some(v) => v,
                None => return err("q is not invertible modulo p: p and q share a factor"),
            },
        };
        dp.set_consttime();
        dq.set_consttime();
        qinv.set_consttime();
        let mont_p = MontCtx::new(&p, ctx)?;
        let mont_q = MontCtx::new(&q, ctx)?;
        // qinv may come from the caller unreduced; reduce before Montgomery.
        let mut qinv_red = Bn::new()?;
        bn::nnmod(&mut qinv_red, &qinv, &p, ctx)?;
        let mut qinv_mont = Bn::new()?;
        bn::to_mont(&mut qinv_mont, &qinv_red, &mont_p, ctx)?;
        qinv_mont.set_consttime();
        Ok((
            d,
            Crt {
                p,
                q,
                dp,
                dq,
                qinv,
                qinv_mont,
                mont_p,
                mont_q,
            },
        ))
    }

    /// Generates a two-prime key of exactly `bits` bits with public
    /// exponent `e` (big-endian), with OpenSSL's default library context's
    /// random generator. Counted as [`Op::Keygen`].
    pub fn generate(bits: u32, e: &[u8]) -> Result<RsaKey, RsaError> {
        Self::generate_in(LibCtx::DEFAULT, bits, e)
    }

    /// [`RsaKey::generate`] with the random numbers of `libctx`.
    pub fn generate_in(libctx: LibCtx, bits: u32, e: &[u8]) -> Result<RsaKey, RsaError> {
        let router = backend::current();
        let params = match router.as_deref().map(Router::check_available) {
            Some(Err(x)) => Err(x),
            _ => Self::check_gen_params(bits, e),
        };
        let (r, backend) = match params {
            Err(x) => (Err(x), Backend::Failed),
            Ok(e) => match router
                .as_deref()
                .and_then(|r| r.offload(bits).map(|l| (r, l)))
            {
                Some((router, ica)) => match Self::generate_libica(libctx, ica, bits, &e) {
                    Ok(k) => {
                        router.log_op(Op::Keygen, bits, Backend::Libica, format_args!("ok"));
                        (Ok(k), Backend::Libica)
                    }
                    Err(why) => {
                        let r = Self::generate_inner(libctx, bits, e);
                        let b = if r.is_ok() {
                            Backend::Fallback
                        } else {
                            Backend::Failed
                        };
                        router.log_op(Op::Keygen, bits, b, format_args!("({why})"));
                        (r, b)
                    }
                },
                None => {
                    let r = Self::generate_inner(libctx, bits, e);
                    let b = if r.is_ok() {
                        Backend::Software
                    } else {
                        Backend::Failed
                    };
                    if let Some(router) = router.as_deref().filter(|r| r.tracing()) {
                        let why = router.software_reason(bits);
                        router.log_op(Op::Keygen, bits, b, format_args!("({why})"));
                    }
                    (r, b)
                }
            },
        };
        stats::record(Op::Keygen, backend, bits);
        r
    }

    fn check_gen_params(bits: u32, e: &[u8]) -> Result<Bn, RsaError> {
        if !(MIN_BITS..=MAX_BITS).contains(&bits) {
            return err(format!(
                "key size {bits} bits is outside the supported {MIN_BITS}..={MAX_BITS}"
            ));
        }
        let e = Bn::from_be(e)?;
        check_exponent(&e)?;
        if e.num_bits() >= bits / 2 {
            return err(format!(
                "public exponent e ({} bits) is too large for a {bits}-bit key",
                e.num_bits()
            ));
        }
        Ok(e)
    }

    /// Key generation on libica; the key is accepted only if it is a
    /// consistent key of exactly `bits` bits with exponent `e`.
    fn generate_libica(libctx: LibCtx, ica: &Libica, bits: u32, e: &Bn) -> Result<RsaKey, String> {
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

    fn generate_inner(libctx: LibCtx, bits: u32, e: Bn) -> Result<RsaKey, RsaError> {
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
        err("key generation failed: no suitable primes found")
    }

    /// Modulus size in bits.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Modulus size in bytes (the size of every operation's output).
    pub fn size(&self) -> usize {
        self.size
    }

    pub fn has_private(&self) -> bool {
        self.private.is_some()
    }

    pub fn has_crt(&self) -> bool {
        matches!(&self.private, Some(Private { crt: Some(_), .. }))
    }

    /// The modulus, big-endian, minimal length.
    pub fn n(&self) -> Vec<u8> {
        self.n.to_be()
    }

    /// The public exponent, big-endian, minimal length.
    pub fn e(&self) -> Vec<u8> {
        self.e.to_be()
    }

    /// All parts (d, and CRT parts when present); `None` for a public key.
    pub fn export_private(&self) -> Option<RsaParts> {
        let private = self.private.as_ref()?;
        let mut parts = RsaParts {
            n: self.n(),
            e: self.e(),
            d: Some(private.d.to_be_secret()),
            ..RsaParts::default()
        };
        if let Some(c) = &private.crt {
            parts.p = Some(c.p.to_be_secret());
            parts.q = Some(c.q.to_be_secret());
            parts.dp = Some(c.dp.to_be_secret());
            parts.dq = Some(c.dq.to_be_secret());
            parts.qinv = Some(c.qinv.to_be_secret());
        }
        Some(parts)
    }

    /// True when n and e are equal.
    pub fn public_eq(&self, other: &RsaKey) -> bool {
        self.n.cmp(&other.n) == Ordering::Equal && self.e.cmp(&other.e) == Ordering::Equal
    }

    /// Validates the key; the error says what does not match.
    pub fn check(&self, level: KeyCheck) -> Result<(), RsaError> {
        self.check_in(LibCtx::DEFAULT, level)
    }

    /// [`RsaKey::check`] with the random numbers (primality tests, the
    /// round trip of a key without primes) of `libctx`.
    pub fn check_in(&self, libctx: LibCtx, level: KeyCheck) -> Result<(), RsaError> {
        check_public(&self.n, &self.e)?;
        if level == KeyCheck::Public {
            return Ok(());
        }
        let Some(private) = &self.private else {
            return err("key has no private exponent d");
        };
        if private.d.is_zero() {
            return err("private exponent d is zero");
        }
        if private.d.cmp(&self.n) != Ordering::Less {
            return err("private exponent d is not smaller than the modulus n");
        }
        if level == KeyCheck::Private {
            return Ok(());
        }
        let mut ctx = BnCtx::new(libctx)?;
        match &private.crt {
            Some(c) => self.check_crt(&private.d, c, &mut ctx),
            None => self.check_d_only(&private.d, &mut ctx),
        }
    }

    fn check_crt(&self, d: &Bn, c: &Crt, ctx: &mut BnCtx) -> Result<(), RsaError> {
        let mut pq = Bn::new()?;
        bn::mul(&mut pq, &c.p, &c.q, ctx)?;
        if pq.cmp(&self.n) != Ordering::Equal {
            return err("p * q does not equal n");
        }
        if !bn::is_probable_prime(&c.p, ctx)? {
            return err("p is not prime");
        }
        if !bn::is_probable_prime(&c.q, ctx)? {
            return err("q is not prime");
        }
        let mut ed = Bn::new()?;
        bn::mul(&mut ed, &self.e, d, ctx)?;
        for (prime, dx, pname, dname) in [(&c.p, &c.dp, "p", "dp"), (&c.q, &c.dq, "q", "dq")] {
            let mut m = bn::minus_one(prime)?;
            m.set_consttime();
            let mut r = Bn::new()?;
            bn::nnmod(&mut r, &ed, &m, ctx)?;
            if !r.is_one() {
                return err(format!(
                    "e * d is not 1 modulo {pname}-1: d does not match e, p and q"
                ));
            }
            bn::nnmod(&mut r, d, &m, ctx)?;
            if r.cmp(dx) != Ordering::Equal {
                return err(format!("{dname} does not equal d mod ({pname}-1)"));
            }
        }
        let mut t = Bn::new()?;
        bn::mod_mul(&mut t, &c.qinv, &c.q, &c.p, ctx)?;
        if !t.is_one() || c.qinv.cmp(&c.p) != Ordering::Less {
            return err("qinv is not the inverse of q modulo p");
        }
        Ok(())
    }

    /// Without the primes, d is checked by a round trip on a random value.
    fn check_d_only(&self, d: &Bn, ctx: &mut BnCtx) -> Result<(), RsaError> {
        let x = bn::priv_rand_range(&self.n, ctx)?;
        let y = software::d_exp(d, &x, &self.n, &self.mont_n, ctx)?;
        let mut z = Bn::new()?;
        bn::mod_exp_public(&mut z, &y, &self.e, &self.n, &self.mont_n, ctx)?;
        if z.cmp(&x) != Ordering::Equal {
            return err("private exponent d does not match n and e");
        }
        Ok(())
    }

    /// Parses an operation input: at most size() bytes, value below n.
    fn parse_input(&self, input: &[u8]) -> Result<Bn, RsaError> {
        if input.len() > self.size {
            return err(format!(
                "input is {} bytes, longer than the {}-byte modulus",
                input.len(),
                self.size
            ));
        }
        let c = Bn::from_be(input)?;
        if c.cmp(&self.n) != Ordering::Less {
            return err("input is not smaller than the modulus");
        }
        Ok(c)
    }

    /// The private-key primitive: c^d mod n, blinded, by CRT when the key
    /// has the CRT parts, with the result checked with e (on mismatch,
    /// recomputed with d alone and checked again). Output: exactly size()
    /// bytes. Counted as `op`. Blinding draws from OpenSSL's default library
    /// context; the provider uses [`RsaKey::private_op_in`].
    pub fn private_op(&self, op: Op, input: &[u8]) -> Result<Zeroizing<Vec<u8>>, RsaError> {
        self.private_op_in(LibCtx::DEFAULT, op, input)
    }

    /// [`RsaKey::private_op`] with the blinding values drawn from `libctx`.
    pub fn private_op_in(
        &self,
        libctx: LibCtx,
        op: Op,
        input: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, RsaError> {
        let router = backend::current();
        let r = self.private_op_inner(libctx, op, input, router.as_deref());
        let backend = match &r {
            Ok((_, b)) => *b,
            Err(_) => Backend::Failed,
        };
        if let (Some(router), Err(e)) = (router.as_deref(), &r) {
            router.log_op(op, self.bits, backend, format_args!("error: {e}"));
        }
        stats::record(op, backend, self.bits);
        r.map(|(v, _)| v)
    }

    fn private_op_inner(
        &self,
        libctx: LibCtx,
        op: Op,
        input: &[u8],
        router: Option<&Router>,
    ) -> Result<(Zeroizing<Vec<u8>>, Backend), RsaError> {
        if let Some(router) = router {
            router.check_available()?;
        }
        let Some(private) = &self.private else {
            return err("key has no private part");
        };
        let c = self.parse_input(input)?;
        let mut ctx = BnCtx::new(libctx)?;
        let (blinded, ai) = self.blind(&c, &mut ctx)?;

        // libica first, when routed there; its result must pass the same
        // check as software's, else software does the job (a fallback).
        let (from_libica, used) = self.try_libica(
            op,
            router,
            |ica| self.libica_private(ica, private, &blinded),
            |m| self.result_ok(m, &blinded, &mut ctx),
            "returned a WRONG result: it failed the public-exponent check",
        )?;
        if let Some(m) = from_libica {
            return Ok((self.unblind(&m, &ai, &mut ctx)?, used));
        }

        // The software backend, also the fallback.
        let mut m = match &private.crt {
            Some(crt) => software::crt_exp(crt, &blinded, &mut ctx)?,
            None => software::d_exp(&private.d, &blinded, &self.n, &self.mont_n, &mut ctx)?,
        };
        if !self.result_ok(&m, &blinded, &mut ctx)? {
            // A wrong result never leaves: recompute without CRT.
            m = software::d_exp(&private.d, &blinded, &self.n, &self.mont_n, &mut ctx)?;
            if !self.result_ok(&m, &blinded, &mut ctx)? {
                return err(
                    "RSA private operation failed its check (result^e != input): \
                     the key's private parts do not match n and e",
                );
            }
        }

        Ok((self.unblind(&m, &ai, &mut ctx)?, used))
    }

    /// Unblinds in constant time: m * (Ai * R) * R^-1 = m * Ai mod n.
    fn unblind(&self, m: &Bn, ai: &Bn, ctx: &mut BnCtx) -> Result<Zeroizing<Vec<u8>>, RsaError> {
        let mut out = Bn::new()?;
        out.set_consttime();
        bn::mont_mul(&mut out, m, ai, &self.mont_n, ctx)?;
        out.to_be_padded(self.size)
    }

    /// The blinded private exponentiation on libica: `ica_rsa_crt`, or
    /// `ica_rsa_mod_expo` with d for keys without CRT parts.
    fn libica_private(&self, ica: &Libica, private: &Private, blinded: &Bn) -> Attempt {
        let Ok(input) = blinded.to_be_padded(self.size) else {
            return Attempt::Skipped("input does not fit the modulus size");
        };
        let mut out = Zeroizing::new(vec![0u8; self.size]);
        let (r, what) = match &private.crt {
            Some(c) => {
                let Some(mut key) = CrtKey::new(self.size, &c.p, &c.q, &c.dp, &c.dq, &c.qinv)
                else {
                    return Attempt::Skipped("CRT parts do not fit libica's key layout");
                };
                (ica.rsa_crt(&input, &mut key, &mut out), "ica_rsa_crt")
            }
            None => {
                let Some(mut key) = ModExpoKey::new(self.size, &self.n, &private.d) else {
                    return Attempt::Skipped("d does not fit libica's key layout");
                };
                (
                    ica.rsa_mod_expo(&input, &mut key, &mut out),
                    "ica_rsa_mod_expo",
                )
            }
        };
        match r {
            Err(e) => Attempt::Failed(e.to_string()),
            Ok(()) => match Bn::from_be(&out) {
                Ok(m) => Attempt::Done(m, what),
                Err(e) => Attempt::Failed(e.0),
            },
        }
    }

    /// m^e mod n == blinded input?
    fn result_ok(&self, m: &Bn, blinded: &Bn, ctx: &mut BnCtx) -> Result<bool, RsaError> {
        if m.cmp(&self.n) != Ordering::Less {
            return Ok(false);
        }
        let mut v = Bn::new()?;
        bn::mod_exp_public(&mut v, m, &self.e, &self.n, &self.mont_n, ctx)?;
        Ok(v.cmp(blinded) == Ordering::Equal)
    }

    /// Returns (c * A mod n, Ai in Montgomery form) and advances the pair.
    fn blind(&self, c: &Bn, ctx: &mut BnCtx) -> Result<(Bn, Bn), RsaError> {
        let mut guard = self.blinding.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: getpid has no preconditions and cannot fail.
        let pid = unsafe { libc::getpid() };
        let stale = match &*guard {
            None => true,
            Some(b) => b.uses >= BLINDING_USES || b.pid != pid,
        };
        if stale {
            *guard = None;
            *guard = Some(self.new_blinding(pid, ctx)?);
        }
        let Some(b) = guard.as_mut() else {
            return err("internal error: no blinding pair");
        };
        // (A R) * c * R^-1 = A * c mod n.
        let mut blinded = Bn::new()?;
        bn::mont_mul(&mut blinded, c, &b.a, &self.mont_n, ctx)?;
        let ai = b.ai.dup()?;
        // Next pair: (A^2, Ai^2), still in Montgomery form.
        let mut a2 = Bn::new()?;
        bn::mont_mul(&mut a2, &b.a, &b.a, &self.mont_n, ctx)?;
        let mut ai2 = Bn::new()?;
        bn::mont_mul(&mut ai2, &b.ai, &b.ai, &self.mont_n, ctx)?;
        a2.set_consttime();
        ai2.set_consttime();
        b.a = a2;
        b.ai = ai2;
        b.uses += 1;
        let mut ai = ai;
        ai.set_consttime();
        Ok((blinded, ai))
    }

    fn new_blinding(&self, pid: libc::pid_t, ctx: &mut BnCtx) -> Result<Blinding, RsaError> {
        for _ in 0..64 {
            let mut r = bn::priv_rand_range(&self.n, ctx)?;
            r.set_consttime();
            if r.is_zero() || r.is_one() {
                continue;
            }
            let Some(ri) = bn::mod_inverse(&r, &self.n, ctx)? else {
                continue;
            };
            let mut a = Bn::new()?;
            bn::mod_exp_public(&mut a, &r, &self.e, &self.n, &self.mont_n, ctx)?;
            let mut a_mont = Bn::new()?;
            bn::to_mont(&mut a_mont, &a, &self.mont_n, ctx)?;
            let mut ai_mont = Bn::new()?;
            bn::to_mont(&mut ai_mont, &ri, &self.mont_n, ctx)?;
            a_mont.set_consttime();
            ai_mont.set_consttime();
            return Ok(Blinding {
                a: a_mont,
                ai: ai_mont,
                uses: 0,
                pid,
            });
        }
        err("could not create a blinding value")
    }

    /// The public-key primitive: input^e mod n, exactly size() bytes.
    /// Counted as `op`.
    pub fn public_op(&self, op: Op, input: &[u8]) -> Result<Vec<u8>, RsaError> {
        let r = self.public_op_uncounted(op, input);
        let backend = match &r {
            Ok((_, b)) => *b,
            Err(_) => Backend::Failed,
        };
        stats::record(op, backend, self.bits);
        r.map(|(v, _)| v)
    }

    /// [`RsaKey::public_op`] without counting: returns the backend that
    /// computed the result, and the caller counts the operation once its
    /// own checks are done (a signature whose padding then fails is a
    /// failed verification, counted once).
    pub fn public_op_uncounted(
        &self,
        op: Op,
        input: &[u8],
    ) -> Result<(Vec<u8>, Backend), RsaError> {
        let router = backend::current();
        let r = self.public_op_inner(op, input, router.as_deref());
        if let (Some(router), Err(e)) = (router.as_deref(), &r) {
            router.log_op(op, self.bits, Backend::Failed, format_args!("error: {e}"));
        }
        r
    }

    /// A public result from libica that the caller rejected (a signature
    /// that does not verify) is recomputed in software before the failure
    /// is believed: a faulty adapter must not turn a valid signature into
    /// an invalid one. Returns the software result when it differs from
    /// `from_libica` (libica was wrong: the caller counts a fallback), or
    /// `None` when both agree (the rejection stands).
    pub fn public_op_recheck(
        &self,
        op: Op,
        input: &[u8],
        from_libica: &[u8],
    ) -> Result<Option<Vec<u8>>, RsaError> {
        let c = self.parse_input(input)?;
        let mut ctx = BnCtx::new_public()?;
        let mut m = Bn::new()?;
        bn::mod_exp_public(&mut m, &c, &self.e, &self.n, &self.mont_n, &mut ctx)?;
        let software = m.to_be_padded_public(self.size)?;
        if software == from_libica {
            return Ok(None);
        }
        if let Some(router) = backend::current() {
            router.log_op(
                op,
                self.bits,
                Backend::Fallback,
                format_args!("(ica_rsa_mod_expo returned a wrong result; recomputed in software)"),
            );
        }
        Ok(Some(software))
    }

    fn public_op_inner(
        &self,
        op: Op,
        input: &[u8],
        router: Option<&Router>,
    ) -> Result<(Vec<u8>, Backend), RsaError> {
        if let Some(router) = router {
            router.check_available()?;
        }
        let c = self.parse_input(input)?;
        // Nothing cheaper than the computation itself can check a public
        // result; a result that is not even reduced is certainly wrong.
        let (from_libica, used) = self.try_libica(
            op,
            router,
            |ica| self.libica_public(ica, &c),
            |m| Ok(m.cmp(&self.n) == Ordering::Less),
            "returned a value not below n",
        )?;
        if let Some(m) = from_libica {
            return Ok((m.to_be_padded_public(self.size)?, used));
        }
        let mut ctx = BnCtx::new_public()?;
        let mut m = Bn::new()?;
        bn::mod_exp_public(&mut m, &c, &self.e, &self.n, &self.mont_n, &mut ctx)?;
        Ok((m.to_be_padded_public(self.size)?, used))
    }

    /// Runs `attempt` on libica when the router sends this key size there,
    /// and keeps its result only if `accept` says so; traces the outcome.
    /// Returns the accepted result (None: software must do the job) and the
    /// backend to count: libica, fallback (libica failed or was wrong), or
    /// software (not routed to libica).
    fn try_libica(
        &self,
        op: Op,
        router: Option<&Router>,
        attempt: impl FnOnce(&Libica) -> Attempt,
        mut accept: impl FnMut(&Bn) -> Result<bool, RsaError>,
        wrong: &str,
    ) -> Result<(Option<Bn>, Backend), RsaError> {
        let Some(router) = router else {
            return Ok((None, Backend::Software));
        };
        let log = |backend, outcome: std::fmt::Arguments<'_>| {
            router.log_op(op, self.bits, backend, outcome)
        };
        let Some(ica) = router.offload(self.bits) else {
            if router.tracing() {
                let why = router.software_reason(self.bits);
                log(Backend::Software, format_args!("({why})"));
            }
            return Ok((None, Backend::Software));
        };
        match attempt(ica) {
            Attempt::Done(m, what) if accept(&m)? => {
                log(Backend::Libica, format_args!("{what} ok"));
                Ok((Some(m), Backend::Libica))
            }
            Attempt::Done(_, what) => {
                log(
                    Backend::Fallback,
                    format_args!("({what} {wrong}; recomputed in software)"),
                );
                Ok((None, Backend::Fallback))
            }
            Attempt::Failed(why) => {
                log(Backend::Fallback, format_args!("({why})"));
                Ok((None, Backend::Fallback))
            }
            Attempt::Skipped(why) => {
                log(Backend::Software, format_args!("({why})"));
                Ok((None, Backend::Software))
            }
        }
    }

    fn libica_public(&self, ica: &Libica, c: &Bn) -> Attempt {
        let (Ok(input), Some(mut key)) = (
            c.to_be_padded(self.size),
            ModExpoKey::new(self.size, &self.n, &self.e),
        ) else {
            return Attempt::Skipped("key does not fit libica's key layout");
        };
        let mut out = vec![0u8; self.size];
        match ica.rsa_mod_expo(&input, &mut key, &mut out) {
            Err(e) => Attempt::Failed(e.to_string()),
            Ok(()) => match Bn::from_be(&out) {
                Ok(m) => Attempt::Done(m, "ica_rsa_mod_expo"),
                Err(e) => Attempt::Failed(e.0),
            },
        }
    }
}

/// The outcome of offering an operation to libica.
enum Attempt {
    /// libica returned a result (still to be checked), from this function.
    Done(Bn, &'static str),
    /// libica failed: software finishes the job (a fallback).
    Failed(String),
    /// Not offloadable after all (key layout): software by choice.
    Skipped(&'static str),
}

impl fmt::Debug for RsaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RsaKey")
            .field("bits", &self.bits)
            .field("private", &self.has_private())
            .field("crt", &self.has_crt())
            .finish()
    }
}

#[cfg(test)]
mod tests;
