//! rustica-card: a crypto card model as a process of its own, shared by
//! every process whose emulated libica has `LIBICA_EMU_CARD` set to its
//! socket, or whose /dev/z90crypt the interposer (testbed/card/interposer/)
//! answers. A test tool, never packaged (docs/card-model.md).
//!
//! rustica-card --socket PATH [--cards N] [--domains N] [--engines K]
//!              [--unit-us U] [--overhead-us U] [--sysfs DIR]
//!              [--max-connections N] [--idle-timeout-ms MS]
//! rustica-card --socket PATH --ctl COMMAND...

use std::path::PathBuf;
use std::time::Duration;

use rustica_card::server::{self, Options};

struct Args {
    options: Options,
    ctl: Option<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: rustica-card --socket PATH [--cards N] [--domains N] [--engines K] \
         [--unit-us U] [--overhead-us U] [--sysfs DIR] [--max-connections N] \
         [--idle-timeout-ms MS]\n       \
         rustica-card --socket PATH --ctl COMMAND..."
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = std::env::args().skip(1);
    let mut socket = None;
    // The socket is set last: there is no default path.
    let mut o = Options::new(PathBuf::new());
    let mut ctl = None;
    let number = |v: Option<String>| -> u64 {
        v.and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| usage())
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--socket" => socket = Some(PathBuf::from(args.next().unwrap_or_else(|| usage()))),
            "--cards" => o.config.cards = number(args.next()).min(64) as usize,
            "--domains" => o.config.domains = number(args.next()).min(85) as usize,
            "--engines" => o.config.engines = number(args.next()).min(256) as usize,
            "--unit-us" => o.config.unit = Duration::from_micros(number(args.next())),
            "--overhead-us" => {
                let v = args.next().and_then(|v| v.parse().ok());
                o.config.overhead = Duration::from_micros(v.unwrap_or_else(|| usage()));
            }
            "--sysfs" => o.sysfs = Some(PathBuf::from(args.next().unwrap_or_else(|| usage()))),
            "--max-connections" => o.max_connections = number(args.next()) as usize,
            "--idle-timeout-ms" => o.idle_timeout = Duration::from_millis(number(args.next())),
            "--ctl" => {
                ctl = Some(args.by_ref().collect::<Vec<_>>().join(" "));
            }
            _ => usage(),
        }
    }
    o.socket = socket.unwrap_or_else(|| usage());
    Args { options: o, ctl }
}

fn die(message: String) -> ! {
    eprintln!("rustica-card: {message}");
    std::process::exit(1)
}

fn main() {
    let args = parse_args();
    if let Some(line) = args.ctl {
        match server::control(&args.options.socket, &line) {
            Ok(text) if text.starts_with("error:") => {
                eprintln!("{text}");
                std::process::exit(1)
            }
            Ok(text) => println!("{text}"),
            Err(e) => die(format!("{}: {e}", args.options.socket.display())),
        }
        return;
    }
    match server::run(args.options) {
        Ok(never) => match never {},
        Err(e) => die(e),
    }
}
