//! Signature decoding on hostile encoded messages: PKCS#1 v1.5 type 1
//! (`padding::pkcs1_type1_decode`, checked against a plain reference) and
//! EMSA-PSS verification (`Pss::verify`, with fuzzed key size, digests and
//! salt rule), plus encode/verify round trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rustica::digest::DigestCache;
use rustica::padding::{self, Pss};
use rustica_fuzz::{digest, Bytes};

/// RFC 8017's EMSA-PKCS1-v1_5 structure, written plainly.
fn reference_type1(em: &[u8]) -> Option<&[u8]> {
    if em.len() < 11 || em[0] != 0 || em[1] != 1 {
        return None;
    }
    let sep = em[2..].iter().position(|&b| b != 0xff)? + 2;
    if em[sep] != 0 || sep < 10 {
        return None;
    }
    Some(&em[sep + 1..])
}

fn cache() -> &'static DigestCache {
    static CACHE: std::sync::OnceLock<DigestCache> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| DigestCache::new(std::ptr::null_mut()))
}

fuzz_target!(|data: &[u8]| {
    let mut input = Bytes(data);
    let which = input.u8();
    match which % 3 {
        0 => {
            let em = input.rest();
            assert_eq!(padding::pkcs1_type1_decode(em), reference_type1(em));
        }
        1 => {
            let md = digest(input.u8());
            let mgf1 = digest(input.u8());
            let mod_bits = usize::from(input.u16()) % 4200;
            let saltlen = i32::from(input.u8() as i8);
            let mhash = input.take(md.size()).to_vec();
            let em = input.rest();
            let pss = Pss {
                digests: cache(),
                md,
                mgf1,
                mod_bits,
            };
            let _ = pss.verify(&mhash, em, saltlen);
            let _ = pss.max_salt();
            let _ = pss.signing_salt_len(saltlen);
        }
        _ => {
            // Round trip: whatever encodes must verify with its salt length.
            let md = digest(input.u8());
            let mgf1 = digest(input.u8());
            let mod_bits = 256 + usize::from(input.u16()) % 4000;
            let salt_len = usize::from(input.u8());
            let mut mhash = input.take(md.size()).to_vec();
            mhash.resize(md.size(), 0);
            let salt = input.take(salt_len).to_vec();
            let k = mod_bits.div_ceil(8);
            let pss = Pss {
                digests: cache(),
                md,
                mgf1,
                mod_bits,
            };
            if let Ok(em) = pss.encode(&mhash, &salt, k) {
                assert_eq!(em.len(), k);
                assert!(pss.verify(&mhash, &em, salt.len() as i32).unwrap());
                assert!(pss.verify(&mhash, &em, padding::SALT_AUTO).unwrap());
            }
            let t = input.rest();
            if let Ok(em) = padding::pkcs1_type1_encode(t, k) {
                assert_eq!(padding::pkcs1_type1_decode(&em), Some(t));
            }
        }
    }
});
