//! The runs of a step that are not one timed `openssl` process: TLS
//! handshakes against a side's `s_server`, `openssl speed`, and `openssl
//! speed -multi` at N = 1 and N = the cores. The matrix (`matrix`) runs
//! them like any other step; each gives one sample per column it fills and
//! the program's own operation counts, which B's counters are checked
//! against.

use super::matrix::{Ctx, Outcome, RunFail, Stop};
use super::results::Sample;
use super::steps;
use crate::lab::plan::columns::{strings, Paths, StepColumn};
use crate::lab::plan::counters::{
    parse_s_time, parse_speed, parse_speed_multi, phase_lines, PhaseLine,
};
use crate::lab::plan::openssl::{Mark, MarkCpu, RunError, Side};
use crate::lab::plan::options::SECLEVEL1_BELOW;
use crate::lab::plan::server::{free_port, Server};
use std::path::Path;

impl Ctx<'_> {
    /// A's `s_time` against `side`'s `s_server`: handshakes per second, and
    /// the server's CPU per handshake.
    pub(super) fn handshakes(
        &mut self,
        spec: &StepColumn,
        paths: &Paths,
        side: Side,
        est: f64,
        label: &str,
        commands: Option<&mut Vec<String>>,
    ) -> Result<Outcome, RunFail> {
        let name = side.name();
        let cert = paths
            .served_certificate()
            .ok_or_else(|| RunFail::Failed("no certificate to serve".into()))?;
        let (server, server_cmd) = match self.start_server(side, paths.bits, &cert, &paths.key()) {
            Ok(Ok(s)) => s,
            Ok(Err(m)) => return Err(RunFail::Failed(format!("side {name} server: {m}"))),
            Err(Stop) => return Err(RunFail::Stop),
        };
        let mut args = strings(&[
            "-connect",
            &format!("127.0.0.1:{}", server.port),
            "-new",
            "-time",
            &self.opts.tls_seconds.to_string(),
        ]);
        if let Some(client) = spec.client {
            args.extend(client.flags(paths.bits));
        }
        if let Some(c) = commands {
            c.push(format!("server ({name}): {server_cmd}"));
            c.push(format!("client (A): {}", self.a.describe("s_time", &args)));
        }
        let res = self.op(Side::A, "s_time", &args, est, label);
        let server_cpu = server.stop();
        let f = match res {
            Ok(f) => f,
            Err(RunError::Interrupted) => return Err(RunFail::Stop),
            Err(RunError::Failed(m)) => {
                return Err(RunFail::Failed(format!(
                    "client against side {name} server: {m}"
                )))
            }
        };
        let conns = parse_s_time(&f.stdout).unwrap_or(0);
        if conns == 0 {
            return Err(RunFail::Failed(format!(
                "no handshake completed against the side {name} server: {}",
                f.stdout.lines().last().unwrap_or("").trim()
            )));
        }
        Ok(Outcome {
            samples: vec![Sample {
                value: conns as f64 / f.wall,
                cpu: server_cpu / conns as f64,
            }],
            reported: vec![conns],
            ops: vec![conns],
            requests: None,
        })
    }

    /// `openssl speed -mr rsaN`: its own sign/s and verify/s, the process's
    /// host CPU (user + system) per signature and per verification in
    /// those two timed phases, and its own counts.
    pub(super) fn speed(
        &mut self,
        paths: &Paths,
        side: Side,
        est: f64,
        label: &str,
        commands: Option<&mut Vec<String>>,
    ) -> Result<Outcome, RunFail> {
        let args = in_process_speed_args(self.wall_rates, self.opts.speed_seconds, paths.bits);
        if let Some(c) = commands {
            c.push(self.side(side).describe("speed", &args));
        }
        let f = self
            .op_marked(side, "speed", &args, (est, label), MarkCpu::Process)
            .map_err(RunFail::of(side))?;
        // -mr writes its +R lines to standard error.
        let p = parse_speed(&format!("{}\n{}", f.stdout, f.stderr)).ok_or_else(|| {
            RunFail::Failed(format!(
                "side {}: no `+R1`/`+R2` lines in openssl speed -mr output",
                side.name()
            ))
        })?;
        let rate = |count: u64, secs: f64, tag: &str| Sample {
            value: count as f64 / secs,
            cpu: phase_cpu(&f.stderr, &f.marks, tag, f.cpu).unwrap_or(0.0) / count.max(1) as f64,
        };
        let requests = ["+R1:", "+R2:"].map(|tag| phase_requests(&f.stderr, &f.marks, tag));
        Ok(Outcome {
            ops: vec![p.sign_count, p.verify_count],
            requests: requests
                .iter()
                .all(Option::is_some)
                .then(|| requests.iter().flatten().copied().collect()),
            samples: vec![
                rate(p.sign_count, p.sign_secs, "+R1:"),
                rate(p.verify_count, p.verify_secs, "+R2:"),
            ],
            reported: vec![p.all_signs, p.all_verifies],
        })
    }

    /// `openssl speed -elapsed -mr -multi N rsaN` at N = 1, then at N = the
    /// cores: sign/s per core at N, the linearity (that over the rate at 1)
    /// and the CPU per signature at N: the user + system CPU the children
    /// spent in their signing phases, from the process tree's CPU as each
    /// phase's line appeared (`multi_sign_cpu`). Wall-clock rates
    /// (-elapsed), since scaling is about wall time.
    pub(super) fn speed_multi(
        &mut self,
        paths: &Paths,
        side: Side,
        est: f64,
        label: &str,
        mut commands: Option<&mut Vec<String>>,
    ) -> Result<Outcome, RunFail> {
        let n = steps::multi_processes();
        let mut runs = Vec::with_capacity(2);
        for processes in [1, n] {
            let args = strings(&[
                "-elapsed",
                "-seconds",
                &self.opts.speed_seconds.to_string(),
                "-mr",
                "-multi",
                &processes.to_string(),
                &format!("rsa{}", paths.bits),
            ]);
            if let Some(c) = commands.as_deref_mut() {
                c.push(self.side(side).describe("speed", &args));
            }
            let f = self
                .op_marked(side, "speed", &args, (est / 2.0, label), MarkCpu::Tree)
                .map_err(RunFail::of(side))?;
            let p = parse_speed_multi(&format!("{}\n{}", f.stdout, f.stderr)).ok_or_else(|| {
                RunFail::Failed(format!(
                    "side {}: no `+R1` lines in openssl speed -multi {processes} -mr output",
                    side.name()
                ))
            })?;
            let sign_cpu = multi_sign_cpu(&f.stderr, &f.marks, f.cpu, processes);
            runs.push((p, sign_cpu));
        }
        let (one, _) = &runs[0];
        let (many, sign_cpu) = &runs[1];
        let per_core = many.sign_rate / n as f64;
        let cpu_per_sign = sign_cpu / many.all_signs.max(1) as f64;
        let sample = |value: f64| Sample {
            value,
            cpu: cpu_per_sign,
        };
        Ok(Outcome {
            samples: vec![
                sample(per_core),
                Sample {
                    value: per_core / one.sign_rate,
                    cpu: 0.0,
                },
                sample(cpu_per_sign),
            ],
            reported: vec![
                one.all_signs + many.all_signs,
                one.all_verifies + many.all_verifies,
            ],
            // Requests per signature of both runs (verifications among
            // them): the step's three columns share one count.
            ops: vec![
                one.all_signs + many.all_signs,
                0,
                one.all_signs + many.all_signs,
            ],
            requests: None,
        })
    }

    /// Starts `side`'s s_server for the row's certificate, on the chosen or
    /// a free port (a taken free port is retried).
    fn start_server(
        &mut self,
        side: Side,
        bits: u32,
        cert: &Path,
        key: &Path,
    ) -> Result<Result<(Server, String), String>, Stop> {
        let mut tries = 0;
        loop {
            let port = match self.opts.port {
                Some(p) => p,
                None => match free_port() {
                    Ok(p) => p,
                    Err(e) => return Ok(Err(format!("no free port on 127.0.0.1: {e}"))),
                },
            };
            let mut args = strings(&[
                "-quiet",
                "-accept",
                &format!("127.0.0.1:{port}"),
                "-cert",
                &cert.to_string_lossy(),
                "-key",
                &key.to_string_lossy(),
            ]);
            if bits < SECLEVEL1_BELOW {
                args.extend(strings(&["-cipher", "DEFAULT:@SECLEVEL=1"]));
            }
            let env = self.side(side);
            let what = env.describe("s_server", &args);
            let cmd = env.command("s_server", &args);
            let log = self
                .out
                .join("logs")
                .join(format!("s_server-{}.stderr", side.name()));
            match Server::start(cmd, port, &log, &what) {
                Ok(s) => return Ok(Ok((s, what))),
                Err(RunError::Interrupted) => return Err(Stop),
                Err(RunError::Failed(m)) => {
                    tries += 1;
                    if m.contains("in use") && self.opts.port.is_none() && tries < 3 {
                        continue;
                    }
                    return Ok(Err(m));
                }
            }
        }
    }
}

/// The in-process `openssl speed` run. speed divides by the process's
/// user CPU time unless told `-elapsed`. Where a side may offload (the
/// lab's `wall_rates`: libica, a card, stock OpenSSL's own offload) the
/// exponentiation's time is the card's, not the process's: per CPU second
/// the rate is meaningless, and a process that only waits may have no CPU
/// time at all to divide by (speed then prints no `+R` line). The host CPU
/// per operation is measured apart, on every host (`phase_cpu`).
fn in_process_speed_args(wall_rates: bool, seconds: u32, bits: u32) -> Vec<String> {
    let mut args = strings(&[
        "-seconds",
        &seconds.to_string(),
        "-mr",
        &format!("rsa{bits}"),
    ]);
    if wall_rates {
        args.insert(0, "-elapsed".to_string());
    }
    args
}

/// The CPU seconds of the timed phase that `openssl speed -mr` ends with
/// the line starting with `tag` (`+R1:` signing, `+R2:` verifying): the
/// process's CPU when that line appeared less its CPU when the line before
/// it (the phase's `+DTP`) did, from the marks of `run_timed_marked`. A
/// line the watcher never saw (the process ended within a poll) takes the
/// process's final CPU, `total`.
fn phase_cpu(stderr: &str, marks: &[Mark], tag: &str, total: f64) -> Option<f64> {
    let (start, end) = phase_marks(stderr, tag)?;
    let cpu = |m: Option<&Mark>| m.map_or(total, |m| m.cpu);
    let start = if start == 0 {
        0.0
    } else {
        cpu(marks.iter().find(|m| m.lines >= start))
    };
    Some((cpu(marks.iter().find(|m| m.lines >= end)) - start).max(0.0))
}

/// The CPU seconds that the `children` of `openssl speed -mr -multi
/// children` spent in their signing phases, from the marks of the process
/// tree's CPU (`MarkCpu::Tree`) and `total`, the whole run's. Between two
/// marks, the tree's CPU goes to signing by the share of the children then
/// between a signing phase's `+DTP` line and its `+R` line. Where every
/// child is in the same phase (all but the few milliseconds that the
/// children's starts differ by) that is exact, whatever CPU each phase
/// uses; the CPU before the first phase (start, key and library loads)
/// and after the last goes to none.
fn multi_sign_cpu(stderr: &str, marks: &[Mark], total: f64, children: usize) -> f64 {
    let lines = phase_lines(stderr);
    let n = children.max(1) as i64;
    let (mut signing, mut applied) = (0i64, 0usize);
    let (mut before, mut cpu) = (0.0f64, 0.0);
    let ends = marks.iter().map(|m| (m.lines, m.cpu));
    for (seen, at) in ends.chain(std::iter::once((lines.len(), total))) {
        cpu += (at - before).max(0.0) * signing.clamp(0, n) as f64 / n as f64;
        before = before.max(at);
        let seen = seen.min(lines.len()).max(applied);
        for l in &lines[applied..seen] {
            match l {
                PhaseLine::SigningStarts => signing += 1,
                PhaseLine::SigningEnds => signing -= 1,
                PhaseLine::Other => {}
            }
        }
        applied = seen;
    }
    cpu
}

/// The card requests the kernel counted during the phase that ends with
/// `tag`'s line (as [`phase_cpu`]); None where a mark lacks a count.
fn phase_requests(stderr: &str, marks: &[Mark], tag: &str) -> Option<u64> {
    let (start, end) = phase_marks(stderr, tag)?;
    let at = |n: usize| marks.iter().find(|m| m.lines >= n)?.requests;
    Some(at(end)?.saturating_sub(at(start.max(1))?))
}

/// The `+` line counts that open and close the phase ending with `tag`.
fn phase_marks(stderr: &str, tag: &str) -> Option<(usize, usize)> {
    let plus: Vec<&str> = stderr.lines().filter(|l| l.starts_with('+')).collect();
    let end = plus.iter().position(|l| l.starts_with(tag))? + 1;
    Some((end - 1, end))
}

#[cfg(test)]
mod speed_args_tests {
    use super::{in_process_speed_args, multi_sign_cpu, phase_cpu, phase_requests, Mark};

    /// `openssl speed -mr -multi 2 rsa2048` (OpenSSL 3.0): two children,
    /// their lines interleaved, each signing then verifying for 10 s.
    const MULTI2: &str = "+DTP:2048:private:rsa:10\n+DTP:2048:private:rsa:10\n\
                          +R1:3000:2048:10.00\n+DTP:2048:public:rsa:10\n\
                          +R1:3010:2048:10.00\n+DTP:2048:public:rsa:10\n\
                          +R2:99000:2048:10.00\n+R2:98000:2048:10.00\n\
                          +F2:1:2048:6010.000000:197000.000000\n";

    fn mark(lines: usize, cpu: f64) -> Mark {
        Mark {
            lines,
            cpu,
            requests: None,
        }
    }

    #[test]
    fn a_signing_phase_that_waits_on_the_card_costs_no_cpu() {
        // Both children load for 0.3 s of CPU, then sign on the card (no
        // CPU at all), then verify in software: 20 s of CPU, 10 s each.
        let marks = [
            mark(1, 0.3),
            mark(2, 0.3),
            mark(3, 0.3),
            mark(4, 0.3),
            mark(5, 0.3),
            mark(6, 0.3),
            mark(8, 20.3),
        ];
        let sign = multi_sign_cpu(MULTI2, &marks, 20.31, 2);
        // Split by the phases' durations it would be half of 20.31 s.
        assert!(sign.abs() < 1e-9, "{sign}");
    }

    #[test]
    fn the_signing_phase_gets_what_it_used() {
        // Load 0.3 s; signing 8 s of CPU in all; verifying 20 s. The
        // second child starts signing 0.01 s of CPU after the first and
        // stops 0.02 s after it: those intervals, with one child signing
        // of two, count half.
        let marks = [
            mark(1, 0.3),
            mark(2, 0.31),
            mark(3, 8.3),
            mark(4, 8.3),
            mark(5, 8.32),
            mark(6, 8.32),
            mark(8, 28.3),
        ];
        let sign = multi_sign_cpu(MULTI2, &marks, 28.4, 2);
        let expect = 0.01 / 2.0 + 7.99 + 0.02 / 2.0;
        assert!((sign - expect).abs() < 1e-9, "{sign}");
        // Past the last mark (lines the watcher never saw: the run ended
        // within a poll), the CPU up to the run's total is split as the
        // children stood at that mark: one of two signing.
        let sign = multi_sign_cpu(MULTI2, &marks[..1], 1.3, 2);
        assert!((sign - 0.5).abs() < 1e-9, "{sign}");
    }

    #[test]
    fn where_a_side_may_offload_speed_rates_are_per_wall_second() {
        assert_eq!(
            in_process_speed_args(true, 1, 2048),
            ["-elapsed", "-seconds", "1", "-mr", "rsa2048"]
        );
        assert_eq!(
            in_process_speed_args(false, 1, 2048),
            ["-seconds", "1", "-mr", "rsa2048"]
        );
    }

    #[test]
    fn each_phase_gets_the_cpu_spent_between_its_two_lines() {
        let err = "+DTP:1024:private:rsa:1\n+R1:10654:1024:1.00\n\
                   +DTP:1024:public:rsa:1\n+R2:187783:1024:1.00\n+F2:1:1024:1:1\n";
        // The watcher saw 1 line at 0.01 s of CPU, 2 at 0.41, 3 at 0.42; the
        // last lines came as the process ended, at 0.83.
        let mark = |lines, cpu, requests| Mark {
            lines,
            cpu,
            requests: Some(requests),
        };
        let marks = [mark(1, 0.01, 5), mark(2, 0.41, 105), mark(3, 0.42, 105)];
        let sign = phase_cpu(err, &marks, "+R1:", 0.83).unwrap();
        let verify = phase_cpu(err, &marks, "+R2:", 0.83).unwrap();
        assert!((sign - 0.40).abs() < 1e-9, "{sign}");
        assert!((verify - 0.41).abs() < 1e-9, "{verify}");
        // A jump over a line (seen 1, then 3) gives the phase the CPU up
        // to the later mark: never negative, never lost.
        let sign = phase_cpu(err, &[mark(1, 0.01, 5), mark(3, 0.42, 105)], "+R1:", 0.83).unwrap();
        assert!((sign - 0.41).abs() < 1e-9, "{sign}");
        assert_eq!(phase_cpu(err, &marks, "+R9:", 0.83), None);
        // The kernel's requests in the signing phase: 100; in the
        // verifying phase none was seen (no mark at its end).
        assert_eq!(phase_requests(err, &marks, "+R1:"), Some(100));
        assert_eq!(phase_requests(err, &marks, "+R2:"), None);
    }
}
