//! `rustica stats --all-users` and `--sum`: every user's counters file,
//! read under the trust rules, as a table (a section per user, or the
//! total) or JSON, with the files skipped and why.

use super::{table_body, users};
use ibmca_shim::stats::{self, Snapshot};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// One user's counters in the output.
pub struct Section {
    pub uid: u32,
    /// The user's name, when the user database has one.
    pub user: Option<String>,
    pub path: PathBuf,
    pub counters: Snapshot,
}

impl Section {
    /// The user's name, else the uid.
    pub fn label(&self) -> String {
        self.user.clone().unwrap_or_else(|| self.uid.to_string())
    }
}

/// A user's file that was not read, and why.
pub struct Skipped {
    pub uid: u32,
    pub path: PathBuf,
    pub reason: String,
}

/// Everything a run of `--all-users` or `--sum` read.
pub struct AllUsers {
    pub sections: Vec<Section>,
    pub skipped: Vec<Skipped>,
    /// Said to a caller that is not root: what it could not see.
    pub not_root_note: Option<String>,
}

impl AllUsers {
    pub fn sum(&self) -> Snapshot {
        let mut total = Snapshot::default();
        for s in &self.sections {
            total.add(&s.counters);
        }
        total
    }
}

/// Every user's file in `dir`, read under the trust rules; an error only
/// when the directory itself cannot be listed.
pub fn read_all_users(dir: &Path) -> Result<AllUsers, String> {
    let found =
        stats::scan_users(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut all = AllUsers {
        sections: Vec::new(),
        skipped: Vec::new(),
        not_root_note: None,
    };
    let mut denied = 0;
    for f in found {
        match f.counters {
            Ok(counters) => all.sections.push(Section {
                uid: f.uid,
                user: users::name_of(f.uid),
                path: f.path,
                counters,
            }),
            Err(e) => {
                if e.kind() == std::io::ErrorKind::PermissionDenied {
                    denied += 1;
                }
                let reason = e.to_string();
                // Say the reason once, not the path again.
                let prefix = format!("{}: ", f.path.display());
                let reason = reason.strip_prefix(&prefix).unwrap_or(&reason).to_string();
                all.skipped.push(Skipped {
                    uid: f.uid,
                    path: f.path,
                    reason,
                });
            }
        }
    }
    let me = users::euid();
    if me != 0 {
        all.not_root_note = Some(format!(
            "not running as root: only the files whose modes let uid {me} read them are shown \
             ({denied} other user{} file{} not readable); run as root to see every user",
            if denied == 1 { "'s" } else { "s'" },
            if denied == 1 { "" } else { "s" },
        ));
    }
    Ok(all)
}

/// The table of `--all-users` (a section per user) and `--sum` (the
/// total), then the skipped files and, for a caller that is not root,
/// what it could not see.
pub fn all_users_table(all: &AllUsers, each_user: bool, sum: bool) -> String {
    let mut out = String::new();
    if each_user {
        for s in &all.sections {
            out.push_str(&format!(
                "== user {} (uid {}): {}\n",
                s.label(),
                s.uid,
                s.path.display()
            ));
            out.push_str(&table_body(&s.counters));
            out.push('\n');
        }
        if all.sections.is_empty() {
            out.push_str("(no user's counters file could be read)\n\n");
        }
    }
    if sum {
        let names: Vec<String> = all.sections.iter().map(Section::label).collect();
        out.push_str(&format!(
            "== sum of {} user{}: {}\n",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            if names.is_empty() {
                "(none)".to_string()
            } else {
                names.join(", ")
            }
        ));
        out.push_str(&table_body(&all.sum()));
        out.push('\n');
    }
    for s in &all.skipped {
        out.push_str(&format!("skipped {}: {}\n", s.path.display(), s.reason));
    }
    if let Some(note) = &all.not_root_note {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}

/// The JSON document of `--all-users` / `--sum` (docs/statistics.md).
pub fn all_users_json(all: &AllUsers, each_user: bool, sum: bool) -> Value {
    let counters = |s: &Snapshot| -> Value {
        serde_json::from_str(&s.to_json()).expect("Snapshot::to_json is JSON")
    };
    let users: Vec<Value> = all
        .sections
        .iter()
        .map(|s| {
            let mut u = json!({"uid": s.uid, "user": s.user, "path": s.path});
            if each_user {
                u["counters"] = counters(&s.counters);
            }
            u
        })
        .collect();
    let skipped: Vec<Value> = all
        .skipped
        .iter()
        .map(|s| json!({"uid": s.uid, "path": s.path, "reason": s.reason}))
        .collect();
    let mut doc = json!({
        "layout_version": stats::VERSION,
        "caller_uid": users::euid(),
        "users": users,
        "skipped": skipped,
    });
    if sum {
        doc["sum"] = counters(&all.sum());
    }
    if let Some(note) = &all.not_root_note {
        doc["note"] = json!(note);
    }
    doc
}
