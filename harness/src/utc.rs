//! Calendar dates in UTC from seconds since the epoch, without a date
//! crate: the stats watcher's timestamps and the DNSSEC step's signature
//! validity times.

/// A UTC time broken down: year, month (1-12), day, hour, minute, second.
pub struct Civil {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: u64,
    pub minute: u64,
    pub second: u64,
}

/// `secs` since 1970-01-01T00:00:00Z in the proleptic Gregorian calendar
/// (days to a civil date by eras of 400 years).
pub fn civil(secs: u64) -> Civil {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    Civil {
        year: yoe + era * 400 + i64::from(month <= 2),
        month,
        day,
        hour: rem / 3600,
        minute: rem / 60 % 60,
        second: rem % 60,
    }
}
