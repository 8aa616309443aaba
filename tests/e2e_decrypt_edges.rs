//! Decryption as OpenSSL 3.2+ does it, on rustica: PKCS#1 v1.5 implicit
//! rejection (OpenSSL 3.5's test vectors byte for byte, deterministic
//! synthetic messages, the explicit error with `implicit-rejection` 0),
//! the parameter itself, and the size edges (output buffer smaller than the
//! modulus, the TLS size query, client version 0), with refusals counted as
//! failed. Each decryption is proven to be rustica's by its counters or by
//! EVP_PKEY_CTX_get0_provider.

mod common;

#[path = "conformance/evp.rs"]
mod evp;

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::path::PathBuf;
use std::ptr;

use common::*;
use evp::errors;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/implicit-rejection")
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

struct Vector {
    key: String,
    implicit_rejection: bool,
    input: Vec<u8>,
    /// None: the decryption must fail.
    output: Option<Vec<u8>>,
    line: usize,
}

fn vectors() -> Vec<Vector> {
    let text = std::fs::read_to_string(fixtures().join("vectors.txt")).unwrap();
    let mut out = Vec::new();
    let mut line = 0;
    for block in text.split("\n\n") {
        let mut key = None;
        let mut v = Vector {
            key: String::new(),
            implicit_rejection: true,
            input: Vec::new(),
            output: None,
            line,
        };
        for l in block.lines() {
            line += 1;
            let Some((name, value)) = l.split_once(" =") else {
                continue;
            };
            let value = value.trim();
            match name {
                "Decrypt" => key = Some(value.to_string()),
                "Ctrl" => {
                    assert_eq!(value, "rsa_pkcs1_implicit_rejection:0");
                    v.implicit_rejection = false;
                }
                "Input" => v.input = unhex(value),
                "Output" => {
                    v.output = Some(match value.strip_prefix('"') {
                        Some(q) => q.trim_end_matches('"').as_bytes().to_vec(),
                        None => unhex(value),
                    })
                }
                "Result" => assert_eq!(value, "KEYOP_ERROR"),
                _ => {}
            }
        }
        line += 1;
        if let Some(key) = key {
            v.key = key;
            v.line = line;
            out.push(v);
        }
    }
    out
}

fn decrypt_args<'a>(key: &'a str, input: &'a str, output: &'a str) -> Vec<&'a str> {
    vec![
        "pkeyutl",
        "-decrypt",
        "-propquery",
        PROPQ,
        "-inkey",
        key,
        "-in",
        input,
        "-out",
        output,
    ]
}

#[test]
fn openssl_35_implicit_rejection_vectors_pass_byte_for_byte() {
    let lab = Lab::new();
    let all = vectors();
    assert!(all.len() >= 30, "only {} vectors", all.len());
    let mut synthetic = 0;
    for (i, v) in all.iter().enumerate() {
        let key = fixtures().join(format!("{}.pem", v.key));
        let key = key.to_str().unwrap();
        let ct = lab.write(&format!("ct{i}.bin"), &v.input);
        let out = format!("pt{i}.bin");
        let mut args = decrypt_args(key, &ct, &out);
        if !v.implicit_rejection {
            args.extend(["-pkeyopt", "implicit-rejection:0"]);
        }
        let before = lab.stats();
        match &v.output {
            Some(want) => {
                lab.ok(Side::RusticaFlags, &args);
                assert_eq!(
                    &lab.read(&out),
                    want,
                    "vector ending at line {} of vectors.txt",
                    v.line
                );
                if want.as_slice() != b"lorem ipsum"
                    && want.as_slice() != b"lorem ipsum dolor sit amet"
                    && want.as_slice() != b"Hello World"
                {
                    synthetic += 1;
                }
            }
            None => {
                let text = lab.fails(Side::RusticaFlags, &args);
                assert!(text.contains("padding check failed"), "{text}");
            }
        }
        let after = lab.stats();
        assert_eq!(
            after.total(Op::Decrypt),
            before.total(Op::Decrypt) + 1,
            "vector ending at line {}: not decrypted by rustica",
            v.line
        );
    }
    assert!(
        synthetic >= 15,
        "only {synthetic} synthetic messages checked"
    );
}

/// A ciphertext whose padding is bad: a random block below n, encrypted raw
/// by the default provider.
fn bad_ciphertext(lab: &Lab, key: &str, name: &str, seed: u8) -> String {
    let mut block = vec![0u8; 256];
    for (i, b) in block.iter_mut().enumerate().skip(1) {
        *b = (i as u8).wrapping_mul(seed).wrapping_add(seed) | 1;
    }
    let raw = lab.write(&format!("{name}.raw"), &block);
    let ct = lab.p(name);
    lab.ok(
        Side::Default,
        &[
            "pkeyutl",
            "-encrypt",
            "-inkey",
            key,
            "-in",
            &raw,
            "-out",
            &ct,
            "-pkeyopt",
            "rsa_padding_mode:none",
        ],
    );
    ct
}

#[test]
fn a_bad_ciphertext_gives_the_same_synthetic_message_every_time_or_an_error() {
    let lab = Lab::new();
    let key = lab.genkey(2048, "key.pem");
    let bad = bad_ciphertext(&lab, &key, "bad.bin", 7);
    let other = bad_ciphertext(&lab, &key, "other.bin", 13);

    let before = lab.done(Op::Decrypt);
    lab.ok(Side::RusticaFlags, &decrypt_args(&key, &bad, "m1"));
    lab.ok(Side::RusticaFlags, &decrypt_args(&key, &bad, "m2"));
    lab.ok(Side::RusticaFlags, &decrypt_args(&key, &other, "m3"));
    assert_eq!(lab.done(Op::Decrypt), before + 3);
    assert_eq!(lab.read("m1"), lab.read("m2"), "not deterministic");
    assert_ne!(lab.read("m1"), lab.read("m3"), "not ciphertext-dependent");

    // implicit-rejection 0: the error, once, from rustica.
    let mut args = decrypt_args(&key, &bad, "m4");
    args.extend(["-pkeyopt", "implicit-rejection:0"]);
    let text = lab.fails(Side::RusticaFlags, &args);
    assert!(
        // Library "rustica", no function (the provisional error carries
        // none: provider/error.rs, Provisional), then the reason.
        text.contains(":rustica::RSA decryption failed: the padding check failed"),
        "{text}"
    );
    assert_eq!(text.matches(":error:").count(), 1, "{text}");

    // A good ciphertext still decrypts with the parameter set either way.
    let plain = lab.write("plain", b"twelve bytes");
    let good = lab.p("good.bin");
    lab.ok(
        Side::Default,
        &[
            "pkeyutl", "-encrypt", "-inkey", &key, "-in", &plain, "-out", &good,
        ],
    );
    let mut args = decrypt_args(&key, &good, "m5");
    args.extend(["-pkeyopt", "implicit-rejection:0"]);
    lab.ok(Side::RusticaFlags, &args);
    assert_eq!(lab.read("m5"), b"twelve bytes");
}

#[test]
fn the_parameter_is_listed_as_settable_and_gettable() {
    let lab = Lab::new();
    let text = lab.ok(
        Side::RusticaFlags,
        &["list", "-asymcipher-algorithms", "-verbose"],
    );
    let at = text
        .find("@ rustica")
        .unwrap_or_else(|| panic!("rustica's RSA cipher is not listed:\n{text}"));
    let ours = &text[at..];
    let settable = ours
        .find("settable operation parameters")
        .expect("settable list");
    let gettable = ours
        .find("retrievable operation parameters")
        .expect("gettable list");
    assert!(settable < gettable, "{ours}");
    assert!(
        ours[settable..gettable].contains("implicit-rejection: unsigned integer"),
        "{ours}"
    );
    assert!(
        ours[gettable..].contains("implicit-rejection: unsigned integer"),
        "{ours}"
    );
}

#[test]
fn refusals_on_length_are_counted_as_failed_with_one_error_line() {
    let lab = Lab::new();
    let key = lab.genkey(2048, "key.pem");
    let long = lab.write("long.bin", &[0x42; 300]);

    let before = lab.stats().get(Op::Decrypt, Backend::Failed);
    let text = lab.fails(Side::RusticaFlags, &decrypt_args(&key, &long, "x"));
    assert!(text.contains("longer than the 256-byte modulus"), "{text}");
    assert_eq!(text.matches(":error:").count(), 1, "{text}");
    assert_eq!(lab.stats().get(Op::Decrypt, Backend::Failed), before + 1);

    let before = lab.stats().get(Op::Encrypt, Backend::Failed);
    let text = lab.fails(
        Side::RusticaFlags,
        &[
            "pkeyutl",
            "-encrypt",
            "-propquery",
            PROPQ,
            "-inkey",
            &key,
            "-in",
            &long,
            "-out",
            "y",
        ],
    );
    assert!(text.contains("do not fit PKCS#1 v1.5"), "{text}");
    assert_eq!(text.matches(":error:").count(), 1, "{text}");
    assert_eq!(lab.stats().get(Op::Encrypt, Backend::Failed), before + 1);
}

// ---- In process: what the openssl command cannot ask for. ----

#[allow(non_camel_case_types)]
type OSSL_PARAM = rustica::ffi::OSSL_PARAM;

extern "C" {
    fn OSSL_LIB_CTX_new() -> *mut c_void;
    fn OSSL_LIB_CTX_free(ctx: *mut c_void);
    fn OSSL_PROVIDER_set_default_search_path(ctx: *mut c_void, path: *const c_char) -> c_int;
    fn OSSL_PROVIDER_load(ctx: *mut c_void, name: *const c_char) -> *mut c_void;
    fn OSSL_PROVIDER_unload(prov: *mut c_void) -> c_int;
    fn OSSL_PROVIDER_get0_name(prov: *const c_void) -> *const c_char;
    fn EVP_PKEY_Q_keygen(
        ctx: *mut c_void,
        propq: *const c_char,
        kind: *const c_char,
        bits: usize,
    ) -> *mut c_void;
    fn EVP_PKEY_free(pkey: *mut c_void);
    fn EVP_PKEY_CTX_new_from_pkey(
        ctx: *mut c_void,
        pkey: *mut c_void,
        propq: *const c_char,
    ) -> *mut c_void;
    fn EVP_PKEY_CTX_free(ctx: *mut c_void);
    fn EVP_PKEY_CTX_get0_provider(ctx: *const c_void) -> *const c_void;
    fn EVP_PKEY_CTX_set_params(ctx: *mut c_void, params: *const OSSL_PARAM) -> c_int;
    fn EVP_PKEY_CTX_get_params(ctx: *mut c_void, params: *mut OSSL_PARAM) -> c_int;
    fn EVP_PKEY_CTX_set_rsa_padding(ctx: *mut c_void, pad: c_int) -> c_int;
    fn EVP_PKEY_encrypt_init(ctx: *mut c_void) -> c_int;
    fn EVP_PKEY_decrypt_init(ctx: *mut c_void) -> c_int;
    fn EVP_PKEY_encrypt(
        ctx: *mut c_void,
        out: *mut u8,
        outlen: *mut usize,
        input: *const u8,
        inlen: usize,
    ) -> c_int;
    fn EVP_PKEY_decrypt(
        ctx: *mut c_void,
        out: *mut u8,
        outlen: *mut usize,
        input: *const u8,
        inlen: usize,
    ) -> c_int;
    fn OSSL_PARAM_construct_uint(key: *const c_char, buf: *mut c_uint) -> OSSL_PARAM;
    fn OSSL_PARAM_construct_end() -> OSSL_PARAM;
}

const PKCS1: c_int = 1;
const NO_PADDING: c_int = 3;
const OAEP: c_int = 4;
const TLS: c_int = 7;

/// A library context with rustica and default, and one RSA-2048 key made
/// by the default provider.
struct Setup {
    lib: *mut c_void,
    provs: [*mut c_void; 2],
    key: *mut c_void,
}

impl Setup {
    fn new() -> Setup {
        let dir = std::ffi::CString::new(module_dir().to_str().unwrap()).unwrap();
        // SAFETY: plain library calls with valid strings.
        unsafe {
            let lib = OSSL_LIB_CTX_new();
            assert_eq!(OSSL_PROVIDER_set_default_search_path(lib, dir.as_ptr()), 1);
            let rustica = OSSL_PROVIDER_load(lib, c"rustica".as_ptr());
            let default = OSSL_PROVIDER_load(lib, c"default".as_ptr());
            assert!(!rustica.is_null() && !default.is_null(), "{}", errors());
            let key = EVP_PKEY_Q_keygen(lib, c"provider=default".as_ptr(), c"RSA".as_ptr(), 2048);
            assert!(!key.is_null(), "{}", errors());
            Setup {
                lib,
                provs: [rustica, default],
                key,
            }
        }
    }

    /// A context for `provider`, initialised for decryption (or encryption)
    /// with `pad`, checked to belong to that provider.
    fn ctx(&self, provider: &CStr, decrypt: bool, pad: c_int) -> Ctx {
        let propq =
            std::ffi::CString::new(format!("provider={}", provider.to_str().unwrap())).unwrap();
        // SAFETY: live context and key; the returned context is owned by Ctx.
        unsafe {
            let ctx = EVP_PKEY_CTX_new_from_pkey(self.lib, self.key, propq.as_ptr());
            assert!(!ctx.is_null());
            let init = if decrypt {
                EVP_PKEY_decrypt_init(ctx)
            } else {
                EVP_PKEY_encrypt_init(ctx)
            };
            assert_eq!(init, 1, "{}", errors());
            assert_eq!(EVP_PKEY_CTX_set_rsa_padding(ctx, pad), 1, "{}", errors());
            let prov = EVP_PKEY_CTX_get0_provider(ctx);
            assert_eq!(CStr::from_ptr(OSSL_PROVIDER_get0_name(prov)), provider);
            Ctx(ctx)
        }
    }

    /// A ciphertext of `pad` made by the default provider (for `none`, of
    /// a block whose PKCS#1 and OAEP padding are both bad).
    fn ciphertext(&self, pad: c_int) -> Vec<u8> {
        // TLS mode is for decryption only; its premaster is PKCS#1-padded.
        let enc = self.ctx(c"default", false, if pad == TLS { PKCS1 } else { pad });
        let msg: Vec<u8> = if pad == NO_PADDING {
            (0..256u32)
                .map(|i| if i == 0 { 0 } else { (i * 7 + 3) as u8 | 1 })
                .collect()
        } else if pad == TLS {
            let mut m = vec![3u8, 3];
            m.extend([0x55; 46]);
            m
        } else {
            b"a good message".to_vec()
        };
        let mut out = vec![0u8; 256];
        let mut len = out.len();
        // SAFETY: buffers of the given lengths.
        let ok =
            unsafe { EVP_PKEY_encrypt(enc.0, out.as_mut_ptr(), &mut len, msg.as_ptr(), msg.len()) };
        assert_eq!(ok, 1, "{}", errors());
        out.truncate(len);
        out
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        // SAFETY: we own the key, the provider references and the context.
        unsafe {
            EVP_PKEY_free(self.key);
            for p in self.provs {
                OSSL_PROVIDER_unload(p);
            }
            OSSL_LIB_CTX_free(self.lib);
        }
    }
}

struct Ctx(*mut c_void);

impl Ctx {
    /// EVP_PKEY_decrypt with an output buffer of `outsize` bytes (None:
    /// the size query): the length, or the error text.
    fn decrypt(&self, ct: &[u8], outsize: Option<usize>) -> Result<(usize, Vec<u8>), String> {
        let mut out = vec![0u8; outsize.unwrap_or(0)];
        let mut len = out.len();
        let out_ptr = if outsize.is_some() {
            out.as_mut_ptr()
        } else {
            ptr::null_mut()
        };
        // SAFETY: `out` holds `len` bytes (or is NULL for the size query).
        match unsafe { EVP_PKEY_decrypt(self.0, out_ptr, &mut len, ct.as_ptr(), ct.len()) } {
            1 => {
                out.truncate(len.min(out.len()));
                Ok((len, out))
            }
            _ => Err(errors()),
        }
    }

    fn set_uint(&self, name: &CStr, value: c_uint) -> bool {
        let mut v = value;
        // SAFETY: a two-entry array pointing at `v`, alive for the call.
        unsafe {
            let params = [
                OSSL_PARAM_construct_uint(name.as_ptr(), &mut v),
                OSSL_PARAM_construct_end(),
            ];
            EVP_PKEY_CTX_set_params(self.0, params.as_ptr()) == 1
        }
    }

    fn get_uint(&self, name: &CStr) -> Option<c_uint> {
        let mut v: c_uint = 0xdead;
        // SAFETY: as in set_uint.
        unsafe {
            let mut params = [
                OSSL_PARAM_construct_uint(name.as_ptr(), &mut v),
                OSSL_PARAM_construct_end(),
            ];
            (EVP_PKEY_CTX_get_params(self.0, params.as_mut_ptr()) == 1).then_some(v)
        }
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: we own the context.
        unsafe { EVP_PKEY_CTX_free(self.0) };
    }
}

#[test]
fn implicit_rejection_is_gettable_and_settable_in_process() {
    let s = Setup::new();
    let ctx = s.ctx(c"rustica", true, PKCS1);
    assert_eq!(
        ctx.get_uint(c"implicit-rejection"),
        Some(1),
        "default is on"
    );
    assert!(ctx.set_uint(c"implicit-rejection", 0));
    assert_eq!(ctx.get_uint(c"implicit-rejection"), Some(0));
    let bad = s.ciphertext(NO_PADDING);
    let err = ctx
        .decrypt(&bad, Some(256))
        .expect_err("explicit rejection");
    assert!(err.contains("padding check failed"), "{err}");
    assert!(ctx.set_uint(c"implicit-rejection", 1));
    let (len, _) = ctx.decrypt(&bad, Some(256)).expect("implicit rejection");
    assert!(len <= 256 - 11);
}

#[test]
fn a_short_output_buffer_fails_alike_for_good_and_bad_padding_as_in_openssl() {
    let s = Setup::new();
    let good = s.ciphertext(OAEP);
    let bad = s.ciphertext(NO_PADDING);
    for provider in [c"rustica", c"default"] {
        let ctx = s.ctx(provider, true, OAEP);
        assert_eq!(
            ctx.decrypt(&good, None).unwrap().0,
            256,
            "{provider:?} size query"
        );
        assert_eq!(ctx.decrypt(&good, Some(256)).unwrap().1, b"a good message");
        // A buffer big enough for the message but not for a modulus-sized
        // result: refused before any secret is looked at, whatever the padding.
        let e_good = ctx
            .decrypt(&good, Some(100))
            .expect_err("short buffer, good padding");
        let e_bad = ctx
            .decrypt(&bad, Some(100))
            .expect_err("short buffer, bad padding");
        assert!(e_good.contains("bad length"), "{provider:?}: {e_good}");
        assert!(e_bad.contains("bad length"), "{provider:?}: {e_bad}");
        if provider == c"rustica" {
            assert_eq!(e_good, e_bad, "the refusal depends on the padding");
        }
    }
}

#[test]
fn tls_mode_size_query_is_48_and_client_version_zero_is_refused_as_in_openssl() {
    let s = Setup::new();
    let ct = s.ciphertext(TLS);
    for provider in [c"rustica", c"default"] {
        let ctx = s.ctx(provider, true, TLS);
        assert_eq!(
            ctx.decrypt(&ct, None).unwrap().0,
            48,
            "{provider:?} size query"
        );
        // No client version set (0): refused.
        let err = ctx.decrypt(&ct, Some(48)).expect_err("client version 0");
        assert!(!err.is_empty(), "{provider:?}");
        assert!(ctx.set_uint(c"tls-client-version", 0x0303));
        let (len, pms) = ctx.decrypt(&ct, Some(48)).expect("premaster");
        assert_eq!(len, 48);
        assert_eq!(&pms[..2], &[3, 3], "{provider:?}");
        assert_eq!(&pms[2..], &[0x55; 46][..], "{provider:?}");
        assert!(
            ctx.decrypt(&ct, Some(47)).is_err(),
            "{provider:?} 47-byte buffer"
        );
    }
}
