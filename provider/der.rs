//! The few DER structures RSA signing needs: DigestInfo (PKCS#1 v1.5) and
//! the signature AlgorithmIdentifier X.509 signing asks for.

use crate::digest::DigestId;

const OID_RSASSA_PSS: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a];
const OID_MGF1: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x08];

pub fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let first = bytes
            .iter()
            .position(|&b| b != 0)
            .unwrap_or(bytes.len() - 1);
        out.push(0x80 | (bytes.len() - first) as u8);
        out.extend_from_slice(&bytes[first..]);
    }
    out.extend_from_slice(content);
    out
}

fn seq(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

fn oid(value: &[u8]) -> Vec<u8> {
    tlv(0x06, value)
}

const NULL: &[u8] = &[0x05, 0x00];

fn uint(v: usize) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let first = bytes
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(bytes.len() - 1);
    let mut content = Vec::new();
    if bytes[first] & 0x80 != 0 {
        content.push(0);
    }
    content.extend_from_slice(&bytes[first..]);
    tlv(0x02, &content)
}

/// The DER of a DigestInfo up to its hash: SEQUENCE { AlgorithmIdentifier
/// { digest OID, NULL }, OCTET STRING header }. A constant per digest and
/// hash length, built on the stack: signing and verifying write or compare
/// it without allocating. Empty for MD5-SHA1 (no OID: TLS 1.0/1.1 sign the
/// hash alone).
pub struct DigestInfoPrefix {
    bytes: [u8; DIGEST_INFO_PREFIX_MAX],
    len: usize,
}

/// 8 bytes of headers, NULL's 2 and the OID (at most 9 bytes here).
const DIGEST_INFO_PREFIX_MAX: usize = 24;

impl std::ops::Deref for DigestInfoPrefix {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The DigestInfo prefix of `md` for a hash of `hash_len` bytes; None
/// when a length would need DER's long form (a hash of 100 bytes or more,
/// which no digest has: `digest_info` then encodes in general).
pub fn digest_info_prefix(md: DigestId, hash_len: usize) -> Option<DigestInfoPrefix> {
    let mut prefix = DigestInfoPrefix {
        bytes: [0; DIGEST_INFO_PREFIX_MAX],
        len: 0,
    };
    if !md.has_oid() {
        return Some(prefix);
    }
    let digest_oid = digest_info_oid(md);
    let alg_len = 2 + digest_oid.len() + NULL.len();
    let total_len = 2 + alg_len + 2 + hash_len;
    if 10 + digest_oid.len() > DIGEST_INFO_PREFIX_MAX || total_len >= 0x80 {
        return None;
    }
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        prefix.bytes[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    // Short-form lengths (checked above), so each fits one byte.
    put(&[
        0x30,
        total_len as u8,
        0x30,
        alg_len as u8,
        0x06,
        digest_oid.len() as u8,
    ]);
    put(digest_oid);
    put(NULL);
    put(&[0x04, hash_len as u8]);
    prefix.len = at;
    Some(prefix)
}

/// The OID a DigestInfo names `md` with.
fn digest_info_oid(md: DigestId) -> &'static [u8] {
    // OpenSSL writes SM3's DigestInfo with the OID of sm3WithRSAEncryption
    // (1.2.156.10197.1.504), not SM3's own (…401); rustica writes and
    // accepts what OpenSSL does, so signatures interoperate both ways.
    // Likewise OpenSSL's MD4 DigestInfo carries 1.2.840.113549.2.3, not
    // MD4's own ...2.4 (crypto/rsa/rsa_sign.c), and stock verification
    // accepts only that form.
    const MD4_AS_OPENSSL_WRITES_IT: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x03];
    match md {
        DigestId::Sm3 => md.info().pkcs1_sig_oid,
        DigestId::Md4 => MD4_AS_OPENSSL_WRITES_IT,
        _ => md.info().oid,
    }
}

/// DigestInfo by the general encoder (any lengths).
fn digest_info_general(md: DigestId, hash: &[u8]) -> Vec<u8> {
    if !md.has_oid() {
        return hash.to_vec();
    }
    let alg = seq(&[&oid(digest_info_oid(md)), NULL]);
    seq(&[&alg, &tlv(0x04, hash)])
}

/// DER of DigestInfo { AlgorithmIdentifier { digest OID, NULL }, OCTET STRING hash };
/// for MD5-SHA1 (no OID) the hash alone, as TLS 1.0/1.1 sign it.
pub fn digest_info(md: DigestId, hash: &[u8]) -> Vec<u8> {
    let Some(prefix) = digest_info_prefix(md, hash.len()) else {
        return digest_info_general(md, hash);
    };
    let mut out = Vec::with_capacity(prefix.len() + hash.len());
    out.extend_from_slice(&prefix);
    out.extend_from_slice(hash);
    out
}

/// Whether `t` is the DigestInfo of `hash` under `md`, compared in place
/// (verification compares public data).
pub fn is_digest_info(t: &[u8], md: DigestId, hash: &[u8]) -> bool {
    match digest_info_prefix(md, hash.len()) {
        Some(prefix) => {
            t.len() == prefix.len() + hash.len()
                && t[..prefix.len()] == prefix[..]
                && t[prefix.len()..] == *hash
        }
        None => t == digest_info_general(md, hash),
    }
}

/// OCTET STRING `hash`: what OpenSSL signs for MDC2 instead of a
/// DigestInfo (RSA_sign_ASN1_OCTET_STRING); verification takes both.
pub fn octet_string(hash: &[u8]) -> Vec<u8> {
    tlv(0x04, hash)
}

/// AlgorithmIdentifier of sha*WithRSAEncryption (PKCS#1 v1.5).
pub fn pkcs1_algorithm_id(md: DigestId) -> Vec<u8> {
    seq(&[&oid(md.info().pkcs1_sig_oid), NULL])
}

/// A digest's AlgorithmIdentifier as RSASSA-PSS parameters carry it.
/// RFC 4055 (section 2.1) requires NULL parameters for SHA-1 and SHA-2
/// there, and the default provider writes them; it cannot encode the other
/// digests at all, and rustica leaves their parameters absent, as their
/// own specifications (NIST's SHA-3 object identifiers) ask.
fn hash_algorithm(md: DigestId) -> Vec<u8> {
    use DigestId::*;
    match md {
        Sha1 | Sha224 | Sha256 | Sha384 | Sha512 | Sha512_224 | Sha512_256 => {
            seq(&[&oid(md.info().oid), NULL])
        }
        _ => seq(&[&oid(md.info().oid)]),
    }
}

/// AlgorithmIdentifier of RSASSA-PSS with explicit parameters; fields equal
/// to the defaults (SHA-1, MGF1 with SHA-1, salt 20) are omitted as DER requires.
pub fn pss_algorithm_id(md: DigestId, mgf1: DigestId, salt_len: usize) -> Vec<u8> {
    let mut params = Vec::new();
    if md != DigestId::Sha1 {
        params.extend(tlv(0xa0, &hash_algorithm(md)));
    }
    if mgf1 != DigestId::Sha1 {
        params.extend(tlv(0xa1, &seq(&[&oid(OID_MGF1), &hash_algorithm(mgf1)])));
    }
    if salt_len != 20 {
        params.extend(tlv(0xa2, &uint(salt_len)));
    }
    seq(&[&oid(OID_RSASSA_PSS), &tlv(0x30, &params)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_digest_info_prefix_is_the_published_one() {
        let di = digest_info(DigestId::Sha256, &[0u8; 32]);
        let prefix = [
            0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
            0x01, 0x05, 0x00, 0x04, 0x20,
        ];
        assert_eq!(&di[..prefix.len()], &prefix);
        assert_eq!(di.len(), prefix.len() + 32);
    }

    #[test]
    fn sha1_digest_info_prefix_is_the_published_one() {
        let di = digest_info(DigestId::Sha1, &[0u8; 20]);
        let prefix = [
            0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00, 0x04,
            0x14,
        ];
        assert_eq!(&di[..prefix.len()], &prefix);
    }

    #[test]
    fn sha256_with_rsa_algorithm_id() {
        assert_eq!(
            pkcs1_algorithm_id(DigestId::Sha256),
            [
                0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b, 0x05,
                0x00
            ]
        );
    }

    #[test]
    fn pss_defaults_encode_empty_parameters() {
        let id = pss_algorithm_id(DigestId::Sha1, DigestId::Sha1, 20);
        assert_eq!(&id[id.len() - 2..], &[0x30, 0x00]);
    }

    /// The default provider's `algorithm-id` for PSS with SHA-256, MGF1
    /// with SHA-384 and a 20-byte salt (OpenSSL 3.0.19).
    #[test]
    fn pss_sha2_parameters_carry_null_as_rfc_4055_requires() {
        let id = pss_algorithm_id(DigestId::Sha256, DigestId::Sha384, 20);
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "303c06092a864886f70d01010a302fa00f300d06096086480165030402010500\
             a11c301a06092a864886f70d010108300d06096086480165030402020500"
        );
    }

    /// The stack-built prefix is what the general DER encoder writes, for
    /// every digest and hash length rustica signs with.
    #[test]
    fn digest_info_prefix_matches_the_general_encoder() {
        for md in crate::digest::DIGESTS.iter().map(|d| d.id) {
            let hash = vec![0x5a; md.size()];
            let general = digest_info_general(md, &hash);
            assert!(digest_info_prefix(md, hash.len()).is_some(), "{md:?}");
            assert_eq!(digest_info(md, &hash), general, "{md:?}");
            assert!(is_digest_info(&general, md, &hash));
            assert!(!is_digest_info(&general[1..], md, &hash));
            let mut other = general.clone();
            *other.last_mut().unwrap() ^= 1;
            assert!(!is_digest_info(&other, md, &hash));
        }
        assert!(digest_info_prefix(DigestId::Md5Sha1, 36)
            .unwrap()
            .is_empty());
        // A hash too long for the short form takes the general encoder.
        let long = vec![1u8; 200];
        assert!(digest_info_prefix(DigestId::Sha256, long.len()).is_none());
        assert_eq!(
            digest_info(DigestId::Sha256, &long),
            digest_info_general(DigestId::Sha256, &long)
        );
        assert!(is_digest_info(
            &digest_info(DigestId::Sha256, &long),
            DigestId::Sha256,
            &long
        ));
    }

    #[test]
    fn long_lengths_use_long_form() {
        let t = tlv(0x04, &[0u8; 300]);
        assert_eq!(&t[..4], &[0x04, 0x82, 0x01, 0x2c]);
    }
}
