//! What the binary itself prints, in two streams:
//!
//! - **stdout** (`outln!`): the command's answer (a tool list, a URL, a report). A reader that closes the
//!   pipe early (`holdfast tools list | head`) ends nothing: the rest is dropped quietly, never a panic.
//! - **stderr** (`say!`): status lines (devnet progress, "listening on", shutdown). As text by
//!   default; with `--log-format json` each becomes a `tracing` event of target [`TARGET`] at `info` (shown
//!   whatever the log filter, unless the filter names the target), so stderr holds JSON only.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

/// The `tracing` target of status lines in JSON mode.
pub(crate) const TARGET: &str = "holdfast::console";

static JSON: AtomicBool = AtomicBool::new(false);

/// Status lines become `tracing` events from now on (`--log-format json`).
pub(crate) fn use_json() {
    JSON.store(true, Ordering::Relaxed);
}

/// Writes one status line to stderr, or as an event in JSON mode.
pub(crate) fn say(args: std::fmt::Arguments<'_>) {
    if JSON.load(Ordering::Relaxed) {
        tracing::info!(target: "holdfast::console", "{args}");
    } else {
        let _ = writeln!(std::io::stderr().lock(), "{args}");
    }
}

/// Writes one failure line: an `error` event in JSON mode.
pub(crate) fn fail(args: std::fmt::Arguments<'_>) {
    if JSON.load(Ordering::Relaxed) {
        tracing::error!(target: "holdfast::console", "{args}");
    } else {
        let _ = writeln!(std::io::stderr().lock(), "{args}");
    }
}

/// Writes to stdout; a closed pipe (or any other write failure) is not an error for the command.
pub(crate) fn out(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_fmt(args).and_then(|()| stdout.flush());
}

/// `say!("…", args)`: a status line on stderr (see the module docs).
macro_rules! say {
    ($($arg:tt)*) => { $crate::console::say(format_args!($($arg)*)) };
}

/// `outln!("…", args)`: a line of the command's answer on stdout; a closed pipe is ignored.
macro_rules! outln {
    () => { $crate::console::out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::console::out(format_args!("{}\n", format_args!($($arg)*))) };
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_target_is_the_one_the_events_carry() {
        // `tracing::info!(target: …)` needs a literal: keep it equal to the constant the filter uses.
        assert_eq!(super::TARGET, "holdfast::console");
    }
}
