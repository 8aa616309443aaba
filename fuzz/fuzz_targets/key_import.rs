//! Key import from OSSL_PARAM arrays: `rustica::keymgmt::key_from_params`,
//! then the key checks and both primitives on whatever key it accepted.
//! Each input either builds its array from scratch or edits a valid
//! 512-bit key part by part (keep, replace, drop, flip a bit, add zeros),
//! so the fuzzer reaches both the parser and the primitive's checks.
#![no_main]

use std::ffi::c_int;

use ibmca_shim::{KeyCheck, Op};
use libfuzzer_sys::fuzz_target;
use rustica::ffi;
use rustica::keymgmt::key_from_params;
use rustica_fuzz::{quiet_stats, Bytes, FuzzParams};

const NAMES: [&[u8]; 10] = [
    ffi::OSSL_PKEY_PARAM_RSA_N,
    ffi::OSSL_PKEY_PARAM_RSA_E,
    ffi::OSSL_PKEY_PARAM_RSA_D,
    ffi::OSSL_PKEY_PARAM_RSA_FACTOR1,
    ffi::OSSL_PKEY_PARAM_RSA_FACTOR2,
    ffi::OSSL_PKEY_PARAM_RSA_EXPONENT1,
    ffi::OSSL_PKEY_PARAM_RSA_EXPONENT2,
    ffi::OSSL_PKEY_PARAM_RSA_COEFFICIENT1,
    ffi::OSSL_PKEY_PARAM_RSA_FACTOR3,
    ffi::OSSL_PKEY_PARAM_RSA_DIGEST,
];

/// A 512-bit key made with `openssl genpkey` for this fuzzer (big-endian).
const BASE: [&str; 8] = [
    "00dcbca2f0e49ce219e4ea611ef3c669d748614534d2bf3108affd5d157abdf7d8f99e93aeb37f8b8afc7e216bf319f99c4bb946984e8533bdc54171b7c34060b9",
    "010001",
    "00c4da7dbdb343ade845dc380cf07e0c39efd4bf7162591b9391cfb449c992cd0a4cb5fbedeb5114fc64dd658d16f9638950c29da95e600278ae11db28caaee9e1",
    "00fb8ed05188352485c25f444d2c9a049efadfebf48e7fa4595eaed50c2515bcf5",
    "00e0a27e7b94428f89eb359a7ce258b33fed608381938801412a28ec5bfab5fa35",
    "100098bde705426a83dfdd8f6f3be8f9580a308f61153b9637d0b55acd6d2195",
    "0d6c283aa225480669b38e43a012c4c3311fef3bb2e111921f3ecac0c43e5371",
    "6a2fdf63cacff479b4bb15b6dd691559739407698ada68b9a5d4ba4a48b9dee8",
];

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Native-endian unsigned integer parameter bytes from big-endian.
fn native(be: &[u8]) -> Vec<u8> {
    let mut v = be.to_vec();
    if cfg!(target_endian = "little") {
        v.reverse();
    }
    v
}

fn edited_base(input: &mut Bytes) -> Vec<u8> {
    // Re-encode as the FuzzParams wire format: count, then per entry
    // name index, type (0 = unsigned integer), flags, length, value.
    let mut wire = vec![0u8];
    for (i, part) in BASE.iter().enumerate() {
        let mut be = hex(part);
        match input.u8() % 8 {
            0 => continue,
            1 => {
                let n = usize::from(input.u8()) % 79;
                be = input.take(n).to_vec();
            }
            2 if !be.is_empty() => {
                let at = usize::from(input.u16()) % (be.len() * 8);
                be[at / 8] ^= 1 << (at % 8);
            }
            3 => be.splice(0..0, [0u8; 4]).for_each(drop),
            _ => {}
        }
        let value = native(&be);
        if value.len() >= 80 {
            continue;
        }
        wire.extend([i as u8, 0, 0, value.len() as u8]);
        wire.extend(value);
        wire[0] += 1;
    }
    wire
}

fuzz_target!(|data: &[u8]| {
    quiet_stats();
    let mut input = Bytes(data);
    let mode = input.u8();
    let selection = c_int::from(input.u8());
    let wire;
    let mut params = if mode & 1 == 0 {
        FuzzParams::new(&mut input, &NAMES, 12)
    } else {
        wire = edited_base(&mut input);
        FuzzParams::new(&mut Bytes(&wire), &NAMES, 12)
    };
    // SAFETY: FuzzParams builds a terminated array whose entries point at
    // buffers of their stated sizes, alive until `params` drops.
    let Ok(key) = (unsafe { key_from_params(params.as_ptr(), selection) }) else {
        return;
    };
    for level in [KeyCheck::Public, KeyCheck::Private, KeyCheck::Pair] {
        let _ = key.check(level);
    }
    let msg = input.rest();
    if let Ok(m) = key.public_op(Op::Verify, msg) {
        assert_eq!(m.len(), key.size());
    }
    if key.has_private() {
        if let Ok(s) = key.private_op(Op::Sign, msg) {
            assert_eq!(s.len(), key.size());
            // A private result that leaves the primitive is always right.
            let back = key
                .public_op(Op::Verify, &s)
                .expect("public op on a signature");
            let strip = |v: &[u8]| {
                v.iter()
                    .skip_while(|&&b| b == 0)
                    .copied()
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                strip(&back),
                strip(msg),
                "private op result does not verify"
            );
        }
    }
});
