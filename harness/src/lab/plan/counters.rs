//! Reading rustica's counters against what B did, and the counts that
//! `openssl s_time` and `openssl speed` report themselves.

use super::columns::Expect;
use ibmca_shim::stats::{Backend, Op, Snapshot};

/// How many operations more than it reports a program may do (`openssl
/// speed` signs and verifies once before its timed loop).
pub const AT_LEAST_SLACK: u64 = 16;

/// Compares counter deltas with the expected operations; `backend` is the
/// `--backend` the user asked for.
pub fn compare(
    before: &Snapshot,
    after: &Snapshot,
    bits: u32,
    expected: &[(Op, u64)],
    how: Expect,
    backend: Option<&str>,
) -> (bool, String) {
    let mut ok = true;
    let mut parts = Vec::new();
    for &(op, n) in expected {
        let d = |b: Backend| after.get(op, b).saturating_sub(before.get(op, b));
        let failed = d(Backend::Failed);
        let done: u64 = [Backend::Libica, Backend::Software, Backend::Fallback]
            .iter()
            .map(|&b| d(b))
            .sum();
        let at = |s: &Snapshot| s.by_bits(op).get(&bits).copied().unwrap_or(0);
        let at_bits = at(after).saturating_sub(at(before));
        let count_ok = match how {
            Expect::Exactly => done == n,
            Expect::AtLeast => done >= n && done <= n + AT_LEAST_SLACK && (n > 0 || done == 0),
        };
        let bits_ok = at_bits == done + failed;
        let backend_ok = match backend {
            Some("software") => d(Backend::Software) == done,
            // Public operations run in software on every backend (a public
            // result from an adapter cannot be checked; docs/libica.md,
            // "Public operations run in software").
            Some("libica") if is_public(op) => d(Backend::Software) == done,
            // A key counts as libica when its Miller-Rabin exponentiations
            // ran there, else as software (outside the offload range) or
            // fallback (docs/libica.md).
            Some("libica") if op == Op::Keygen => true,
            Some("libica") => d(Backend::Libica) + d(Backend::Fallback) == done,
            _ => true,
        };
        let this_ok = count_ok && failed == 0 && bits_ok && backend_ok;
        ok &= this_ok;
        let by: Vec<String> = Backend::ALL
            .iter()
            .filter(|&&b| d(b) > 0)
            .map(|&b| format!("{} {}", b.name(), d(b)))
            .collect();
        let by = if by.is_empty() {
            "none".to_string()
        } else {
            by.join(", ")
        };
        let want = if how == Expect::AtLeast {
            format!("{n} to {}", n + AT_LEAST_SLACK)
        } else {
            n.to_string()
        };
        let mut s = format!(
            "{}: expected {want}, counted {done} ({by}) at {bits} bits: {at_bits}",
            op.name()
        );
        if !bits_ok {
            s.push_str(" [counted at another key size]");
        }
        if !backend_ok && backend == Some("libica") && is_public(op) {
            s.push_str(" [a public operation not in software, where every backend runs it]");
        } else if !backend_ok {
            s.push_str(&format!(
                " [not all on the requested backend {}]",
                backend.unwrap_or("")
            ));
        }
        if failed > 0 {
            s.push_str(&format!(" [{failed} failed]"));
        }
        parts.push(s);
    }
    // Operations nobody expected (other than those listed) are reported.
    for op in Op::ALL {
        if expected.iter().any(|&(o, _)| o == op) {
            continue;
        }
        let d = after.total(op).saturating_sub(before.total(op));
        if d > 0 {
            parts.push(format!("also {} {}", op.name(), d));
        }
    }
    (ok, parts.join("; "))
}

/// Verification and encryption: never offloaded, whatever the backend.
fn is_public(op: Op) -> bool {
    matches!(op, Op::Verify | Op::Encrypt)
}

/// Connections from `openssl s_time` output ("N connections in ...").
pub fn parse_s_time(stdout: &str) -> Option<u64> {
    stdout
        .lines()
        .find(|l| l.contains(" connections in "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// Counts and seconds from `openssl speed -mr rsaN`.
#[derive(Debug, PartialEq)]
pub struct SpeedRun {
    pub sign_count: u64,
    pub sign_secs: f64,
    pub verify_count: u64,
    pub verify_secs: f64,
    /// Every signature and verification the run made, for the counters:
    /// from OpenSSL 3.4, `speed rsaN` also times the same key through the
    /// signature-algorithm API (`+DTP:rsaN:signs` / `:verify`), after the
    /// classic `+R1`/`+R2` figures that the rates come from.
    pub all_signs: u64,
    pub all_verifies: u64,
}

pub fn parse_speed(stdout: &str) -> Option<SpeedRun> {
    // +R<n>:count:bits:seconds, each after a +DTP line naming what it timed.
    let fields = |l: &str| -> Option<(u64, f64)> {
        let f: Vec<&str> = l.trim().split(':').collect();
        Some((f.get(1)?.parse().ok()?, f.get(3)?.parse().ok()?))
    };
    let field = |tag: &str| stdout.lines().find(|l| l.starts_with(tag)).and_then(fields);
    let (sc, ss) = field("+R1:")?;
    let (vc, vs) = field("+R2:")?;
    let (mut all_signs, mut all_verifies) = (0, 0);
    let mut timed = "";
    for l in stdout.lines() {
        if let Some(what) = l.strip_prefix("+DTP:") {
            timed = what;
        } else if l.starts_with("+R") {
            let Some((n, _)) = fields(l) else { continue };
            if timed.contains("sign") {
                all_signs += n;
            } else if timed.contains("verify") {
                all_verifies += n;
            }
        }
    }
    (ss > 0.0 && vs > 0.0).then_some(SpeedRun {
        sign_count: sc,
        sign_secs: ss,
        verify_count: vc,
        verify_secs: vs,
        all_signs: all_signs.max(sc),
        all_verifies: all_verifies.max(vc),
    })
}

/// What `openssl speed -elapsed -mr -multi N rsaN` reported, summed over
/// its N child processes.
#[derive(Debug, PartialEq)]
pub struct MultiRun {
    /// Signatures per second of all children together (`+R1`: the classic
    /// RSA signing loop), each child's count over its own seconds.
    pub sign_rate: f64,
    /// Every signature and verification the run made, for the counters.
    pub all_signs: u64,
    pub all_verifies: u64,
}

/// The timed phases of `-mr` output whose children's lines may
/// interleave. Each child prints a `+DTP` line naming a phase, then that
/// phase's `+R<k>` line; as every child runs the same phases in the same
/// order, the k-th distinct `+R` tag belongs to the k-th distinct `+DTP`
/// phase.
struct Phases<'a> {
    phases: Vec<&'a str>,
    tags: Vec<&'a str>,
}

impl<'a> Phases<'a> {
    fn of(output: &'a str) -> Phases<'a> {
        let mut p = Phases {
            phases: Vec::new(),
            tags: Vec::new(),
        };
        for l in output.lines().map(str::trim) {
            if let Some(what) = l.strip_prefix("+DTP:") {
                if !p.phases.contains(&what) {
                    p.phases.push(what);
                }
            } else if l.starts_with("+R") {
                let tag = l.split(':').next().unwrap_or(l);
                if !p.tags.contains(&tag) {
                    p.tags.push(tag);
                }
            }
        }
        p
    }

    /// Whether the k-th phase signs: the classic RSA signing loop
    /// (`+R1`), and OpenSSL 3.5's signature-algorithm signing.
    fn signs(&self, k: usize) -> bool {
        self.tags.get(k) == Some(&"+R1") || self.phases.get(k).is_some_and(|p| p.contains("sign"))
    }

    fn verifies(&self, k: usize) -> bool {
        self.tags.get(k) == Some(&"+R2") || self.phases.get(k).is_some_and(|p| p.contains("verify"))
    }

    fn of_tag(&self, tag: &str) -> Option<usize> {
        self.tags.iter().position(|t| *t == tag)
    }
}

pub fn parse_speed_multi(output: &str) -> Option<MultiRun> {
    let p = Phases::of(output);
    let mut m = MultiRun {
        sign_rate: 0.0,
        all_signs: 0,
        all_verifies: 0,
    };
    for l in output
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("+R"))
    {
        let f: Vec<&str> = l.split(':').collect();
        let (Some(n), Some(s)) = (f.get(1), f.get(3)) else {
            continue;
        };
        let (Ok(n), Ok(s)) = (n.parse::<u64>(), s.parse::<f64>()) else {
            continue;
        };
        if f[0] == "+R1" && s > 0.0 {
            m.sign_rate += n as f64 / s;
        }
        match p.of_tag(f[0]) {
            Some(k) if p.signs(k) => m.all_signs += n,
            Some(k) if p.verifies(k) => m.all_verifies += n,
            _ => {}
        }
    }
    (m.sign_rate > 0.0).then_some(m)
}

/// What one line that starts with `+` (as the lab's watcher counts them)
/// of `openssl speed -mr` output does: start or end a child's signing
/// phase, or neither.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PhaseLine {
    SigningStarts,
    SigningEnds,
    Other,
}

/// [`PhaseLine`] of every `+` line of `stderr`, in order.
pub fn phase_lines(stderr: &str) -> Vec<PhaseLine> {
    let p = Phases::of(stderr);
    stderr
        .lines()
        .filter(|l| l.starts_with('+'))
        .map(|l| {
            let k = if let Some(what) = l.strip_prefix("+DTP:") {
                p.phases.iter().position(|w| *w == what.trim())
            } else if l.starts_with("+R") {
                p.of_tag(l.split(':').next().unwrap_or(l))
            } else {
                None
            };
            match k {
                Some(k) if p.signs(k) && l.starts_with("+DTP:") => PhaseLine::SigningStarts,
                Some(k) if p.signs(k) => PhaseLine::SigningEnds,
                _ => PhaseLine::Other,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibmca_shim::stats;

    /// `compare` of exactly `expected` at 2048 bits under `--backend libica`.
    fn under_libica(
        before: &stats::Snapshot,
        after: &stats::Snapshot,
        expected: &[(Op, u64)],
    ) -> (bool, String) {
        compare(
            before,
            after,
            2048,
            expected,
            Expect::Exactly,
            Some("libica"),
        )
    }

    #[test]
    fn public_operations_count_in_software_under_backend_libica() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counters");
        let st = stats::Stats::open(&path).unwrap();
        let before = stats::snapshot(&path).unwrap();
        st.record(Op::Verify, Backend::Software, 2048);
        st.record(Op::Sign, Backend::Libica, 2048);
        let after = stats::snapshot(&path).unwrap();
        let expected = [(Op::Verify, 1), (Op::Sign, 1)];
        let (ok, d) = under_libica(&before, &after, &expected);
        assert!(ok, "{d}");
        st.record(Op::Sign, Backend::Software, 2048);
        let later = stats::snapshot(&path).unwrap();
        let (ok, d) = under_libica(&after, &later, &[(Op::Sign, 1)]);
        assert!(!ok, "a private operation in software passed as libica: {d}");
    }

    #[test]
    fn key_generations_under_backend_libica_may_count_as_software() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counters");
        let st = stats::Stats::open(&path).unwrap();
        let before = stats::snapshot(&path).unwrap();
        st.record(Op::Keygen, Backend::Software, 2048);
        let after = stats::snapshot(&path).unwrap();
        let expected = [(Op::Keygen, 1)];
        let (ok, d) = under_libica(&before, &after, &expected);
        assert!(ok, "{d}");
        // Still counted: a key rustica did not make fails the check.
        let (ok, _) = under_libica(&after, &after, &expected);
        assert!(!ok);
    }

    #[test]
    fn s_time_output() {
        let out = "Collecting connection statistics for 1 seconds\n****\n\n\
                   997 connections in 0.40s; 2492.50 connections/user sec, bytes read 0\n\
                   997 connections in 2 real seconds, 0 bytes read per connection\n";
        assert_eq!(parse_s_time(out), Some(997));
        assert_eq!(parse_s_time("ERROR\n"), None);
    }

    #[test]
    fn speed_multi_output_with_interleaved_children() {
        // OpenSSL 3.0, -multi 2: the children's lines interleave.
        let out = "Forked child 0\n+DTP:1024:private:rsa:1\n+DTP:1024:private:rsa:1\n\
                   +R1:4069:1024:1.00\n+DTP:1024:public:rsa:1\n+R1:4072:1024:1.00\n\
                   +DTP:1024:public:rsa:1\n+R2:75662:1024:1.00\n+R2:96669:1024:1.00\n\
                   Forked child 1\nGot: +F2:1:1024:4069.000000:75662.000000 from 0\n\
                   Got: +F2:1:1024:4072.000000:96669.000000 from 1\n\
                   +F2:1:1024:8141.000000:172331.000000\n";
        let m = parse_speed_multi(out).unwrap();
        assert_eq!(m.sign_rate, 8141.0);
        assert_eq!((m.all_signs, m.all_verifies), (8141, 172331));
        use PhaseLine::{Other, SigningEnds as End, SigningStarts as Start};
        assert_eq!(
            phase_lines(out),
            [Start, Start, End, Other, End, Other, Other, Other, Other]
        );
        // OpenSSL 3.5: more phases; the signature-algorithm signing counts
        // as signing, encryption and key generation as neither.
        let out35 = "+DTP:1024:private:rsa sign:1\n+R1:8000:1024:1.00\n\
                     +DTP:1024:public:rsa verify:1\n+R2:150000:1024:1.00\n\
                     +DTP:1024:public:rsa encrypt:1\n+R3:117650:1024:1.00\n\
                     +DTP:rsa1024:keygen:1\n+R15:84:rsa1024:1.00\n\
                     +DTP:rsa1024:signs:1\n+R19:7000:rsa1024:1.00\n\
                     +DTP:rsa1024:verify:1\n+R20:157335:rsa1024:1.00\n";
        let m = parse_speed_multi(out35).unwrap();
        assert_eq!(m.sign_rate, 8000.0);
        assert_eq!((m.all_signs, m.all_verifies), (15000, 307335));
        let signing = phase_lines(out35);
        assert_eq!(signing[..4], [Start, End, Other, Other]);
        assert_eq!(signing[8..], [Start, End, Other, Other]);
        assert_eq!(parse_speed_multi("ERROR\n"), None);
    }

    #[test]
    fn speed_output() {
        let out = "+DTP:1024:private:rsa:1\n+R1:12782:1024:0.99\n+DTP:1024:public:rsa:1\n+R2:223407:1024:0.99\n+F2:1:1024:12911.1:225663.6\n";
        assert_eq!(
            parse_speed(out),
            Some(SpeedRun {
                sign_count: 12782,
                sign_secs: 0.99,
                verify_count: 223407,
                verify_secs: 0.99,
                all_signs: 12782,
                all_verifies: 223407,
            })
        );
        // OpenSSL 3.5: the signature-algorithm section signs and verifies too.
        let out35 = "+DTP:1024:private:rsa sign:1\n+R1:8213:1024:0.85\n\
                     +DTP:1024:public:rsa verify:1\n+R2:149742:1024:0.88\n\
                     +DTP:1024:public:rsa encrypt:1\n+R3:117650:1024:0.91\n\
                     +DTP:rsa1024:keygen:1\n+R15:84:rsa1024:0.90\n\
                     +DTP:rsa1024:signs:1\n+R19:6811:rsa1024:0.91\n\
                     +DTP:rsa1024:verify:1\n+R20:157335:rsa1024:0.99\n";
        let p = parse_speed(out35).unwrap();
        assert_eq!((p.sign_count, p.verify_count), (8213, 149742));
        assert_eq!(
            (p.all_signs, p.all_verifies),
            (8213 + 6811, 149742 + 157335)
        );
        assert_eq!(parse_speed("+R1:1:1024:1.0\n"), None);
    }

    #[test]
    fn counter_comparison() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counters");
        let before = stats::snapshot(&path).unwrap();
        let st = stats::Stats::open(&path).unwrap();
        for _ in 0..3 {
            st.record(Op::Sign, Backend::Software, 2048);
        }
        let after = stats::snapshot(&path).unwrap();
        let (ok, d) = compare(
            &before,
            &after,
            2048,
            &[(Op::Sign, 3)],
            Expect::Exactly,
            None,
        );
        assert!(ok, "{d}");
        assert!(d.contains("software 3"), "{d}");
        let (ok, _) = compare(
            &before,
            &after,
            2048,
            &[(Op::Sign, 4)],
            Expect::Exactly,
            None,
        );
        assert!(!ok);
        let (ok, _) = compare(
            &before,
            &after,
            2048,
            &[(Op::Sign, 2)],
            Expect::AtLeast,
            None,
        );
        assert!(ok);
        let (ok, d) = under_libica(&before, &after, &[(Op::Sign, 3)]);
        assert!(!ok, "{d}");
        // Verifications are software on the libica backend too.
        for _ in 0..2 {
            st.record(Op::Verify, Backend::Software, 2048);
        }
        let public = stats::snapshot(&path).unwrap();
        let (ok, d) = under_libica(&after, &public, &[(Op::Verify, 2)]);
        assert!(ok, "{d}");
        st.record(Op::Verify, Backend::Libica, 2048);
        let (ok, d) = compare(
            &after,
            &stats::snapshot(&path).unwrap(),
            2048,
            &[(Op::Verify, 3)],
            Expect::Exactly,
            Some("libica"),
        );
        assert!(!ok && d.contains("public operation"), "{d}");
        let (ok, d) = compare(
            &before,
            &after,
            4096,
            &[(Op::Sign, 3)],
            Expect::Exactly,
            None,
        );
        assert!(!ok && d.contains("another key size"), "{d}");
        let (ok, _) = compare(
            &before,
            &before,
            2048,
            &[(Op::Sign, 1)],
            Expect::AtLeast,
            None,
        );
        assert!(!ok, "nothing counted is never valid");
        st.record(Op::Sign, Backend::Failed, 2048);
        let after = stats::snapshot(&path).unwrap();
        let (ok, d) = compare(
            &before,
            &after,
            2048,
            &[(Op::Sign, 3)],
            Expect::Exactly,
            None,
        );
        assert!(!ok && d.contains("1 failed"), "{d}");
        drop(st);
    }
}
