//! Decryption padding on hostile decrypted blocks: PKCS#1 v1.5 type 2,
//! OAEP and the TLS premaster rule, each checked against a plain
//! (non-constant-time) reference decoder written from RFC 8017 / RFC 5246,
//! PKCS#1 v1.5 with implicit rejection against a plain reference of the
//! synthetic-message algorithm, plus encode/decode round trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rustica::digest::DigestCache;
use rustica::enc_padding::{self, HmacSha256, Oaep, Sha256, SHA256_LEN, TLS_PREMASTER_LEN};
use rustica_fuzz::{digest, Bytes};

fn cache() -> &'static DigestCache {
    static CACHE: std::sync::OnceLock<DigestCache> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| DigestCache::new(std::ptr::null_mut()))
}

fn reference_type2(em: &[u8]) -> Option<&[u8]> {
    if em.len() < 11 || em[0] != 0 || em[1] != 2 {
        return None;
    }
    let sep = em[2..].iter().position(|&b| b == 0)? + 2;
    if sep < 10 {
        return None;
    }
    Some(&em[sep + 1..])
}

fn reference_oaep(o: &Oaep, em: &[u8]) -> Option<Vec<u8>> {
    let h = o.md.size();
    let k = em.len();
    if k < 2 * h + 2 {
        return None;
    }
    let (masked_seed, masked_db) = em[1..].split_at(h);
    let seed_mask = rustica::padding::mgf1(o.digests, o.mgf1, masked_db, h).unwrap();
    let seed: Vec<u8> = masked_seed
        .iter()
        .zip(&seed_mask)
        .map(|(a, b)| a ^ b)
        .collect();
    let db_mask = rustica::padding::mgf1(o.digests, o.mgf1, &seed, k - h - 1).unwrap();
    let db: Vec<u8> = masked_db.iter().zip(&db_mask).map(|(a, b)| a ^ b).collect();
    let l_hash = o.digests.digest(o.md, o.label).unwrap();
    if em[0] != 0 || db[..h] != l_hash[..] {
        return None;
    }
    let one = db[h..].iter().position(|&b| b != 0)? + h;
    if db[one] != 1 {
        return None;
    }
    Some(db[one + 1..].to_vec())
}

/// Implicit rejection written plainly (branches, slices): the real message
/// when the padding is good, else the synthetic one.
fn reference_implicit(key: &[u8; SHA256_LEN], c: &[u8], em: &[u8]) -> Vec<u8> {
    if let Some(m) = reference_type2(em) {
        return m.to_vec();
    }
    let k = em.len();
    let sha = // SAFETY: NULL is the default library context.
    unsafe { Sha256::fetch(std::ptr::null_mut()) }.unwrap();
    let kdk = HmacSha256::new(&sha, key).unwrap().mac(&[c]).unwrap();
    let mut prf = HmacSha256::new(&sha, &kdk[..]).unwrap();
    let mut stream = |label: &[u8], len: usize| -> Vec<u8> {
        let bits = ((len * 8) as u16).to_be_bytes();
        (0u16..)
            .map(|i| prf.mac(&[&i.to_be_bytes(), label, &bits]).unwrap().to_vec())
            .take(len.div_ceil(32))
            .flatten()
            .take(len)
            .collect()
    };
    let lengths = stream(b"length", 256);
    let message = stream(b"message", k);
    let max = k - 10;
    let mask = (max + 1).next_power_of_two() - 1;
    let mut len = 0;
    for pair in lengths.chunks(2) {
        let candidate = usize::from(u16::from_be_bytes([pair[0], pair[1]])) & mask;
        if candidate < max {
            len = candidate;
        }
    }
    message[k - len..].to_vec()
}

fn decoded(d: &enc_padding::Decoded) -> Option<&[u8]> {
    match d.good {
        u32::MAX => Some(&d.message[..d.len]),
        0 => None,
        other => panic!("mask {other:#x} is neither all ones nor zero"),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Bytes(data);
    let which = input.u8();
    match which % 5 {
        0 => {
            let em = input.rest();
            let d = enc_padding::pkcs1_type2_decode(em);
            assert_eq!(decoded(&d), reference_type2(em));
        }
        1 => {
            let md = digest(input.u8());
            let mgf1 = digest(input.u8());
            let label_len = usize::from(input.u8() % 32);
            let label = input.take(label_len).to_vec();
            let em = input.rest();
            let o = Oaep {
                digests: cache(),
                md,
                mgf1,
                label: &label,
            };
            match o.decode(em) {
                Ok(d) => assert_eq!(decoded(&d), reference_oaep(&o, em).as_deref()),
                Err(_) => assert!(em.len() < 2 * md.size() + 2),
            }
        }
        2 => {
            let client = u32::from(input.u16());
            let alt = u32::from(input.u16());
            let mut random = [0u8; TLS_PREMASTER_LEN];
            random.copy_from_slice(&{
                let mut r = input.take(TLS_PREMASTER_LEN).to_vec();
                r.resize(TLS_PREMASTER_LEN, 0x5a);
                r
            });
            let em = input.rest();
            let pms = enc_padding::tls_premaster(em, client, alt, &random);
            let expected = match reference_type2(em) {
                Some(m)
                    if m.len() == TLS_PREMASTER_LEN
                        && ((u32::from(m[0]) << 8 | u32::from(m[1])) == client
                            || (alt != 0 && (u32::from(m[0]) << 8 | u32::from(m[1])) == alt)) =>
                {
                    m.to_vec()
                }
                _ => random.to_vec(),
            };
            assert_eq!(&pms[..], &expected[..]);
        }
        3 => {
            let mut key = [0u8; SHA256_LEN];
            key.copy_from_slice(&{
                let mut r = input.take(SHA256_LEN).to_vec();
                r.resize(SHA256_LEN, 0xa5);
                r
            });
            let em = input.rest();
            // The ciphertext only feeds the key derivation: any k bytes do.
            let c: Vec<u8> = em.iter().rev().map(|b| b ^ 0x3c).collect();
            let sha = // SAFETY: NULL is the default library context.
    unsafe { Sha256::fetch(std::ptr::null_mut()) }.unwrap();
            match enc_padding::pkcs1_type2_decode_implicit(&sha, &key, &c, em) {
                Ok(d) => {
                    let got = decoded(&d).expect("implicit rejection always succeeds");
                    assert!(got.len() <= em.len() - 11);
                    assert_eq!(got, &reference_implicit(&key, &c, em)[..]);
                }
                Err(_) => assert!(em.len() < 11),
            }
        }
        _ => {
            let md = digest(input.u8());
            let mgf1 = digest(input.u8());
            let k = 11 + usize::from(input.u16()) % 600;
            let label_len = usize::from(input.u8() % 32);
            let label = input.take(label_len).to_vec();
            let m = input.rest().to_vec();
            let random = |n: usize| Ok((0..n).map(|i| (i as u8).wrapping_mul(31) | 1).collect());
            if let Ok(em) = enc_padding::pkcs1_type2_encode(&m, k, random) {
                assert_eq!(em.len(), k);
                assert_eq!(decoded(&enc_padding::pkcs1_type2_decode(&em)), Some(&m[..]));
            }
            let o = Oaep {
                digests: cache(),
                md,
                mgf1,
                label: &label,
            };
            if let Ok(em) = o.encode(&m, k, random) {
                assert_eq!(em.len(), k);
                assert_eq!(decoded(&o.decode(&em).unwrap()), Some(&m[..]));
            }
        }
    }
});
