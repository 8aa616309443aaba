//! Merging rustica into an existing openssl.cnf, keeping everything the
//! file already says.
//!
//! The file is edited as lines, not re-serialised, so comments, includes
//! and every section rustica does not touch come out byte for byte. What
//! is added: the `openssl_conf` init section if missing, a providers
//! section with `default` activated before `rustica`, rustica's own
//! section, and `default_properties = ?provider=rustica` (a preference,
//! combined with an existing value rather than replacing it).

pub mod engine;

/// What goes into rustica's section.
#[derive(Clone, Debug, Default)]
pub struct RusticaSection {
    pub module: String,
    /// Extra `key = value` lines (backend, libica, offload-*-bits, debug...).
    pub keys: Vec<(String, String)>,
}

/// The property rustica's system-wide setup adds.
pub const PREFERENCE: &str = "?provider=rustica";

struct Doc {
    lines: Vec<String>,
}

fn header_name(line: &str) -> Option<&str> {
    let t = line.trim();
    let inner = t.strip_prefix('[')?.split(']').next()?;
    Some(inner.trim())
}

/// `key = value` of a line, without trailing comments; None for other lines.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    if t.starts_with('#') || t.starts_with('[') || t.starts_with('.') {
        return None;
    }
    let (k, v) = t.split_once('=')?;
    let v = v.split('#').next().unwrap_or("").trim();
    Some((k.trim(), v))
}

impl Doc {
    fn parse(text: &str) -> Doc {
        Doc {
            lines: text.lines().map(str::to_string).collect(),
        }
    }

    /// Line range of a section's body; None is the unnamed default section.
    fn range(&self, section: Option<&str>) -> Option<std::ops::Range<usize>> {
        let start = match section {
            None => 0,
            Some(name) => {
                self.lines
                    .iter()
                    .position(|l| header_name(l) == Some(name))?
                    + 1
            }
        };
        let end = self.lines[start..]
            .iter()
            .position(|l| header_name(l).is_some())
            .map_or(self.lines.len(), |i| start + i);
        Some(start..end)
    }

    fn has_section(&self, name: &str) -> bool {
        self.range(Some(name)).is_some()
    }

    fn find(&self, section: Option<&str>, key: &str) -> Option<(usize, String)> {
        let r = self.range(section)?;
        r.clone().rev().find_map(|i| {
            key_value(&self.lines[i])
                .filter(|(k, _)| *k == key)
                .map(|(_, v)| (i, v.to_string()))
        })
    }

    /// Adds a line at the end of a section's keys (before trailing blanks
    /// and comments that introduce the next section).
    fn add(&mut self, section: Option<&str>, line: String) {
        let r = self.range(section).expect("section exists");
        let at = r
            .clone()
            .rev()
            .find(|&i| {
                key_value(&self.lines[i]).is_some() || self.lines[i].trim_start().starts_with('.')
            })
            .map_or(r.start, |i| i + 1);
        self.lines.insert(at, line);
    }

    fn add_section(&mut self, name: &str, body: &[String]) {
        if self.lines.last().is_some_and(|l| !l.trim().is_empty()) {
            self.lines.push(String::new());
        }
        self.lines.push(format!("[{name}]"));
        self.lines.extend(body.iter().cloned());
    }

    /// A section name not used yet, starting from `base`.
    fn fresh(&self, base: &str) -> String {
        (0..)
            .map(|i| {
                if i == 0 {
                    base.to_string()
                } else {
                    format!("{base}_{i}")
                }
            })
            .find(|n| !self.has_section(n))
            .expect("some name is free")
    }
}

/// Keys OpenSSL itself reads in a provider section.
const OPENSSL_KEYS: [&str; 3] = ["module", "activate", "identity"];

/// A key OpenSSL or rustica reads in rustica's section.
pub fn known_key(key: &str) -> bool {
    OPENSSL_KEYS.contains(&key) || ibmca_shim::CONFIG_KEYS.contains(&key)
}

/// rustica's section in a config (name and its `key = value` pairs), if
/// the config loads rustica.
pub fn rustica_section(text: &str) -> Option<(String, Vec<(String, String)>)> {
    let doc = Doc::parse(text);
    let (_, init) = doc.find(None, "openssl_conf")?;
    let (_, providers) = doc.find(Some(&init), "providers")?;
    let (_, name) = doc.find(Some(&providers), "rustica")?;
    let range = doc.range(Some(&name))?;
    let keys = doc.lines[range]
        .iter()
        .filter_map(|l| key_value(l))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Some((name, keys))
}

/// The `default_properties` a config sets (init section, alg_section).
pub fn default_properties(text: &str) -> Option<String> {
    let doc = Doc::parse(text);
    let (_, init) = doc.find(None, "openssl_conf")?;
    let (_, alg) = doc.find(Some(&init), "alg_section")?;
    doc.find(Some(&alg), "default_properties").map(|(_, v)| v)
}

/// Whether `properties` makes `fips=yes` mandatory: then no algorithm
/// without that property is ever fetched by default, rustica's included
/// (docs/security.md, "FIPS hosts").
pub fn requires_fips(properties: &str) -> bool {
    properties.split(',').map(str::trim).any(|p| {
        let p = p.replace(' ', "");
        p == "fips=yes" || p == "fips=true" || p == "fips"
    })
}

/// Returns `existing` with rustica loaded system-wide.
pub fn merge(existing: &str, rustica: &RusticaSection) -> String {
    let mut doc = Doc::parse(existing);
    let mut notes = vec![
        "# rustica: added by `rustica config`; remove these lines to unload rustica".to_string(),
    ];

    let init = match doc.find(None, "openssl_conf") {
        Some((_, v)) => v,
        None => {
            let name = doc.fresh("rustica_openssl_init");
            // openssl_conf must be in the unnamed section, before any header.
            let first_header = doc
                .lines
                .iter()
                .position(|l| header_name(l).is_some())
                .unwrap_or(doc.lines.len());
            doc.lines
                .insert(first_header, format!("openssl_conf = {name}"));
            doc.lines.insert(first_header, notes[0].clone());
            name
        }
    };
    if !doc.has_section(&init) {
        doc.add_section(&init, &[]);
    }

    let providers = match doc.find(Some(&init), "providers") {
        Some((_, v)) => v,
        None => {
            let name = doc.fresh("rustica_providers");
            doc.add(Some(&init), format!("providers = {name}"));
            name
        }
    };
    if !doc.has_section(&providers) {
        doc.add_section(&providers, &[]);
    }

    // Loading any provider from the config stops OpenSSL from loading the
    // default provider by itself, so it is activated explicitly, first.
    match doc.find(Some(&providers), "default") {
        Some((_, sect)) if doc.has_section(&sect) => {
            match doc.find(Some(&sect), "activate") {
                Some((i, v)) if v != "1" && v != "yes" && v != "true" => {
                    doc.lines[i] = "activate = 1".to_string();
                    doc.lines.insert(i, format!("# rustica: was `activate = {v}`; the default provider must stay active"));
                }
                Some(_) => {}
                None => {
                    doc.add(Some(&sect), "activate = 1".to_string());
                }
            }
        }
        Some((_, sect)) => doc.add_section(&sect, &["activate = 1".to_string()]),
        None => {
            let name = doc.fresh("rustica_default_provider");
            doc.add(Some(&providers), format!("default = {name}"));
            doc.add_section(&name, &["activate = 1".to_string()]);
        }
    }

    let mut body = vec![
        format!("module = {}", rustica.module),
        "activate = 1".to_string(),
    ];
    body.extend(rustica.keys.iter().map(|(k, v)| format!("{k} = {v}")));
    body.push(
        "# keys: backend = auto|libica|zcrypt|software, libica = PATH, offload-min-bits = 512,"
            .to_string(),
    );
    body.push(
        "#       offload-max-bits = 4096, debug = no|yes|stderr, debug-path = DIR".to_string(),
    );
    match doc.find(Some(&providers), "rustica") {
        Some((_, sect)) if doc.has_section(&sect) => {
            // Already merged once: refresh rustica's own section.
            let r = doc.range(Some(&sect)).expect("exists");
            doc.lines.splice(r, body.into_iter().chain([String::new()]));
        }
        _ => {
            let name = doc.fresh("rustica_sect");
            doc.add(Some(&providers), format!("rustica = {name}"));
            doc.add_section(&name, &body);
        }
    }

    let alg = match doc.find(Some(&init), "alg_section") {
        Some((_, v)) => v,
        None => {
            let name = doc.fresh("rustica_evp_properties");
            doc.add(Some(&init), format!("alg_section = {name}"));
            name
        }
    };
    if !doc.has_section(&alg) {
        doc.add_section(&alg, &[]);
    }
    match doc.find(Some(&alg), "default_properties") {
        Some((_, v)) if v.contains("provider=rustica") => {}
        Some((i, v)) => {
            let combined = if v.is_empty() {
                PREFERENCE.to_string()
            } else {
                format!("{v},{PREFERENCE}")
            };
            doc.lines[i] = format!("default_properties = {combined}");
            notes.push(format!(
                "# rustica: default_properties was `{v}`; kept and combined with {PREFERENCE}"
            ));
            doc.lines.insert(i, notes.last().cloned().expect("pushed"));
        }
        None => doc.add(Some(&alg), format!("default_properties = {PREFERENCE}")),
    }

    let mut out = doc.lines.join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section() -> RusticaSection {
        RusticaSection {
            module: "/opt/rustica.so".into(),
            keys: vec![("backend".into(), "software".into())],
        }
    }

    fn value(text: &str, section: Option<&str>, key: &str) -> Option<String> {
        Doc::parse(text).find(section, key).map(|(_, v)| v)
    }

    #[test]
    fn empty_file_gets_a_complete_setup() {
        let out = merge("", &section());
        let init = value(&out, None, "openssl_conf").unwrap();
        let prov = value(&out, Some(&init), "providers").unwrap();
        let def = value(&out, Some(&prov), "default").unwrap();
        assert_eq!(value(&out, Some(&def), "activate").as_deref(), Some("1"));
        let rs = value(&out, Some(&prov), "rustica").unwrap();
        assert_eq!(
            value(&out, Some(&rs), "module").as_deref(),
            Some("/opt/rustica.so")
        );
        assert_eq!(
            value(&out, Some(&rs), "backend").as_deref(),
            Some("software")
        );
        let alg = value(&out, Some(&init), "alg_section").unwrap();
        assert_eq!(
            value(&out, Some(&alg), "default_properties").as_deref(),
            Some(PREFERENCE)
        );
        // default is listed (and so activated) before rustica.
        assert!(
            out.find(&format!("default = {def}")).unwrap()
                < out.find(&format!("rustica = {rs}")).unwrap()
        );
    }

    #[test]
    fn debian_style_file_keeps_its_content() {
        let existing = "HOME = .\nopenssl_conf = openssl_init\nconfig_diagnostics = 1\n\n[openssl_init]\nproviders = provider_sect\nssl_conf = ssl_sect\n\n[provider_sect]\ndefault = default_sect\n\n[default_sect]\n# activate = 1\n\n[ ca ]\ndefault_ca = CA_default\n[ssl_sect]\nsystem_default = sys\n";
        let out = merge(existing, &section());
        for line in existing.lines().filter(|l| !l.is_empty()) {
            assert!(out.lines().any(|o| o == line), "lost line {line:?}:\n{out}");
        }
        assert_eq!(
            value(&out, Some("default_sect"), "activate").as_deref(),
            Some("1")
        );
        assert_eq!(
            value(&out, Some("openssl_init"), "ssl_conf").as_deref(),
            Some("ssl_sect")
        );
        assert!(value(&out, Some("provider_sect"), "rustica").is_some());
        assert_eq!(
            value(&out, None, "openssl_conf").as_deref(),
            Some("openssl_init")
        );
    }

    #[test]
    fn existing_properties_are_combined_and_said_so() {
        let existing = "openssl_conf = init\n[init]\nalg_section = algs\n[algs]\ndefault_properties = fips=yes\n";
        let out = merge(existing, &section());
        assert_eq!(
            value(&out, Some("algs"), "default_properties").as_deref(),
            Some("fips=yes,?provider=rustica")
        );
        assert!(out.contains("default_properties was `fips=yes`"));
    }

    #[test]
    fn a_mandatory_fips_property_is_recognised() {
        let text = "openssl_conf = i\n[i]\nalg_section = a\n[a]\ndefault_properties = fips=yes,?provider=rustica\n";
        let p = default_properties(text).unwrap();
        assert!(requires_fips(&p));
        assert!(!requires_fips("?fips=yes,?provider=rustica"));
        assert!(!requires_fips("?provider=rustica"));
        assert!(!requires_fips("fips=no"));
        assert!(default_properties("openssl_conf = i\n[i]\n").is_none());
    }

    #[test]
    fn deactivated_default_is_reactivated_with_a_note() {
        let existing =
            "openssl_conf = init\n[init]\nproviders = p\n[p]\ndefault = d\n[d]\nactivate = 0\n";
        let out = merge(existing, &section());
        assert_eq!(value(&out, Some("d"), "activate").as_deref(), Some("1"));
        assert!(out.contains("was `activate = 0`"));
    }

    #[test]
    fn rustica_section_is_found_with_its_keys() {
        let out = merge("", &section());
        let (_, keys) = rustica_section(&out).unwrap();
        assert!(keys.iter().any(|(k, v)| k == "backend" && v == "software"));
        assert!(keys.iter().all(|(k, _)| known_key(k)));
        assert!(rustica_section("openssl_conf = x\n[x]\n").is_none());
    }

    #[test]
    fn merging_twice_changes_nothing_but_the_module() {
        let once = merge("", &section());
        let mut other = section();
        other.module = "/usr/lib/rustica.so".into();
        let twice = merge(&once, &other);
        assert_eq!(twice.matches("rustica = ").count(), 1, "{twice}");
        assert_eq!(twice.matches("default_properties").count(), 1, "{twice}");
        assert!(twice.contains("module = /usr/lib/rustica.so"));
        assert!(!twice.contains("/opt/rustica.so"));
    }
}
