//! The context-bank scanner on arbitrary text: never panics, every address is EIP-55 (or flagged and kept as
//! typed), every amount is a canonical decimal, every bound amount's label is a symbol of the token table.
#![no_main]

use holdfast_fuzz::Scanner;
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static BUILTIN: LazyLock<Scanner> = LazyLock::new(Scanner::builtin);
static WIDE: LazyLock<Scanner> = LazyLock::new(Scanner::wide);

fuzz_target!(|data: &[u8]| {
    // Valid UTF-8 as it is; anything else as the lossy text a front end would pass on.
    let text = String::from_utf8_lossy(data);
    BUILTIN.check(&text);
    WIDE.check(&text);
});
