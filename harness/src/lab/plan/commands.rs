//! The command lines of the step table: the files of a row, and the
//! `openssl` arguments each step runs on side A and side B.

use super::openssl::Side;
use super::options::{SECLEVEL1_BELOW, SUBJECT};
use std::path::PathBuf;

/// The files of one row (one key size) under the output directory.
pub struct Paths {
    pub out: PathBuf,
    pub document: PathBuf,
    pub bits: u32,
}

impl Paths {
    pub fn dir(&self, side: Side) -> PathBuf {
        self.out.join(side.name())
    }
    pub fn key(&self) -> PathBuf {
        self.out.join(format!("private-{}.pem", self.bits))
    }
    pub fn public(&self) -> PathBuf {
        self.out.join(format!("public-{}.pem", self.bits))
    }
    pub fn generated_key(&self, side: Side, i: usize) -> PathBuf {
        self.dir(side)
            .join("keygen")
            .join(format!("private-{}-{}.pem", self.bits, i + 1))
    }
    pub fn signature(&self, side: Side) -> PathBuf {
        self.dir(side).join(format!("signature-{}.bin", self.bits))
    }
    pub fn certificate(&self, side: Side) -> PathBuf {
        self.dir(side).join(format!("mycert-{}.pem", self.bits))
    }
    pub fn new_key_certificate(&self, side: Side) -> PathBuf {
        self.dir(side)
            .join(format!("mycert-newkey-{}.pem", self.bits))
    }
    pub fn new_key(&self, side: Side) -> PathBuf {
        self.dir(side)
            .join(format!("newkey-private-{}.pem", self.bits))
    }
    /// The certificate the TLS servers present: B's, else A's.
    pub fn served_certificate(&self) -> Option<PathBuf> {
        [Side::B, Side::A]
            .iter()
            .map(|&s| self.certificate(s))
            .find(|p| p.is_file())
    }
}

pub fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn path(p: PathBuf) -> String {
    p.to_string_lossy().into_owned()
}

/// The A client's flags for one TLS column.
#[derive(Clone, Copy, Debug)]
pub struct TlsClient {
    pub protocol: &'static str,
    /// None: the default cipher list.
    pub cipher: Option<&'static str>,
}

impl TlsClient {
    /// `s_time` flags; small keys need security level 1 on the cipher.
    pub fn flags(&self, bits: u32) -> Vec<String> {
        let mut v = vec![self.protocol.to_string()];
        let low = bits < SECLEVEL1_BELOW;
        match (self.cipher, low) {
            (None, false) => {}
            (None, true) => v.extend(strings(&["-cipher", "DEFAULT:@SECLEVEL=1"])),
            (Some(c), false) => v.extend(strings(&["-cipher", c])),
            (Some(c), true) => v.extend(strings(&["-cipher", &format!("{c}:@SECLEVEL=1")])),
        }
        v
    }
}

pub fn exit_status_is_enough(_stdout: &str) -> Result<(), String> {
    Ok(())
}

pub fn keygen_args(p: &Paths, side: Side, i: usize) -> Vec<String> {
    let out = p.generated_key(side, i);
    if let Some(dir) = out.parent() {
        // Created here so that the step needs no set-up of its own.
        let _ = std::fs::create_dir_all(dir);
    }
    strings(&[
        "-quiet",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        &format!("rsa_keygen_bits:{}", p.bits),
        "-out",
        &path(out),
    ])
}

pub fn sign_args(p: &Paths, side: Side, _i: usize) -> Vec<String> {
    strings(&[
        "-sha256",
        "-sign",
        &path(p.key()),
        "-out",
        &path(p.signature(side)),
        &path(p.document.clone()),
    ])
}

/// Each side verifies the other side's signature; C verifies B's (C's own
/// is checked to be identical to A's and B's, which verify each other's).
pub fn verify_args(p: &Paths, side: Side, _i: usize) -> Vec<String> {
    let other = match side {
        Side::A | Side::C => Side::B,
        Side::B => Side::A,
    };
    strings(&[
        "-sha256",
        "-verify",
        &path(p.public()),
        "-signature",
        &path(p.signature(other)),
        &path(p.document.clone()),
    ])
}

pub fn verified_ok(stdout: &str) -> Result<(), String> {
    if stdout.contains("Verified OK") {
        Ok(())
    } else {
        Err(format!(
            "verification did not say `Verified OK`: {}",
            stdout.trim()
        ))
    }
}

pub fn certificate_args(p: &Paths, side: Side, _i: usize) -> Vec<String> {
    strings(&[
        "-x509",
        "-new",
        "-key",
        &path(p.key()),
        "-subj",
        SUBJECT,
        "-sha256",
        "-days",
        "365",
        "-out",
        &path(p.certificate(side)),
    ])
}

pub fn new_key_certificate_args(p: &Paths, side: Side, _i: usize) -> Vec<String> {
    strings(&[
        "-x509",
        "-newkey",
        &format!("rsa:{}", p.bits),
        "-noenc",
        "-keyout",
        &path(p.new_key(side)),
        "-subj",
        SUBJECT,
        "-sha256",
        "-days",
        "365",
        "-out",
        &path(p.new_key_certificate(side)),
    ])
}
