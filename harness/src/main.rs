//! `rustica`: the command that goes with the rustica OpenSSL provider.
//!
//! - `rustica lab`: the workshop's RSA matrix, run through the stock
//!   `openssl` command without (A) and with (B) rustica, validated and
//!   reported (see `lab`).
//! - `rustica stats`: the provider's operation counters (see `stats_cmd`).
//! - `rustica compare`: B/A with the lab's interval and verdict for samples
//!   a bench script took (see `compare_cmd`).
//! - `rustica config`, `install`, `doctor`: system-wide set-up (see
//!   `config_cmd`, `install_cmd`, `doctor`).
//! - `rustica completions SHELL`, and the hidden `rustica man`: shell
//!   completion and the rustica(1) page, both generated from the clap
//!   definitions in `cli` (see `manpage`).

use clap::Parser;
use cli::{cli, Cli, Command};
use std::process::ExitCode;

mod cli;
mod compare_cmd;
mod config_cmd;
mod doctor;
mod install_cmd;
mod lab;
mod manpage;
mod paths;
mod safe_fs;
mod stats_cmd;
mod sysconf;
mod system;
mod utc;

fn main() -> ExitCode {
    let args = Cli::parse();
    let code = match args.command {
        Command::Lab(args) => lab::run(*args),
        Command::Stats(args) => stats_cmd::run(args),
        Command::Compare(args) => compare_cmd::run(args),
        Command::Config(args) => config_cmd::run(args),
        Command::Install(args) => install_cmd::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut cli(), "rustica", &mut std::io::stdout());
            0
        }
        Command::Man => manpage::print(),
    };
    ExitCode::from(code)
}
