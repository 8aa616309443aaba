//! The constant-time check's driver, run by scripts/check-ct.sh under
//! valgrind's memcheck (release build, as shipped).
//!
//! It calls the steps of a private operation that take secrets, with those
//! secrets marked undefined (memcheck's MAKE_MEM_UNDEFINED client request):
//! memcheck then reports every conditional jump, and every memory address,
//! that depends on them. The steps:
//!
//! - Garner's recombination (`ibmca_shim::ct_check::garner`): m1, m2, p,
//!   q and qinv marked;
//! - the unblinding of a decryption (`ibmca_shim::ct_check::mont_mul_be`):
//!   the blinded result and the blinding inverse marked;
//! - the decryption padding checks (provider/enc_padding.rs): PKCS#1 v1.5,
//!   with and without implicit rejection, the TLS premaster rule and OAEP,
//!   each on well-formed and malformed blocks: the decrypted block (and the
//!   implicit-rejection key) marked.
//!
//! Each result is marked defined again only to compare it with the value
//! the driver computed another way, so a wrong result fails too (exit 1).
//! `ct_check self-test` branches on a marked byte on purpose: memcheck must
//! report it, which shows that the client requests reach it on this
//! machine. Outside valgrind the client requests do nothing and the driver
//! checks only the results.

use std::process::ExitCode;
use std::ptr;

use openssl_sys::{BIGNUM, BN_CTX};
use rustica::digest::{DigestCache, DigestId};
use rustica::enc_padding::{self, Decoded, Oaep, Sha256};

/// memcheck's client requests, issued with valgrind's documented "special
/// instruction" sequences (<valgrind/valgrind.h>); outside valgrind they
/// are no-ops that return the default.
mod valgrind {
    /// VG_USERREQ_TOOL_BASE('M', 'C') + 1 and + 2 (<valgrind/memcheck.h>).
    const MAKE_MEM_UNDEFINED: usize = ((b'M' as usize) << 24 | (b'C' as usize) << 16) + 1;
    const MAKE_MEM_DEFINED: usize = MAKE_MEM_UNDEFINED + 1;
    /// VG_USERREQ__RUNNING_ON_VALGRIND.
    const RUNNING_ON_VALGRIND: usize = 0x1001;

    /// The request in `args` (code, then five arguments); `default` when
    /// not under valgrind.
    #[allow(unused_mut, unused_variables)]
    fn request(default: usize, args: &[usize; 6]) -> usize {
        let mut result = default;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the four rotations of rdi add up to 128 bits and the
        // exchange is of rbx with itself: natively the sequence changes
        // no register (flags aside, which are not preserved here). Under
        // valgrind it is the client request: rax points at the six
        // arguments, which stay alive across the block, and the answer
        // comes back in rdx. No `nomem`: memcheck's requests change what
        // the compiler must assume of memory.
        unsafe {
            core::arch::asm!(
                "rol rdi, 3", "rol rdi, 13", "rol rdi, 61", "rol rdi, 51",
                "xchg rbx, rbx",
                inout("rdx") result,
                in("rax") args.as_ptr(),
                options(nostack),
            );
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as on x86_64: the rotations of x12 add up to 128 bits and
        // the orr writes x10 with itself; x4 holds the arguments' address,
        // x3 the default and then the answer.
        unsafe {
            core::arch::asm!(
                "ror x12, x12, #3", "ror x12, x12, #13",
                "ror x12, x12, #51", "ror x12, x12, #61",
                "orr x10, x10, x10",
                inout("x3") result,
                in("x4") args.as_ptr(),
                options(nostack),
            );
        }
        #[cfg(target_arch = "s390x")]
        // SAFETY: as on x86_64: each `lr` loads a register into itself; r2
        // holds the arguments' address, r3 the default and then the answer.
        unsafe {
            core::arch::asm!(
                "lr 15,15", "lr 1,1", "lr 2,2", "lr 3,3",
                "lr 2,2",
                inout("r3") result,
                inout("r2") args.as_ptr() => _,
                options(nostack),
            );
        }
        result
    }

    /// Whether the process runs under valgrind (on an architecture the
    /// requests are written for).
    pub fn running() -> bool {
        request(0, &[RUNNING_ON_VALGRIND, 0, 0, 0, 0, 0]) != 0
    }

    /// Marks the memory of `v` undefined: a secret from here on.
    pub fn undefined<T: ?Sized>(v: &T) {
        let (addr, len) = (
            v as *const T as *const u8 as usize,
            std::mem::size_of_val(v),
        );
        request(0, &[MAKE_MEM_UNDEFINED, addr, len, 0, 0, 0]);
    }

    /// Marks the memory of `v` defined again (a result about to be checked).
    pub fn defined<T: ?Sized>(v: &T) {
        let (addr, len) = (
            v as *const T as *const u8 as usize,
            std::mem::size_of_val(v),
        );
        request(0, &[MAKE_MEM_DEFINED, addr, len, 0, 0, 0]);
    }
}

/// Why the driver stopped: a wrong result (exit 1) or a setup that failed
/// (exit 2, the check did not run).
enum Failure {
    Wrong(String),
    Setup(String),
}

type Outcome<T> = Result<T, Failure>;

fn setup<T>(what: &str) -> Outcome<T> {
    Err(Failure::Setup(what.to_string()))
}

fn check(ok: bool, what: String) -> Outcome<()> {
    if ok {
        Ok(())
    } else {
        Err(Failure::Wrong(what))
    }
}

/// An owned BIGNUM for the driver's own arithmetic (public test values).
struct Big(*mut BIGNUM);

impl Drop for Big {
    fn drop(&mut self) {
        // SAFETY: owned by this value, freed once.
        unsafe { openssl_sys::BN_free(self.0) }
    }
}

impl Big {
    fn new() -> Outcome<Big> {
        // SAFETY: no preconditions; NULL is refused.
        let p = unsafe { openssl_sys::BN_new() };
        if p.is_null() {
            return setup("BN_new");
        }
        Ok(Big(p))
    }

    /// A random odd number of exactly `bits` bits.
    fn random_odd(bits: u32) -> Outcome<Big> {
        let b = Big::new()?;
        // SAFETY: a valid BIGNUM; top 0: the top bit set; bottom 1: odd.
        if unsafe { openssl_sys::BN_rand(b.0, bits as i32, 0, 1) } != 1 {
            return setup("BN_rand");
        }
        Ok(b)
    }

    fn below(range: &Big) -> Outcome<Big> {
        let b = Big::new()?;
        // SAFETY: valid BIGNUMs.
        if unsafe { openssl_sys::BN_rand_range(b.0, range.0) } != 1 {
            return setup("BN_rand_range");
        }
        Ok(b)
    }

    fn cmp(&self, other: &Big) -> i32 {
        // SAFETY: valid BIGNUMs, only read.
        unsafe { openssl_sys::BN_cmp(self.0, other.0) }
    }

    /// The value as `limbs` little-endian 64-bit limbs.
    fn limbs(&self, limbs: usize) -> Outcome<Vec<u64>> {
        let mut be = vec![0u8; 8 * limbs];
        // SAFETY: be has room for the bytes asked for; -1 when too long.
        if unsafe { openssl_sys::BN_bn2binpad(self.0, be.as_mut_ptr(), be.len() as i32) } < 0 {
            return setup("BN_bn2binpad");
        }
        Ok(be
            .rchunks(8)
            .map(|c| u64::from_be_bytes(c.try_into().unwrap_or([0; 8])))
            .collect())
    }

    fn be(&self, len: usize) -> Outcome<Vec<u8>> {
        let mut out = vec![0u8; len];
        // SAFETY: out has room for len bytes; -1 when too long.
        if unsafe { openssl_sys::BN_bn2binpad(self.0, out.as_mut_ptr(), len as i32) } < 0 {
            return setup("BN_bn2binpad");
        }
        Ok(out)
    }
}

struct Ctx(*mut BN_CTX);

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: owned, freed once.
        unsafe { openssl_sys::BN_CTX_free(self.0) }
    }
}

impl Ctx {
    fn new() -> Outcome<Ctx> {
        // SAFETY: no preconditions; NULL refused.
        let p = unsafe { openssl_sys::BN_CTX_new() };
        if p.is_null() {
            return setup("BN_CTX_new");
        }
        Ok(Ctx(p))
    }

    fn mul(&self, a: &Big, b: &Big) -> Outcome<Big> {
        let r = Big::new()?;
        // SAFETY: valid BIGNUMs, r distinct.
        if unsafe { openssl_sys::BN_mul(r.0, a.0, b.0, self.0) } != 1 {
            return setup("BN_mul");
        }
        Ok(r)
    }

    fn rem(&self, a: &Big, m: &Big) -> Outcome<Big> {
        let r = Big::new()?;
        // SAFETY: valid BIGNUMs, r distinct.
        if unsafe { openssl_sys::BN_nnmod(r.0, a.0, m.0, self.0) } != 1 {
            return setup("BN_nnmod");
        }
        Ok(r)
    }

    fn mod_mul(&self, a: &Big, b: &Big, m: &Big) -> Outcome<Big> {
        let r = Big::new()?;
        // SAFETY: valid BIGNUMs, r distinct.
        if unsafe { openssl_sys::BN_mod_mul(r.0, a.0, b.0, m.0, self.0) } != 1 {
            return setup("BN_mod_mul");
        }
        Ok(r)
    }

    /// a^-1 mod m, or None.
    fn inverse(&self, a: &Big, m: &Big) -> Outcome<Option<Big>> {
        let r = Big::new()?;
        // SAFETY: valid BIGNUMs, r distinct; NULL: no inverse.
        let p = unsafe { openssl_sys::BN_mod_inverse(r.0, a.0, m.0, self.0) };
        // SAFETY: drops what a failed inversion queued on this thread.
        unsafe { openssl_sys::ERR_clear_error() };
        Ok((!p.is_null()).then_some(r))
    }

    /// 2^(64 * limbs) mod m: the Montgomery radix for m's limbs.
    fn radix(&self, limbs: usize, m: &Big) -> Outcome<Big> {
        let r = Big::new()?;
        // SAFETY: a valid BIGNUM.
        if unsafe { openssl_sys::BN_set_bit(r.0, 64 * limbs as i32) } != 1 {
            return setup("BN_set_bit");
        }
        self.rem(&r, m)
    }
}

/// Garner's step for one key shape, `rounds` values of m: the limbs of m1,
/// m2, p, q and qinv * R mod p marked undefined, the output compared with
/// m. Returns how many rounds had m1 < m2.
fn garner(ctx: &Ctx, p_bits: u32, q_bits: u32, rounds: usize) -> Outcome<usize> {
    let (p, q, qinv) = loop {
        let a = Big::random_odd(p_bits)?;
        let b = Big::random_odd(q_bits)?;
        let (p, q) = if a.cmp(&b) > 0 { (a, b) } else { (b, a) };
        if let Some(qinv) = ctx.inverse(&q, &p)? {
            break (p, q, qinv);
        }
    };
    let l = (p_bits as usize).div_ceil(64);
    let qinv_mont = ctx.mod_mul(&qinv, &ctx.radix(l, &p)?, &p)?;
    let n = ctx.mul(&p, &q)?;
    let mut below = 0;
    for _ in 0..rounds {
        let m = Big::below(&n)?;
        let (m1, m2) = (ctx.rem(&m, &p)?, ctx.rem(&m, &q)?);
        if m1.cmp(&m2) < 0 {
            below += 1;
        }
        let inputs = [
            m1.limbs(l)?,
            m2.limbs(l)?,
            p.limbs(l)?,
            q.limbs(l)?,
            qinv_mont.limbs(l)?,
        ];
        for v in &inputs {
            valgrind::undefined(&v[..]);
        }
        let mut out = vec![0u64; 2 * l];
        let [m1, m2, p, q, qinv_mont] = &inputs;
        ibmca_shim::ct_check::garner(m1, m2, p, q, qinv_mont, &mut out);
        valgrind::defined(&out[..]);
        check(
            out == m.limbs(2 * l)?,
            format!("Garner ({p_bits}/{q_bits} bits) did not give back m"),
        )?;
    }
    Ok(below)
}

/// The unblinding's Montgomery product for an `bits`-bit modulus: the
/// blinded result and the blinding inverse marked undefined (the modulus is
/// public), the output compared with a * b * R^-1 mod n.
fn unblinding(ctx: &Ctx, bits: u32, rounds: usize) -> Outcome<()> {
    let n = Big::random_odd(bits)?;
    let l = (bits as usize).div_ceil(64);
    let len = (bits as usize).div_ceil(8);
    let r_inv = match ctx.inverse(&ctx.radix(l, &n)?, &n)? {
        Some(r) => r,
        None => return setup("the radix has no inverse modulo an odd number"),
    };
    let n_limbs = n.limbs(l)?;
    for _ in 0..rounds {
        let (a, b) = (Big::below(&n)?, Big::below(&n)?);
        let want = ctx.mod_mul(&ctx.mod_mul(&a, &b, &n)?, &r_inv, &n)?;
        let (a_limbs, b_limbs) = (a.limbs(l)?, b.limbs(l)?);
        valgrind::undefined(&a_limbs[..]);
        valgrind::undefined(&b_limbs[..]);
        let got = ibmca_shim::ct_check::mont_mul_be(&a_limbs, &b_limbs, &n_limbs, len);
        valgrind::defined(&got[..]);
        check(
            got[..] == want.be(len)?[..],
            format!("the {bits}-bit unblinding product is wrong"),
        )?;
    }
    Ok(())
}

/// A decoder's outcome, marked defined to be compared.
fn opened(d: &Decoded) -> (bool, Vec<u8>) {
    valgrind::defined(&d.good);
    valgrind::defined(&d.len);
    valgrind::defined(&d.message[..]);
    let len = d.len.min(d.message.len());
    (d.good == u32::MAX, d.message[..len].to_vec())
}

fn fake_random(n: usize) -> rustica::error::Result<Vec<u8>> {
    Ok((0..n).map(|i| (i * 131 + 7) as u8 | 1).collect())
}

const MESSAGE: [u8; 32] = [0x5a; 32];

/// A copy of `em` with one byte changed: a malformed block.
fn broken(em: &[u8], at: usize) -> Vec<u8> {
    let mut em = em.to_vec();
    em[at] ^= 0x40;
    em
}

/// PKCS#1 v1.5 type 2 decoding of `k`-byte blocks, the block marked.
fn pkcs1(k: usize) -> Outcome<()> {
    let Ok(em) = enc_padding::pkcs1_type2_encode(&MESSAGE, k, fake_random) else {
        return setup("PKCS#1 v1.5 encoding");
    };
    for (em, good) in [(em.to_vec(), true), (broken(&em, 1), false)] {
        valgrind::undefined(&em[..]);
        let (ok, m) = opened(&enc_padding::pkcs1_type2_decode(&em));
        check(
            ok == good && (!good || m == MESSAGE),
            format!("PKCS#1 v1.5 decoding (good block: {good})"),
        )?;
    }
    Ok(())
}

/// PKCS#1 v1.5 with implicit rejection: the block and the key derived
/// from d marked.
fn implicit(k: usize) -> Outcome<()> {
    let Ok(em) = enc_padding::pkcs1_type2_encode(&MESSAGE, k, fake_random) else {
        return setup("PKCS#1 v1.5 encoding");
    };
    // SAFETY: NULL is the default library context.
    let Ok(sha) = (unsafe { Sha256::fetch(ptr::null_mut()) }) else {
        return setup("SHA-256 fetch");
    };
    let d: Vec<u8> = (0..k).map(|i| (i * 7 + 1) as u8).collect();
    let Ok(key) = enc_padding::implicit_rejection_key(&sha, &d, k) else {
        return setup("implicit-rejection key");
    };
    let c: Vec<u8> = (0..k).map(|i| (i * 3) as u8).collect();
    for (em, good) in [(em.to_vec(), true), (broken(&em, 1), false)] {
        valgrind::undefined(&em[..]);
        let key = *key;
        valgrind::undefined(&key);
        let Ok(d) = enc_padding::pkcs1_type2_decode_implicit(&sha, &key, &c, &em) else {
            return setup("implicit-rejection decoding");
        };
        let (ok, m) = opened(&d);
        check(
            ok && (m == MESSAGE) == good,
            format!("implicit rejection (good block: {good})"),
        )?;
    }
    Ok(())
}

/// The TLS premaster rule: the block marked.
fn premaster(k: usize) -> Outcome<()> {
    let mut pms = vec![3u8, 3];
    pms.extend([0xa5u8; 46]);
    let Ok(em) = enc_padding::pkcs1_type2_encode(&pms, k, fake_random) else {
        return setup("premaster encoding");
    };
    let random = [0x11u8; enc_padding::TLS_PREMASTER_LEN];
    for (em, good) in [(em.to_vec(), true), (broken(&em, 1), false)] {
        valgrind::undefined(&em[..]);
        let out = enc_padding::tls_premaster(&em, 0x0303, 0, &random);
        valgrind::defined(&out[..]);
        let want = if good { &pms[..] } else { &random[..] };
        check(
            out[..] == *want,
            format!("TLS premaster (good block: {good})"),
        )?;
    }
    Ok(())
}

/// OAEP with SHA-256 for both digests: the block marked.
fn oaep(k: usize) -> Outcome<()> {
    let digests = DigestCache::new(ptr::null_mut());
    let oaep = Oaep {
        digests: &digests,
        md: DigestId::Sha256,
        mgf1: DigestId::Sha256,
        label: b"",
    };
    let Ok(em) = oaep.encode(&MESSAGE, k, fake_random) else {
        return setup("OAEP encoding");
    };
    // The malformed block: a byte of the masked DB, which breaks lHash or
    // the separator once unmasked.
    for (em, good) in [(em.to_vec(), true), (broken(&em, k - 40), false)] {
        valgrind::undefined(&em[..]);
        let Ok(d) = oaep.decode(&em) else {
            return setup("OAEP decoding");
        };
        let (ok, m) = opened(&d);
        check(
            ok == good && (!good || m == MESSAGE),
            format!("OAEP decoding (good block: {good})"),
        )?;
    }
    Ok(())
}

/// A branch on a marked byte: memcheck must report it.
fn self_test() -> ExitCode {
    let secret = [std::hint::black_box(1u8)];
    valgrind::undefined(&secret);
    if std::hint::black_box(secret[0]) == 1 {
        println!("ct_check self-test: branched on a marked byte");
    }
    ExitCode::SUCCESS
}

fn run() -> Outcome<()> {
    let ctx = Ctx::new()?;
    let mut below = 0;
    let mut rounds = 0;
    // RSA-2048, -3072, -4096, and primes of two sizes (p's width not q's).
    for (p_bits, q_bits) in [(1024, 1024), (1536, 1536), (2048, 2048), (1030, 1018)] {
        below += garner(&ctx, p_bits, q_bits, 8)?;
        rounds += 8;
    }
    check(
        below > 0 && below < rounds,
        format!("m1 < m2 in {below} of {rounds} rounds: both orders must occur"),
    )?;
    println!("garner: {rounds} rounds, m1 < m2 in {below}");
    for bits in [2048, 3072, 4096, 2050] {
        unblinding(&ctx, bits, 4)?;
    }
    println!("unblinding: 16 products");
    for k in [256, 384, 512] {
        pkcs1(k)?;
        implicit(k)?;
        premaster(k)?;
        oaep(k)?;
    }
    println!("padding: PKCS#1 v1.5, implicit rejection, TLS premaster, OAEP");
    Ok(())
}

fn main() -> ExitCode {
    match std::env::args().nth(1).as_deref() {
        Some("self-test") => return self_test(),
        None => {}
        Some(_) => {
            eprintln!("usage: ct_check [self-test]");
            return ExitCode::from(2);
        }
    }
    println!("ct_check: under valgrind: {}", valgrind::running());
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Wrong(what)) => {
            eprintln!("ct_check: wrong result: {what}");
            ExitCode::from(1)
        }
        Err(Failure::Setup(what)) => {
            eprintln!("ct_check: could not run: {what} failed");
            ExitCode::from(2)
        }
    }
}
