//! What the report records about the host and the run: the environment
//! (the programs, the CPU, B's provider, the path side A's RSA takes), the
//! options as they ran, and how side B runs `openssl speed`.

use super::openssl::SideEnv;
use super::options::{LabArgs, Options};
use super::setup::{self, Setup};
use super::{columns, zcrypt};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;

/// How side B runs `openssl speed`, for the report.
pub fn speed_load(b: &SideEnv, out: &Path) -> String {
    match &b.speed_conf {
        None => format!(
            "config ({}), as every other column",
            b.conf.strip_prefix(out).unwrap_or(&b.conf).display()
        ),
        Some(conf) => format!(
            "flags (-provider-path DIR -provider rustica -provider default) + config properties \
             ?provider=rustica (`{}`: OPENSSL_CONF with default_properties only) for openssl speed, \
             which applies -propquery to ciphers, digests and MACs but not to its RSA keys",
            conf.strip_prefix(out).unwrap_or(conf).display()
        ),
    }
}

/// The host, the programs and B's provider, for the report; adds the note
/// on side A's RSA path.
pub fn environment(
    args: &LabArgs,
    setup: &Setup,
    a: &SideEnv,
    provider_name: &str,
    listing: &str,
    notes: &mut Vec<String>,
) -> Value {
    let s390xcap = std::env::var("OPENSSL_s390xcap").ok();
    let version_a = setup::run_capture(a, "version", &["-a"]).1;
    // A's openssl may be another architecture's than this program (the
    // s390x lane's qemu wrapper): its own platform line says which.
    let a_arch = version_a
        .lines()
        .find_map(|l| l.strip_prefix("platform:"))
        .filter(|p| p.contains("s390x"))
        .map_or(std::env::consts::ARCH, |_| "s390x");
    let s390x = a_arch == "s390x";
    // The device node, or (for a program under qemu, whose /dev/z90crypt
    // the card model answers) cards in the zcrypt counters the run reads.
    let z90crypt = Path::new("/dev/z90crypt").exists()
        || (s390x && args.sysfs.as_deref().and_then(zcrypt::total).is_some());
    let mut environment = json!({
        "openssl": setup.openssl.to_string_lossy(),
        "openssl_version": setup.openssl_version,
        "openssl_version_a": version_a.trim(),
        "a_arch": a_arch,
        "cpu": setup::cpu_model(),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "arch": std::env::consts::ARCH,
        "kernel": fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        "module": setup.module.to_string_lossy(),
        "provider_name": provider_name,
        "providers_b": listing.trim(),
        "load": args.load.name(),
        "backend_requested": args.backend,
        "libica_requested": args.libica,
        "OPENSSL_s390xcap": s390xcap,
    });
    let a_path = stock_rsa_path(
        a_arch,
        &setup.openssl_version,
        s390xcap.as_deref(),
        z90crypt,
    );
    environment["a_rsa_path"] = json!(a_path);
    environment["z90crypt"] = json!(z90crypt);
    notes.push(format!("A's RSA path: {a_path}"));
    if s390x {
        let nocex = s390xcap.as_deref().is_some_and(|v| v.contains("nocex"));
        environment["s390x_a_cex_disabled"] = json!(nocex);
    }
    environment
}

/// The options of the run, as the report records them.
pub fn options_json(args: &LabArgs, setup: &Setup, opts: &Options, out: &Path) -> Value {
    json!({
        "sizes": setup.sizes,
        "reps": opts.reps,
        "keygen_reps": setup.sizes.iter().map(|&b| (b.to_string(), json!(opts.keygen_count(b)))).collect::<serde_json::Map<String, Value>>(),
        "signatures": opts.signatures,
        "verifications": opts.verifications,
        "certificates": opts.certs,
        "certificates_new_key": setup.sizes.iter().map(|&b| (b.to_string(), json!(opts.newkey_count(b)))).collect::<serde_json::Map<String, Value>>(),
        "tls_seconds": opts.tls_seconds,
        "speed_seconds": opts.speed_seconds,
        "keys": args.keys.as_ref().map(|k| k.to_string_lossy().to_string()),
        "skip": args.skip.iter().map(|&s| columns::skip_name(s)).collect::<Vec<_>>(),
        "out": out.to_string_lossy(),
    })
}

/// Which path stock OpenSSL (side A) can take for RSA on this host, in
/// words for the report. OpenSSL 3.2 and later on s390x send RSA ME/CRT to
/// a CEX adapter themselves (crypto/bn/bn_s390x.c) when /dev/z90crypt is
/// there, unless `OPENSSL_s390xcap` contains `nocex`: then A is already
/// hardware and the A/B compares two offloads, not software and offload.
pub fn stock_rsa_path(
    arch: &str,
    openssl_version: &str,
    s390xcap: Option<&str>,
    z90crypt: bool,
) -> String {
    if arch != "s390x" {
        return format!(
            "software (libcrypto on {arch}; no crypto adapter offload on this architecture)"
        );
    }
    // "OpenSSL 3.5.7 1 Jul 2026 ..." -> (3, 5)
    let (major, minor) = openssl_version
        .split_whitespace()
        .nth(1)
        .and_then(|v| {
            let mut it = v.split('.').map(|p| p.parse::<u32>().ok());
            Some((it.next()??, it.next()??))
        })
        .unwrap_or((0, 0));
    let cap = s390xcap.unwrap_or("(unset)");
    if (major, minor) < (3, 2) {
        format!("software (OpenSSL {major}.{minor} has no built-in CEX offload; OPENSSL_s390xcap={cap})")
    } else if s390xcap.is_some_and(|v| v.contains("nocex")) {
        format!("software (OpenSSL's own CEX offload disabled: OPENSSL_s390xcap={cap})")
    } else if !z90crypt {
        format!(
            "software (OpenSSL {major}.{minor} could offload to CEX, but /dev/z90crypt is absent)"
        )
    } else {
        format!(
            "possibly hardware: OpenSSL {major}.{minor} offloads RSA to CEX itself through \
             /dev/z90crypt (OPENSSL_s390xcap={cap}); run the lab with OPENSSL_s390xcap=nocex \
             for a software baseline"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_rsa_path_says_when_side_a_is_already_hardware() {
        let v30 = "OpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19 27 Jan 2026)";
        let v35 = "OpenSSL 3.5.7 1 Jul 2026";
        assert!(
            stock_rsa_path("x86_64", v35, None, false).starts_with("software (libcrypto on x86_64")
        );
        assert!(
            stock_rsa_path("s390x", v30, None, true).contains("OpenSSL 3.0 has no built-in CEX")
        );
        let hw = stock_rsa_path("s390x", v35, None, true);
        assert!(
            hw.starts_with("possibly hardware") && hw.contains("OPENSSL_s390xcap=nocex"),
            "{hw}"
        );
        assert!(stock_rsa_path("s390x", v35, Some("nocex"), true).contains("offload disabled"));
        assert!(stock_rsa_path("s390x", "OpenSSL 4.0.3 x", None, false)
            .contains("/dev/z90crypt is absent"));
    }
}
