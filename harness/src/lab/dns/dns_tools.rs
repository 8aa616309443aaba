//! The DNS signers the DNSSEC step runs (docs/lab.md, "DNSSEC zone
//! signing"): which algorithm signs at which key size, how large the zone
//! is, whether BIND's tools are installed, and whether the installed
//! PowerDNS can reach a provider at all, measured from the `RSA_*` symbols
//! its programs import. The step table (`dns_steps`) names these as its
//! steps' `applies`.

use crate::lab::plan::openssl::{shell_quote, SideEnv, SCRUBBED_ENV};
use crate::lab::plan::options::Options;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The DNSSEC algorithm (name, number) that signs with RSA keys of `bits`
/// in this step: RSASHA256 (8) at 1024 and 2048 bits, RSASHA512 (10) at
/// 4096, the sizes and algorithms zones are signed with; None at other
/// sizes.
pub fn algorithm(bits: u32) -> Option<(&'static str, u8)> {
    match bits {
        1024 | 2048 => Some(("RSASHA256", 8)),
        4096 => Some(("RSASHA512", 10)),
        _ => None,
    }
}

/// The zone's owner names with `--full` or `--sizes` (one A record each):
/// with their NSEC records about 20,000 RRsets to sign.
pub const FULL_NAMES: usize = 10_000;

/// The quick lab's owner names by key size: a round (`-n 1` and `-n N`
/// on each side) takes about a second at 1024 and 2048 bits and 0.7 s at
/// 4096 on this project's machines, so the step's 6 to 10 rounds at three
/// sizes stay within about 35 s (docs/lab.md, "DNSSEC zone signing").
pub const QUICK_NAMES: &[(u32, usize)] = &[(1024, 1_000), (2048, 500), (4096, 30)];

/// The zone's origin (`example` is reserved for examples: RFC 2606).
pub const ORIGIN: &str = "lab.example.";

/// The directory of one row's zone, keys and signed zones.
pub fn zone_dir(out: &Path, bits: u32) -> PathBuf {
    out.join(format!("dnssec-{bits}"))
}

/// The unsigned zone: an SOA, an NS and its address at the apex, `names`
/// owner names with one A record each, and the keys' `$INCLUDE` lines.
pub fn zone_text(names: usize, key_files: &[PathBuf]) -> String {
    let mut z = format!(
        "$ORIGIN {ORIGIN}\n$TTL 3600\n\
         @ IN SOA ns1 hostmaster 1 7200 3600 1209600 3600\n\
         @ IN NS ns1\n\
         ns1 IN A 192.0.2.1\n"
    );
    for i in 0..names {
        let _ = writeln!(z, "h{i} IN A 198.51.{}.{}", (i >> 8) & 255, i & 255);
    }
    for k in key_files {
        let _ = writeln!(z, "$INCLUDE {}", k.display());
    }
    z
}

/// Owner names of the zone signed at `bits`.
pub fn zone_names(o: &Options, bits: u32) -> usize {
    o.dnssec_names.unwrap_or_else(|| {
        if o.quick {
            QUICK_NAMES
                .iter()
                .find(|&&(b, _)| b == bits)
                .map_or(FULL_NAMES, |&(_, n)| n)
        } else {
            FULL_NAMES
        }
    })
}

/// The signatures one `dnssec-signzone` run makes over a zone of `names`
/// owner names: each name's A and NSEC RRsets, the name server's A and
/// NSEC, the apex's SOA, NS and NSEC (by the ZSK), and the DNSKEY RRset
/// by the KSK and the ZSK. The check counts the RRSIGs of the signed zone
/// itself; this is for the progress estimate and the notes.
pub fn signatures(names: usize) -> usize {
    2 * names + 7
}

/// Seconds one signature takes with stock OpenSSL on a current x86 core,
/// roughly (progress estimate only).
fn seconds_per_signature(bits: u32) -> f64 {
    if bits <= 1024 {
        0.000_15
    } else if bits <= 2048 {
        0.000_45
    } else {
        0.003
    }
}

/// Expected seconds of one DNSSEC run (`-n 1` then `-n N`) on one side.
pub fn estimate(o: &Options, bits: u32) -> f64 {
    let sigs = signatures(zone_names(o, bits)) as f64;
    sigs * seconds_per_signature(bits) * 1.6 + 0.1
}

/// `program` on the PATH (or as given, if it has a slash).
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// `program` (the lab's `--openssl`) when it is not the host's own
/// `openssl` (the one on the PATH), whose libcrypto the DNS signers use.
pub fn other_openssl(program: &Path) -> Option<PathBuf> {
    let resolve = |p: &Path| {
        let found = find_program(&p.to_string_lossy())?;
        std::fs::canonicalize(found).ok()
    };
    let host = find_program("openssl").and_then(|p| std::fs::canonicalize(p).ok());
    match (resolve(program), host) {
        (Some(a), Some(b)) if a == b => None,
        _ => Some(program.to_path_buf()),
    }
}

/// BIND's three programs the step runs.
pub const BIND_TOOLS: [&str; 3] = ["dnssec-keygen", "dnssec-signzone", "dnssec-verify"];

/// BIND's tools, or why the step cannot run.
pub fn bind_tools() -> Result<[PathBuf; 3], String> {
    let found = BIND_TOOLS.map(find_program);
    let missing: Vec<&str> = BIND_TOOLS
        .iter()
        .zip(&found)
        .filter(|(_, p)| p.is_none())
        .map(|(n, _)| *n)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "BIND's {} not installed (Debian package bind9-utils; scripts/setup.sh installs it)",
            missing.join(", ")
        ));
    }
    Ok(found.map(|p| p.unwrap_or_default()))
}

/// Whether the BIND step runs for `bits`, and why not.
pub fn bind_applies(o: &Options, bits: u32) -> Result<(), String> {
    signer_applies(o, bits)?;
    bind_tools().map(|_| ())
}

/// What the two signers' steps share: the sizes, and side B loading
/// rustica through OPENSSL_CONF.
fn signer_applies(o: &Options, bits: u32) -> Result<(), String> {
    if algorithm(bits).is_none() {
        return Err(format!(
            "DNSSEC signs with RSASHA256 at 1024 and 2048 bits and RSASHA512 at 4096 here; none at {bits} bits"
        ));
    }
    if let Some(p) = &o.other_openssl {
        return Err(format!(
            "--openssl {}: the DNS signers run on the host's libcrypto, not on that program's",
            p.display()
        ));
    }
    if o.load_flags {
        return Err(
            "--load flags: a DNS signer takes no provider flags; it loads rustica only through OPENSSL_CONF"
                .into(),
        );
    }
    Ok(())
}

/// The PowerDNS signer found on this host, and whether a provider can
/// reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerDns {
    pub program: PathBuf,
    /// "4.7.3", from `pdnsutil --version`.
    pub version: String,
    /// The `RSA_*` functions it or its PowerDNS libraries import from
    /// libcrypto, with the file that imports them: the low-level API,
    /// which calls RSA_METHOD code and never a provider.
    pub rsa_imports: Vec<String>,
    /// Where the imports were read (`nm -D --undefined-only`).
    pub read_from: Vec<PathBuf>,
}

impl PowerDns {
    /// Why the step cannot run PowerDNS's signer A/B, as measured.
    pub fn not_reached(&self) -> Option<String> {
        if self.rsa_imports.is_empty() {
            return None;
        }
        Some(format!(
            "not reached: PowerDNS {} `{}` signs through OpenSSL's low-level RSA API, which no provider \
             serves; it imports {} (`nm -D --undefined-only` of {})",
            self.version,
            self.program.display(),
            self.rsa_imports.join(", "),
            self.read_from
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// The `RSA_*` symbols of `nm -D --undefined-only` output, without their
/// version suffix.
pub fn rsa_symbols(nm_output: &str) -> Vec<String> {
    let mut v: Vec<String> = nm_output
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(|s| s.split('@').next().unwrap_or(s))
        .filter(|s| s.starts_with("RSA_"))
        .map(str::to_string)
        .collect();
    v.sort();
    v.dedup();
    v
}

/// `pdnsutil`'s own libraries (ldd's lines with "pdns" in the path): where
/// a PowerDNS release could keep its signer.
fn pdns_libraries(program: &Path) -> Vec<PathBuf> {
    let Ok(o) = Command::new("ldd").arg(program).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split("=>").nth(1))
        .filter_map(|r| r.split_whitespace().next())
        .filter(|p| p.contains("pdns"))
        .map(PathBuf::from)
        .collect()
}

/// The PowerDNS of this host, read once: None without `pdnsutil`;
/// Err when its imports could not be read.
pub fn powerdns() -> &'static Option<Result<PowerDns, String>> {
    static PDNS: OnceLock<Option<Result<PowerDns, String>>> = OnceLock::new();
    PDNS.get_or_init(|| {
        let program = find_program("pdnsutil")?;
        Some(probe(program))
    })
}

fn probe(program: PathBuf) -> Result<PowerDns, String> {
    let version = Command::new(&program)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .and_then(|s| s.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| "(version unknown)".into());
    let mut read_from = vec![program.clone()];
    read_from.extend(pdns_libraries(&program));
    let mut rsa_imports = Vec::new();
    for f in &read_from {
        let o = Command::new("nm")
            .args(["-D", "--undefined-only"])
            .arg(f)
            .output()
            .map_err(|e| format!("cannot run nm on {} (binutils): {e}", f.display()))?;
        if !o.status.success() {
            return Err(format!(
                "nm -D --undefined-only {} failed: {}",
                f.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        for s in rsa_symbols(&String::from_utf8_lossy(&o.stdout)) {
            if !rsa_imports.contains(&s) {
                rsa_imports.push(s);
            }
        }
    }
    Ok(PowerDns {
        program,
        version,
        rsa_imports,
        read_from,
    })
}

/// What the PowerDNS step runs.
pub struct PdnsTools {
    pub pdnsutil: PathBuf,
    pub server: PathBuf,
    /// The SQLite backend's schema (pdns-backend-sqlite3).
    pub schema: PathBuf,
}

/// The schema's places in Debian's pdns-backend-sqlite3.
const SQLITE_SCHEMAS: [&str; 2] = [
    "/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql",
    "/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql",
];

/// PowerDNS's programs and its SQLite backend, or what is missing.
pub fn pdns_tools() -> Result<PdnsTools, String> {
    let missing = |what: &str| format!("PowerDNS's step needs {what}");
    Ok(PdnsTools {
        pdnsutil: find_program("pdnsutil").ok_or_else(|| missing("pdnsutil (pdns-server)"))?,
        server: find_program("pdns_server").ok_or_else(|| missing("pdns_server (pdns-server)"))?,
        schema: SQLITE_SCHEMAS
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .ok_or_else(|| missing("the SQLite backend (pdns-backend-sqlite3)"))?,
    })
    .and_then(|t| {
        find_program("python3")
            .map(|_| t)
            .ok_or_else(|| missing("python3 (to create the SQLite tables)"))
    })
}

/// Whether PowerDNS's signer runs A/B for `bits`, and why not: not
/// installed, or not reached (measured). With `--aa` (no rustica on
/// either side) it runs whatever PowerDNS can reach.
pub fn pdns_applies(o: &Options, bits: u32) -> Result<(), String> {
    signer_applies(o, bits)?;
    match powerdns() {
        None => return Err("PowerDNS's pdnsutil not installed".into()),
        Some(Err(e)) => return Err(format!("PowerDNS: {e}")),
        Some(Ok(p)) => {
            if let Some(why) = p.not_reached().filter(|_| !o.aa) {
                return Err(why);
            }
        }
    }
    pdns_tools().map(|_| ())
}

/// The words that mark a side whose `openssl` takes command-line flags
/// (`--c-engine`): a DNS signer cannot be given them, so it does not run
/// on that side, and side C's checks leave such a column out.
pub const NO_FLAGS: &str = "a DNS signer takes no openssl command-line flags";

/// Why `env`'s side cannot run a DNS signer, if it cannot.
pub fn flags_refused(env: &SideEnv, side: &str) -> Option<String> {
    (!env.extra_args.is_empty()).then(|| {
        format!(
            "side {side}: {NO_FLAGS} ({}): not run on this side",
            env.extra_args.join(" ")
        )
    })
}

/// `program ARGS` with `env`'s OPENSSL_CONF and variables, as the side's
/// `openssl` runs, and the command line as a person would type it.
pub fn tool(env: &SideEnv, program: &Path, args: &[String]) -> (Command, String) {
    let mut cmd = Command::new(program);
    cmd.args(args);
    for k in SCRUBBED_ENV {
        cmd.env_remove(k);
    }
    cmd.env("OPENSSL_CONF", &env.conf);
    let mut words = vec![format!("OPENSSL_CONF={}", env.conf.display())];
    for (k, v) in &env.env {
        cmd.env(k, v);
        words.push(format!("{k}={}", shell_quote(v)));
    }
    cmd.stdin(Stdio::null());
    words.push(program.display().to_string());
    words.extend(args.iter().map(|a| shell_quote(a)));
    (cmd, words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithms_and_zone_sizes() {
        assert_eq!(algorithm(1024), Some(("RSASHA256", 8)));
        assert_eq!(algorithm(2048), Some(("RSASHA256", 8)));
        assert_eq!(algorithm(4096), Some(("RSASHA512", 10)));
        assert_eq!(algorithm(3072), None);
        assert_eq!(signatures(2000), 4007, "measured: BIND 9.18, 2000 names");
        assert_eq!(signatures(FULL_NAMES), 20_007);
    }

    fn options(quick: bool, names: Option<usize>) -> Options {
        Options {
            signatures: 1,
            verifications: 1,
            certs: 1,
            cell_budget: 20.0,
            quick,
            dnssec_names: names,
            ..Options::for_tests()
        }
    }

    #[test]
    fn the_quick_lab_trims_the_zone() {
        let full = options(false, None);
        let quick = options(true, None);
        for bits in [1024, 2048, 4096] {
            assert_eq!(zone_names(&full, bits), FULL_NAMES);
        }
        assert_eq!(zone_names(&quick, 1024), 1_000);
        assert_eq!(zone_names(&quick, 2048), 500);
        assert_eq!(zone_names(&quick, 4096), 30);
        assert_eq!(zone_names(&options(true, Some(7)), 4096), 7);
        assert_eq!(zone_names(&options(false, Some(7)), 1024), 7);
        // Flags mode cannot reach a signer; other sizes have no algorithm.
        let flags = Options {
            load_flags: true,
            ..full.clone()
        };
        assert!(bind_applies(&flags, 2048)
            .unwrap_err()
            .starts_with("--load flags"));
        let wrapped = Options {
            other_openssl: Some("/opt/openssl-3.5/bin/openssl".into()),
            ..full.clone()
        };
        assert!(bind_applies(&wrapped, 2048)
            .unwrap_err()
            .starts_with("--openssl /opt/openssl-3.5/bin/openssl: the DNS signers"));
        assert_eq!(other_openssl(Path::new("openssl")), None);
        assert!(other_openssl(Path::new("/no/such/openssl")).is_some());
        assert!(pdns_applies(&full, 3072)
            .unwrap_err()
            .contains("none at 3072 bits"));
    }

    #[test]
    fn rsa_imports_from_nm() {
        let nm = "                 U RSA_sign@OPENSSL_3.0.0\n                 w __gmon_start__\n\
                                   U RSA_verify@OPENSSL_3.0.0\n                 U EVP_DigestSign@OPENSSL_3.0.0\n\
                                   U RSA_sign@OPENSSL_3.0.0\n";
        assert_eq!(rsa_symbols(nm), ["RSA_sign", "RSA_verify"]);
        assert!(rsa_symbols("U EVP_PKEY_sign@OPENSSL_3.0.0\n").is_empty());
        let p = PowerDns {
            program: "/usr/bin/pdnsutil".into(),
            version: "4.7.3".into(),
            rsa_imports: vec!["RSA_sign".into()],
            read_from: vec!["/usr/bin/pdnsutil".into()],
        };
        let why = p.not_reached().unwrap();
        assert!(why.starts_with("not reached: PowerDNS 4.7.3"), "{why}");
        assert!(why.contains("imports RSA_sign"), "{why}");
        let reached = PowerDns {
            rsa_imports: Vec::new(),
            ..p
        };
        assert_eq!(reached.not_reached(), None);
    }

    #[test]
    fn the_zone_includes_its_keys() {
        let z = zone_text(3, &[PathBuf::from("/k/Klab.example.+008+00001.key")]);
        assert!(z.starts_with("$ORIGIN lab.example.\n"), "{z}");
        assert_eq!(z.lines().filter(|l| l.contains(" IN A ")).count(), 4);
        assert!(z.ends_with("$INCLUDE /k/Klab.example.+008+00001.key\n"));
    }
}
