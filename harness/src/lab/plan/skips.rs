//! When a step runs for a key size, and why not: the sizes `openssl speed`
//! knows, reused keys, `--skip`, and the quick lab's omissions (docs/lab.md,
//! "Sampling": what the quick lab leaves out and why). The step table
//! (`steps`) names these as each step's `applies`.

use super::options::{Options, SkipWhat, QUICK_NEWKEY_MAX_BITS, SPEED_SIZES};

pub fn always(_o: &Options, _bits: u32) -> Result<(), String> {
    Ok(())
}

/// The quick lab runs TLS at 2048 bits only: a handshake's RSA work is one
/// signature, which `openssl speed` measures at every size, and each size's
/// two TLS cells take 24 `s_time` runs of 1.4 s at the least (over 30 s of
/// the quick lab's five minutes); below 2048 bits Debian's security level 2
/// refuses the keys in TLS anyway.
pub fn tls_applies(o: &Options, bits: u32) -> Result<(), String> {
    if o.quick && bits != QUICK_TLS_BITS {
        Err(format!(
            "quick lab: TLS at {QUICK_TLS_BITS} bits only (a handshake's RSA work is one signature, \
             which openssl speed measures at every size; --full or --sizes runs every size)"
        ))
    } else {
        Ok(())
    }
}

/// The one size of the quick lab's TLS cells: the size servers use.
pub const QUICK_TLS_BITS: u32 = 2048;

pub fn speed_size(_o: &Options, bits: u32) -> Result<(), String> {
    if SPEED_SIZES.contains(&bits) {
        Ok(())
    } else {
        Err(format!("openssl speed has no rsa{bits}"))
    }
}

pub fn key_not_reused(o: &Options, bits: u32) -> Result<(), String> {
    match o.reused_key(bits) {
        Some(src) => Err(format!("key reused from {}", src.display())),
        None => Ok(()),
    }
}

pub fn some_new_key_certificates(o: &Options, bits: u32) -> Result<(), String> {
    match (o.newkey_count(bits), o.newkey_certs) {
        (0, Some(_)) => Err("--newkey-certs 0".into()),
        (0, None) => Err(format!(
            "quick lab: new-key certificates up to {QUICK_NEWKEY_MAX_BITS} bits (the key generation \
             column measures these keys; --full, --sizes or --newkey-certs N runs them)"
        )),
        _ => Ok(()),
    }
}

/// `--skip speed` leaves out every `openssl speed` step, this one too. The
/// quick lab leaves it out on a host of two cores or fewer: there N = the
/// cores loads every core the lab and the machine's other work share, so
/// its spread is the machine's load (±4 % to ±64 % in a quick lab on this
/// project's 2-core machines), ±5 % is out of reach, and its six rounds a
/// size at the least would take over three of the quick lab's five minutes.
pub fn multi_applies(o: &Options, bits: u32) -> Result<(), String> {
    if o.skip.contains(&SkipWhat::Speed) {
        return Err("--skip speed".into());
    }
    let cores = multi_processes();
    if o.quick && cores <= QUICK_MULTI_MIN_CORES {
        return Err(format!(
            "quick lab on a host of {cores} cores: speed -multi {cores} loads every core, its spread is the \
             machine's load and ±5 % is out of reach (--full or --sizes runs it)"
        ));
    }
    speed_size(o, bits)
}

/// The quick lab runs `speed -multi` only on hosts with more cores than
/// this.
pub const QUICK_MULTI_MIN_CORES: usize = 2;

/// The cores `openssl speed -multi` runs on: one process per core.
pub fn multi_processes() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick_options() -> Options {
        Options {
            quick: true,
            ..Options::for_tests()
        }
    }

    #[test]
    fn the_quick_lab_leaves_out_what_buys_little() {
        let mut o = quick_options();
        // New-key certificates up to 2048 bits, with the reason above.
        assert_eq!(o.newkey_count(2048), 9);
        assert_eq!(o.newkey_count(3072), 0);
        let why = some_new_key_certificates(&o, 4096).unwrap_err();
        assert!(
            why.starts_with("quick lab: new-key certificates up to 2048"),
            "{why}"
        );
        o.newkey_certs = Some(2);
        assert_eq!(some_new_key_certificates(&o, 4096), Ok(()));
        // speed -multi: by the host's cores.
        let quick = multi_applies(&o, 2048);
        if multi_processes() <= QUICK_MULTI_MIN_CORES {
            assert!(quick
                .unwrap_err()
                .contains("±5 % is out of reach (--full or --sizes runs it)"));
        } else {
            assert_eq!(quick, Ok(()));
        }
        // TLS at 2048 bits only.
        for bits in [1024, 3072, 4096] {
            let tls = tls_applies(&o, bits).unwrap_err();
            assert!(tls.starts_with("quick lab: TLS at 2048 bits only"), "{tls}");
        }
        assert_eq!(tls_applies(&o, 2048), Ok(()));
        o.quick = false;
        assert_eq!(multi_applies(&o, 2048), Ok(()));
        assert_eq!(some_new_key_certificates(&o, 4096), Ok(()));
        assert_eq!(tls_applies(&o, 1024), Ok(()));
        // --skip speed leaves out speed -multi too; speed knows its sizes.
        o.skip = vec![SkipWhat::Speed];
        assert_eq!(multi_applies(&o, 2048), Err("--skip speed".into()));
        assert!(speed_size(&o, 1536).is_err());
    }
}
