//! The libraries OpenSSL finds by a name rather than a path: a provider
//! section without `module` and an engine section without
//! `dynamic_path` (the rules are the parent module's).

use std::path::PathBuf;

use super::{literal, Loaded, Walk};

/// The providers built into libcrypto: named without `module`, they load
/// no file.
const BUILT_IN_PROVIDERS: [&str; 3] = ["default", "base", "null"];

impl Walk<'_> {
    /// The last value of `key` in `section`, as OpenSSL's lookup gives it.
    fn value(&self, section: &str, key: &str) -> Option<&(String, String, PathBuf)> {
        self.sections
            .get(section)?
            .iter()
            .rev()
            .find(|e| e.0 == key)
    }

    /// The providers `openssl_conf`'s `providers` section names whose
    /// sections have no `module`: OpenSSL loads each from the modules
    /// directory by its name (see config_tree's rules).
    pub(super) fn providers_without_module(&self) -> Result<Vec<Loaded>, String> {
        let mut out = Vec::new();
        let Some((_, init, from)) = self.value("default", "openssl_conf") else {
            return Ok(out);
        };
        let init = literal("openssl_conf", init, from)?;
        let Some((_, list, from)) = self.value(init, "providers") else {
            return Ok(out);
        };
        let list = literal("providers", list, from)?;
        for (name, section, from) in self.sections.get(list).into_iter().flatten() {
            let section = literal(name, section, from)?;
            if self.value(section, "module").is_some() {
                continue;
            }
            let id = match self.value(section, "identity") {
                Some((_, v, f)) => literal("identity", v, f)?,
                None => name.as_str(),
            };
            if !BUILT_IN_PROVIDERS.contains(&id) {
                out.push(Loaded {
                    key: "provider".into(),
                    path: id.to_string(),
                    from: from.clone(),
                });
            }
        }
        Ok(out)
    }
}

impl Walk<'_> {
    /// The engines `openssl_conf`'s `engines` section names whose sections
    /// have no `dynamic_path`: OpenSSL finds each by its id (`engine_id`,
    /// else its name there) and, unless built in, loads ID.so from the
    /// engines directory. `dynamic` is the built-in loader, whose own
    /// keys (`SO_PATH`, `DIR_ADD`) are judged as they are.
    pub(super) fn engines_by_id(&self) -> Result<Vec<Loaded>, String> {
        let mut out = Vec::new();
        let Some((_, init, from)) = self.value("default", "openssl_conf") else {
            return Ok(out);
        };
        let init = literal("openssl_conf", init, from)?;
        let Some((_, list, from)) = self.value(init, "engines") else {
            return Ok(out);
        };
        let list = literal("engines", list, from)?;
        for (name, section, from) in self.sections.get(list).into_iter().flatten() {
            let section = literal(name, section, from)?;
            if self.value(section, "dynamic_path").is_some() {
                continue;
            }
            let id = match self.value(section, "engine_id") {
                Some((_, v, f)) => literal("engine_id", v, f)?,
                None => name.as_str(),
            };
            if id != "dynamic" {
                out.push(Loaded {
                    key: "engine".into(),
                    path: id.to_string(),
                    from: from.clone(),
                });
            }
        }
        Ok(out)
    }
}
