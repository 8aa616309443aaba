//! The way off the ibmca ENGINE: reading an openssl.cnf that loads
//! engines, writing the provider equivalent (`rustica config
//! --from-engine`), and saying what OpenSSL 4.0, which has no ENGINE
//! support, does with such a file (`rustica doctor`).
//!
//! OpenSSL 4.0's configuration loader knows no `engines` module: the line
//! `engines = SECTION` in the init section fails (as a module it would
//! have to load from a shared object of that name), and the loader stops
//! at it, so every module listed after it in the same section (providers,
//! alg_section, ssl_conf, ...) is not applied. Programs still start:
//! libcrypto's automatic configuration ignores the error. Measured with
//! OpenSSL 4.0.2 by tests/e2e/e2e_host_configs.rs.

use super::{key_value, Doc};

/// One engine the configuration loads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Engine {
    /// Its name in the engines section (`ibmca = ibmca_section`).
    pub name: String,
    /// The section that configures it.
    pub section: String,
    /// Its `key = value` lines, in order (engine_id, dynamic_path,
    /// default_algorithms, init and control commands).
    pub settings: Vec<(String, String)>,
}

impl Engine {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this is IBM's ibmca engine (by id, name or shared object).
    pub fn is_ibmca(&self) -> bool {
        let id = self.get("engine_id").unwrap_or(&self.name);
        id.eq_ignore_ascii_case("ibmca")
            || self
                .get("dynamic_path")
                .is_some_and(|p| p.rsplit('/').next().unwrap_or(p).contains("ibmca"))
    }
}

/// The engines a configuration loads: the init section's name, the
/// engines section's name, and each engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Engines {
    pub init: String,
    pub section: String,
    pub engines: Vec<Engine>,
    /// The modules the init section lists after `engines`: OpenSSL 4.0
    /// does not apply them.
    pub after: Vec<String>,
}

/// The engines `text` loads, if its init section has an `engines` line.
pub fn loaded(text: &str) -> Option<Engines> {
    let doc = Doc::parse(text);
    let (_, init) = doc.find(None, "openssl_conf")?;
    let init_range = doc.range(Some(&init))?;
    let (at, section) = doc.find(Some(&init), "engines")?;
    let after = doc.lines[at + 1..init_range.end]
        .iter()
        .filter_map(|l| key_value(l))
        .map(|(k, _)| k.to_string())
        .collect();
    let mut engines = Vec::new();
    if let Some(r) = doc.range(Some(&section)) {
        for line in &doc.lines[r] {
            let Some((name, sect)) = key_value(line) else {
                continue;
            };
            let settings = doc
                .range(Some(sect))
                .map(|r| {
                    doc.lines[r]
                        .iter()
                        .filter_map(|l| key_value(l))
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                })
                .unwrap_or_default();
            engines.push(Engine {
                name: name.to_string(),
                section: sect.to_string(),
                settings,
            });
        }
    }
    Some(Engines {
        init,
        section,
        engines,
        after,
    })
}

/// What `rustica doctor` says about a configuration that loads engines.
pub fn openssl4_warning(e: &Engines) -> String {
    let names: Vec<String> = e
        .engines
        .iter()
        .map(|g| match g.get("dynamic_path") {
            Some(p) => format!("{} ({p})", g.name),
            None => g.name.clone(),
        })
        .collect();
    let lost = if e.after.is_empty() {
        "nothing else is listed after it".to_string()
    } else {
        format!("not applied there: {}", e.after.join(", "))
    };
    format!(
        "this configuration loads ENGINEs ([{}] engines = {}: {}). OpenSSL 4.0 has no ENGINE \
         support: its configuration loader fails on the `engines` line and stops there, so the \
         modules listed after it in [{}] are {lost}; programs still start, without them. \
         `rustica config --from-engine FILE` writes the provider configuration instead",
        e.init,
        e.section,
        if names.is_empty() {
            "none listed".to_string()
        } else {
            names.join(", ")
        },
        e.init,
    )
}

/// What one engine setting becomes under rustica.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapped {
    pub setting: String,
    /// What rustica does instead, or why nothing does.
    pub becomes: String,
    /// False: no provider equivalent.
    pub carried: bool,
}

/// The result of `--from-engine`.
#[derive(Clone, Debug)]
pub struct Migration {
    /// The input with the ibmca engine taken out (its lines commented).
    pub text: String,
    /// The rustica keys the engine's settings map to (libica).
    pub keys: Vec<(String, String)>,
    pub mapped: Vec<Mapped>,
}

/// The sonames rustica's `libica` key takes as they are (provider/config.rs
/// refuses any other bare name: the loader would search for it).
const RUSTICA_LIBICA_NAMES: [&str; 2] = ["libica.so.4", "libica.so.3"];

/// Makes the engine's `libica` value one rustica takes: an absolute path
/// or one of [`RUSTICA_LIBICA_NAMES`]. Another bare name (the engine's
/// `libica-cex.so.4`, say) is looked up with `find` (the dynamic loader's
/// cache) and becomes its absolute path; a name not found there, or a
/// relative path, is not carried: copied verbatim, it would make rustica
/// refuse to load on every program of the host. The migration's key and
/// its report line change accordingly.
pub fn translate_libica(m: &mut Migration, find: impl Fn(&str) -> Option<String>) {
    let Some(i) = m.keys.iter().position(|(k, _)| k == "libica") else {
        return;
    };
    let v = m.keys[i].1.clone();
    let taken = if v.starts_with('/') || RUSTICA_LIBICA_NAMES.contains(&v.as_str()) {
        Ok(v.clone())
    } else if v.contains('/') {
        Err("a relative path, which rustica does not take".to_string())
    } else {
        find(&v).ok_or_else(|| {
            "a name the dynamic loader's cache does not know here, and rustica takes only an \
             absolute path or libica.so.4 / libica.so.3"
                .to_string()
        })
    };
    let Some(line) = m
        .mapped
        .iter_mut()
        .find(|x| x.setting == format!("libica = {v}"))
    else {
        return;
    };
    match taken {
        Ok(path) => {
            if path != v {
                line.becomes = format!("libica = {path} (rustica's key of the same meaning; {v} resolved by the dynamic loader's cache)");
            }
            m.keys[i].1 = path;
        }
        Err(why) => {
            line.becomes = format!("not carried: {v} is {why}; give rustica config --libica PATH");
            line.carried = false;
            m.keys.remove(i);
        }
    }
}

fn algorithm(name: &str) -> Mapped {
    let up = name.trim().to_ascii_uppercase();
    let (becomes, carried) = match up.as_str() {
        "RSA" => (
            "rustica: RSA signing, verification, encryption, decryption and key generation, \
             preferred by default_properties = ?provider=rustica; private operations on libica"
                .to_string(),
            true,
        ),
        "RAND" => (
            "no rustica equivalent: rustica provides no random generator; OpenSSL 3's own DRBG \
             seeds from the kernel (getrandom), which on IBM Z uses the CPU's random number \
             instructions where the machine has them"
                .to_string(),
            false,
        ),
        "CIPHERS" | "DIGESTS" => (
            "no provider needed: OpenSSL 3's libcrypto uses CPACF's cipher and hash \
             instructions itself on s390x"
                .to_string(),
            false,
        ),
        "EC" | "ECDH" | "ECDSA" | "PKEY_CRYPTO" | "PKEY_ASN1" => (
            "not in rustica (RSA only): OpenSSL 3's default provider does elliptic curves, \
             on s390x with CPACF's signature instructions for the NIST curves and Ed25519/Ed448"
                .to_string(),
            false,
        ),
        "DH" | "DSA" => (
            "not in rustica (RSA only): OpenSSL 3's default provider does it in software"
                .to_string(),
            false,
        ),
        _ => (
            "not an ibmca algorithm class rustica knows: left to the default provider".to_string(),
            false,
        ),
    };
    Mapped {
        setting: format!("default_algorithms: {up}"),
        becomes,
        carried,
    }
}

/// The algorithm classes `ALL` stands for in ibmca's documentation.
const ALL: [&str; 4] = ["RSA", "RAND", "CIPHERS", "DIGESTS"];

/// Takes the ibmca engine out of `text` and says what each of its settings
/// becomes; the caller merges rustica in (sysconf::merge) with `keys`.
pub fn migrate(text: &str) -> Result<Migration, String> {
    let e =
        loaded(text).ok_or("the file loads no engine (no `engines` line in its init section)")?;
    let ibmca = find_ibmca(&e)?;
    let mut mapped = Vec::new();
    let mut keys = Vec::new();
    for (k, v) in &ibmca.settings {
        map_setting(k, v, &mut mapped, &mut keys);
    }
    let mut doc = Doc::parse(text);
    comment_ibmca_line(&mut doc, &e, &ibmca);
    mapped.push(engines_line(&mut doc, &e, &ibmca));
    comment_section(&mut doc, &ibmca.section);
    let mut out = doc.lines.join("\n");
    out.push('\n');
    Ok(Migration {
        text: out,
        keys,
        mapped,
    })
}

/// The ibmca engine among those `e` loads.
fn find_ibmca(e: &Engines) -> Result<Engine, String> {
    e.engines
        .iter()
        .find(|g| g.is_ibmca())
        .cloned()
        .ok_or_else(|| {
            format!(
                "the file's engines ({}) include no ibmca engine",
                e.engines
                    .iter()
                    .map(|g| g.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// What one setting of ibmca's section becomes, added to `mapped`; the
/// rustica keys it carries, added to `keys`.
fn map_setting(k: &str, v: &str, mapped: &mut Vec<Mapped>, keys: &mut Vec<(String, String)>) {
    match k {
        "dynamic_path" => mapped.push(Mapped {
            setting: format!("dynamic_path = {v}"),
            becomes: "module = rustica's module (OpenSSL's modules directory)".into(),
            carried: true,
        }),
        "engine_id" => mapped.push(Mapped {
            setting: format!("engine_id = {v}"),
            becomes: "no provider equivalent: a provider is named by its line in the \
                      providers section (`rustica = ...`)"
                .into(),
            carried: false,
        }),
        "init" => mapped.push(Mapped {
            setting: format!("init = {v}"),
            becomes: if v == "0" {
                "activate = 1 (the engine was loaded but not initialised, so it did no work; \
                 rustica is activated: set activate = 0 to keep it idle)"
                    .into()
            } else {
                "activate = 1".into()
            },
            carried: true,
        }),
        "default_algorithms" => {
            for a in v.split(',').filter(|a| !a.trim().is_empty()) {
                if a.trim().eq_ignore_ascii_case("ALL") {
                    mapped.extend(ALL.iter().map(|a| algorithm(a)));
                } else {
                    mapped.push(algorithm(a));
                }
            }
        }
        "libica" => {
            keys.push(("libica".to_string(), v.to_string()));
            mapped.push(Mapped {
                setting: format!("libica = {v}"),
                becomes: format!("libica = {v} (rustica's key of the same meaning)"),
                carried: true,
            });
        }
        _ => mapped.push(Mapped {
            setting: format!("{k} = {v}"),
            becomes: "no rustica equivalent: an engine control command; rustica's keys \
                      are in rustica-provider(7)"
                .into(),
            carried: false,
        }),
    }
}

/// A line of the configuration, commented out by the migration.
fn comment(line: &str) -> String {
    format!("# rustica config --from-engine took out: {}", line.trim())
}

/// The ibmca line of the engines section, commented out.
fn comment_ibmca_line(doc: &mut Doc, e: &Engines, ibmca: &Engine) {
    let er = doc
        .range(Some(&e.section))
        .expect("the engines section was read");
    for i in er {
        if key_value(&doc.lines[i]).is_some_and(|(k, _)| k == ibmca.name) {
            doc.lines[i] = comment(&doc.lines[i]);
        }
    }
}

/// The init section's `engines` line: taken out when no engine is left,
/// else kept; what became of it.
fn engines_line(doc: &mut Doc, e: &Engines, ibmca: &Engine) -> Mapped {
    let others = e.engines.iter().filter(|g| g.name != ibmca.name).count();
    // No engine left: the `engines` line too (OpenSSL 4.0 stops at it).
    if others == 0 {
        let (at, _) = doc
            .find(Some(&e.init), "engines")
            .expect("the engines line was read");
        doc.lines[at] = comment(&doc.lines[at]);
        Mapped {
            setting: format!("[{}] engines = {}", e.init, e.section),
            becomes: "taken out: no engine is left, and OpenSSL 4.0 stops reading the init \
                      section at an `engines` line"
                .into(),
            carried: true,
        }
    } else {
        Mapped {
            setting: format!("[{}] engines = {}", e.init, e.section),
            becomes: format!(
                "kept for the other {others} engine(s); OpenSSL 4.0 will still stop at it"
            ),
            carried: false,
        }
    }
}

/// ibmca's own section, unreferenced now: commented so nobody mistakes
/// it for live configuration.
fn comment_section(doc: &mut Doc, section: &str) {
    if let Some(r) = doc.range(Some(section)) {
        let header = r.start - 1;
        for i in std::iter::once(header).chain(r) {
            let t = doc.lines[i].trim();
            if !t.is_empty() && !t.starts_with('#') {
                doc.lines[i] = comment(&doc.lines[i]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN_SAMPLE: &str =
        include_str!("../../tests/fixtures/ibmca/openssl.cnf.sample.bookworm");

    #[test]
    fn debians_sample_loads_the_ibmca_engine() {
        let e = loaded(DEBIAN_SAMPLE).unwrap();
        assert_eq!(
            (e.init.as_str(), e.section.as_str()),
            ("openssl_def", "engine_section")
        );
        assert_eq!(e.engines.len(), 1);
        let g = &e.engines[0];
        assert!(g.is_ibmca());
        assert_eq!(g.get("default_algorithms"), Some("ALL"));
        assert_eq!(g.get("init"), Some("1"));
        assert!(g.get("dynamic_path").unwrap().ends_with("libibmca.so"));
        let w = openssl4_warning(&e);
        assert!(w.contains("OpenSSL 4.0 has no ENGINE support"), "{w}");
        assert!(w.contains("--from-engine"), "{w}");
    }

    #[test]
    fn migration_takes_the_engine_out_and_maps_every_setting() {
        let m = migrate(DEBIAN_SAMPLE).unwrap();
        assert!(loaded(&m.text).is_none(), "{}", m.text);
        // Every line of the input is still there, live or commented.
        for line in DEBIAN_SAMPLE.lines().filter(|l| !l.trim().is_empty()) {
            assert!(
                m.text
                    .lines()
                    .any(|o| o == line || o.ends_with(line.trim())),
                "lost {line:?}"
            );
        }
        let said = |s: &str| m.mapped.iter().find(|x| x.setting.contains(s)).unwrap();
        assert!(said("RSA").carried);
        assert!(!said("RAND").carried);
        assert!(!said("CIPHERS").carried && !said("DIGESTS").carried);
        assert!(!said("engine_id").carried);
        assert!(said("dynamic_path").becomes.starts_with("module"));
        // Merged with rustica, the file loads rustica and no engine.
        let out = super::super::merge(
            &m.text,
            &super::super::RusticaSection {
                module: "/usr/lib/x/ossl-modules/rustica.so".into(),
                keys: m.keys.clone(),
            },
        );
        assert!(super::super::rustica_section(&out).is_some());
        assert!(loaded(&out).is_none());
    }

    fn said_in<'a>(m: &'a Migration, s: &str) -> &'a Mapped {
        m.mapped.iter().find(|x| x.setting.contains(s)).unwrap()
    }

    #[test]
    fn other_engines_stay_and_control_commands_are_named() {
        let text = "openssl_conf = init\n[init]\nengines = eng\nproviders = prov\n[eng]\n\
                    ibmca = ibmca_s\npkcs11 = p11_s\n[ibmca_s]\nengine_id = ibmca\n\
                    dynamic_path = /usr/lib64/engines-3/ibmca.so\ndefault_algorithms = RSA,EC\n\
                    init = 0\nlibica = libica-cex.so.4\ndebug = yes\n[p11_s]\nengine_id = pkcs11\n\
                    [prov]\ndefault = d\n[d]\nactivate = 1\n";
        let e = loaded(text).unwrap();
        assert_eq!(e.after, ["providers"]);
        assert!(openssl4_warning(&e).contains("not applied there: providers"));
        let m = migrate(text).unwrap();
        let left = loaded(&m.text).unwrap();
        assert_eq!(left.engines.len(), 1);
        assert_eq!(left.engines[0].name, "pkcs11");
        assert_eq!(
            m.keys,
            [("libica".to_string(), "libica-cex.so.4".to_string())]
        );
        let said = |s: &str| m.mapped.iter().find(|x| x.setting.contains(s)).unwrap();
        assert!(!said("EC").carried);
        assert!(!said("debug").carried);
        assert!(said("init = 0").becomes.contains("activate = 0"));
        assert!(!said("engines = eng").carried);
        let mut resolved = m.clone();
        translate_libica(&mut resolved, |n| {
            (n == "libica-cex.so.4").then(|| "/usr/lib/s390x-linux-gnu/libica-cex.so.4".into())
        });
        assert_eq!(
            resolved.keys[0].1,
            "/usr/lib/s390x-linux-gnu/libica-cex.so.4"
        );
        assert!(said_in(&resolved, "libica").carried);
        let mut unknown = m.clone();
        translate_libica(&mut unknown, |_| None);
        assert!(unknown.keys.is_empty(), "{:?}", unknown.keys);
        let line = said_in(&unknown, "libica");
        assert!(
            !line.carried && line.becomes.contains("--libica"),
            "{line:?}"
        );
        assert!(migrate("openssl_conf = i\n[i]\nproviders = p\n").is_err());
        assert!(migrate("openssl_conf = i\n[i]\nengines = e\n[e]\npkcs11 = s\n[s]\n").is_err());
    }
}
