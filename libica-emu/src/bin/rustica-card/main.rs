//! rustica-card: a crypto card model as a process of its own, shared by
//! every process whose emulated libica has `LIBICA_EMU_CARD` set to its
//! socket. A test tool, never packaged (docs/card-model.md).
//!
//! rustica-card --socket PATH [--cards N] [--domains N] [--unit-us U]
//! rustica-card --socket PATH --ctl COMMAND...

mod model;

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ica_emu::{arith, wire};
use model::{Card, Config, Kind, Verdict};

/// The default time unit: one weight point of the CEX8A table. Chosen so
/// that on a small x86 host the card, not the CPU, limits throughput (a
/// 2048-bit CRT takes 54 units = 5.4 ms per queue); not a real card's speed.
const DEFAULT_UNIT_US: u64 = 100;

struct Args {
    socket: PathBuf,
    config: Config,
    ctl: Option<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: rustica-card --socket PATH [--cards N] [--domains N] [--unit-us U]\n       \
         rustica-card --socket PATH --ctl COMMAND..."
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = std::env::args().skip(1);
    let mut socket = None;
    let mut config = Config {
        cards: 2,
        domains: 1,
        unit: Duration::from_micros(DEFAULT_UNIT_US),
    };
    let mut ctl = None;
    let number = |v: Option<String>| -> u64 {
        v.and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| usage())
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--socket" => socket = Some(PathBuf::from(args.next().unwrap_or_else(|| usage()))),
            "--cards" => config.cards = number(args.next()).min(64) as usize,
            "--domains" => config.domains = number(args.next()).min(85) as usize,
            "--unit-us" => config.unit = Duration::from_micros(number(args.next())),
            "--ctl" => {
                ctl = Some(args.by_ref().collect::<Vec<_>>().join(" "));
            }
            _ => usage(),
        }
    }
    Args {
        socket: socket.unwrap_or_else(|| usage()),
        config,
        ctl,
    }
}

fn main() {
    let args = parse_args();
    if let Some(line) = args.ctl {
        let answer =
            UnixStream::connect(&args.socket).and_then(|mut s| wire::control(&mut s, &line));
        match answer {
            Ok(text) if text.starts_with("error:") => {
                eprintln!("{text}");
                std::process::exit(1)
            }
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("rustica-card: {}: {e}", args.socket.display());
                std::process::exit(1)
            }
        }
        return;
    }
    // Never remove an existing file: the path is the caller's to choose.
    let listener = match UnixListener::bind(&args.socket) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("rustica-card: bind {}: {e}", args.socket.display());
            std::process::exit(1)
        }
    };
    println!(
        "rustica-card: listening on {} ({} cards x {} domains, queue depth {}, unit {} us)",
        args.socket.display(),
        args.config.cards,
        args.config.domains,
        model::QUEUE_DEPTH,
        args.config.unit.as_micros()
    );
    let _ = std::io::stdout().flush();
    let card = Arc::new(Card::new(args.config));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let card = Arc::clone(&card);
        let socket = args.socket.clone();
        std::thread::spawn(move || {
            if let Err(Quit) = serve(&card, stream) {
                let _ = std::fs::remove_file(&socket);
                std::process::exit(0);
            }
        });
    }
}

struct Quit;

/// Answers the requests of one connection until it closes.
fn serve(card: &Card, mut stream: UnixStream) -> Result<(), Quit> {
    while let Ok(Some(header)) = wire::read_header(&mut stream) {
        // Bounded frames: a stray writer cannot make the card allocate.
        let limit = if header.kind == wire::KIND_CONTROL {
            64 * 1024
        } else {
            wire::MAX_LENGTH
        };
        if header.length > limit {
            return Ok(());
        }
        let mut payload = vec![0u8; header.length];
        if header.kind == wire::KIND_CONTROL {
            if stream.read_exact(&mut payload).is_err() {
                return Ok(());
            }
            let line = String::from_utf8_lossy(&payload);
            let quit = line.trim() == "quit";
            let answer = if quit {
                "ok".to_string()
            } else {
                card.control(&line)
                    .unwrap_or_else(|e| format!("error: {e}"))
            };
            let mut reply = (answer.len() as u32).to_le_bytes().to_vec();
            reply.extend_from_slice(answer.as_bytes());
            let _ = stream.write_all(&reply);
            if quit {
                return Err(Quit);
            }
            continue;
        }
        let Some(len) = wire::payload_len(header.kind, header.length) else {
            return Ok(());
        };
        if header.length < 8 {
            return Ok(());
        }
        payload.resize(len, 0);
        if stream.read_exact(&mut payload).is_err() {
            return Ok(());
        }
        let (rc, result) = answer(card, header.kind, header.pid, header.length, payload);
        let mut reply = rc.to_le_bytes().to_vec();
        reply.extend_from_slice(&result);
        if stream.write_all(&reply).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

fn bit_length(bytes: &[u8]) -> u64 {
    match bytes.iter().position(|&b| b != 0) {
        Some(i) => (bytes.len() - i) as u64 * 8 - u64::from(bytes[i].leading_zeros()),
        None => 0,
    }
}

/// Lets the model take the request through its queues; the result is
/// computed while the request is in service.
fn answer(card: &Card, kind: u8, pid: u32, key_length: usize, mut p: Vec<u8>) -> (u32, Vec<u8>) {
    let mut out = vec![0u8; key_length];
    // Counted by key length, as libica's callers size their keys; timed
    // by the operands' real lengths.
    let size = key_length as u64 * 8;
    let verdict = if kind == wire::KIND_MOD_EXPO {
        let (input, rest) = p.split_at(key_length);
        let (n, e) = rest.split_at(key_length);
        let (bits, exponent_bits) = (bit_length(n), bit_length(e));
        card.submit(pid, Kind::ModExpo, size, bits, exponent_bits, || {
            arith::mod_expo(input, n, e, &mut out)
        })
    } else {
        let half = key_length / 2;
        let (input, rest) = p.split_at_mut(key_length);
        let (prime_p, rest) = rest.split_at_mut(half + 8);
        let (prime_q, rest) = rest.split_at_mut(half);
        let (dp, rest) = rest.split_at_mut(half + 8);
        let (dq, qinv) = rest.split_at_mut(half);
        let bits = bit_length(prime_p) + bit_length(prime_q);
        card.submit(pid, Kind::Crt, size, bits, 0, || {
            arith::crt(input, [prime_p, prime_q, dp, dq, qinv], &mut out)
        })
    };
    match verdict {
        Verdict::Answer => (0, out),
        Verdict::Corrupt => {
            if let Some(b) = out.last_mut() {
                *b ^= 1;
            }
            (0, out)
        }
        Verdict::Errno(e) => (e, vec![0; key_length]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_length_skips_leading_zeros() {
        assert_eq!(bit_length(&[0, 0, 0]), 0);
        assert_eq!(bit_length(&[0, 1]), 1);
        assert_eq!(bit_length(&[0, 0x80, 0]), 16);
        assert_eq!(bit_length(&[0x01, 0x00, 0x01]), 17);
    }

    #[test]
    fn crt_frames_have_libicas_layout() {
        // 2048-bit key: input 256, p/dp/qInverse 136, q/dq 128.
        assert_eq!(
            wire::payload_len(wire::KIND_CRT, 256),
            Some(256 + 3 * 136 + 2 * 128)
        );
        assert_eq!(wire::payload_len(wire::KIND_MOD_EXPO, 256), Some(768));
        assert_eq!(wire::payload_len(wire::KIND_CONTROL, 256), None);
    }
}
