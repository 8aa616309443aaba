//! The RSA primitive per backend against libcrypto's own RSA in the same
//! run: `cargo bench --bench primitive` (RUSTICA_BENCH_SIZES=2048,4096 to
//! choose sizes; 7680 and 15360 use the committed fixture keys).
//!
//! Each group holds `libcrypto` (RSA_private_encrypt / RSA_public_encrypt
//! with no padding, the cost OpenSSL's default provider pays) and
//! `rustica-software` (`RsaKey::private_op` with blinding and the
//! public-exponent check, `RsaKey::public_op`) on the same key and input;
//! the ratio of the two times is the figure that matters. Up to 4096 bits
//! the groups also hold `rustica-libica-emu`, the libica backend driving
//! the emulated libica (target/release/libica_emu.so, or
//! $RUSTICA_BENCH_LIBICA), when it has been built.

use std::ffi::c_int;
use std::ptr;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ibmca_shim::{Op, RsaKey, RsaParts};
use openssl_sys as sys;
use zeroize::Zeroizing;

struct Baseline(*mut sys::RSA);

impl Drop for Baseline {
    fn drop(&mut self) {
        // SAFETY: the RSA object is owned by this wrapper.
        unsafe { sys::RSA_free(self.0) };
    }
}

fn bn_bytes(bn: *const sys::BIGNUM) -> Vec<u8> {
    // SAFETY: bn is a valid BIGNUM owned by the RSA object we read it from.
    unsafe {
        let len = (sys::BN_num_bits(bn) as usize).div_ceil(8);
        let mut out = vec![0u8; len];
        sys::BN_bn2bin(bn, out.as_mut_ptr());
        out
    }
}

/// One key in both worlds: libcrypto's RSA and rustica's RsaKey.
fn key(bits: u32) -> (Baseline, RsaKey) {
    // SAFETY: plain libcrypto calls on objects created here; every pointer
    // read back is owned by `rsa`, which outlives the reads.
    unsafe {
        let rsa = if bits > 4096 {
            let path = format!(
                "{}/tests/fixtures/private-{bits}.pem",
                env!("CARGO_MANIFEST_DIR")
            );
            let pem = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let bio = sys::BIO_new_mem_buf(pem.as_ptr().cast(), pem.len() as c_int);
            let rsa = sys::PEM_read_bio_RSAPrivateKey(bio, ptr::null_mut(), None, ptr::null_mut());
            sys::BIO_free_all(bio);
            rsa
        } else {
            let rsa = sys::RSA_new();
            let e = sys::BN_new();
            sys::BN_set_word(e, 65537);
            assert_eq!(
                sys::RSA_generate_key_ex(rsa, bits as c_int, e, ptr::null_mut()),
                1
            );
            sys::BN_free(e);
            rsa
        };
        assert!(!rsa.is_null());
        let (mut n, mut e, mut d) = (ptr::null(), ptr::null(), ptr::null());
        sys::RSA_get0_key(rsa, &mut n, &mut e, &mut d);
        let (mut p, mut q) = (ptr::null(), ptr::null());
        sys::RSA_get0_factors(rsa, &mut p, &mut q);
        let (mut dp, mut dq, mut qi) = (ptr::null(), ptr::null(), ptr::null());
        sys::RSA_get0_crt_params(rsa, &mut dp, &mut dq, &mut qi);
        let secret = |b| Some(Zeroizing::new(bn_bytes(b)));
        let parts = RsaParts {
            n: bn_bytes(n),
            e: bn_bytes(e),
            d: secret(d),
            p: secret(p),
            q: secret(q),
            dp: secret(dp),
            dq: secret(dq),
            qinv: secret(qi),
        };
        (Baseline(rsa), RsaKey::from_parts(parts).expect("key"))
    }
}

fn sizes() -> Vec<u32> {
    std::env::var("RUSTICA_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|v| v.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1024, 2048, 3072, 4096, 7680, 15360])
}

/// The emulated libica to benchmark the libica backend with, if built.
fn emulator() -> Option<String> {
    let path = std::env::var("RUSTICA_BENCH_LIBICA").unwrap_or_else(|_| {
        format!(
            "{}/target/release/libica_emu.so",
            env!("CARGO_MANIFEST_DIR")
        )
    });
    std::path::Path::new(&path).exists().then_some(path)
}

/// A router to `libica` (Some) or software (None).
fn route(libica: Option<&str>) -> ibmca_shim::backend::Router {
    use ibmca_shim::backend::{Choice, Router, Settings};
    let settings = Settings {
        choice: if libica.is_some() {
            Choice::Libica
        } else {
            Choice::Software
        },
        libica: libica.map(str::to_string),
        ..Settings::default()
    };
    Router::new(&settings)
}

fn ctx(router: &ibmca_shim::backend::Router) -> ibmca_shim::Context<'_> {
    ibmca_shim::Context {
        libctx: ibmca_shim::LibCtx::DEFAULT,
        router: Some(router),
        core_version: None,
    }
}

fn bench(c: &mut Criterion) {
    // Keep the benchmark out of the user's statistics file.
    std::env::set_var("RUSTICA_STATS", "0");
    let emu = emulator();
    for bits in sizes() {
        let (base, ours) = key(bits);
        let k = ours.size();
        let mut input = vec![0x5au8; k];
        input[0] = 0;
        let mut out = vec![0u8; k];

        let mut g = c.benchmark_group(format!("private-{bits}"));
        if bits > 4096 {
            g.sample_size(10);
        }
        g.bench_function(BenchmarkId::new("libcrypto", bits), |b| {
            // SAFETY: buffers hold k bytes; the key is valid.
            b.iter(|| unsafe {
                sys::RSA_private_encrypt(
                    k as c_int,
                    input.as_ptr(),
                    out.as_mut_ptr(),
                    base.0,
                    sys::RSA_NO_PADDING,
                )
            })
        });
        let software = route(None);
        g.bench_function(BenchmarkId::new("rustica-software", bits), |b| {
            b.iter(|| {
                ours.private_op_in(&ctx(&software), Op::Sign, &input)
                    .unwrap()
            })
        });
        if let (Some(emu), true) = (&emu, bits <= 4096) {
            let libica = route(Some(emu));
            assert_eq!(libica.name(), "libica", "{}", libica.status().detail);
            g.bench_function(BenchmarkId::new("rustica-libica-emu", bits), |b| {
                b.iter(|| ours.private_op_in(&ctx(&libica), Op::Sign, &input).unwrap())
            });
        }
        g.finish();

        let mut g = c.benchmark_group(format!("public-{bits}"));
        g.bench_function(BenchmarkId::new("libcrypto", bits), |b| {
            // SAFETY: as above.
            b.iter(|| unsafe {
                sys::RSA_public_encrypt(
                    k as c_int,
                    input.as_ptr(),
                    out.as_mut_ptr(),
                    base.0,
                    sys::RSA_NO_PADDING,
                )
            })
        });
        g.bench_function(BenchmarkId::new("rustica-software", bits), |b| {
            b.iter(|| ours.public_op(Op::Verify, &input).unwrap())
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
