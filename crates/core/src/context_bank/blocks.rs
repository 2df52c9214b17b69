//! Word starts, 64 bytes at a time: the branch-free classification the scanner runs before any lookup.

use super::*;

// ---------------------------------------------------------------------------------------------------------------
// Word starts, 64 bytes at a time.
//
// The text is read in blocks of 64 bytes. For an ASCII block, one branch-free loop over its bytes, which the compiler
// turns into vector compares, marks each byte that starts a word worth a look: a word byte after a byte that is not,
// whose first byte is a digit or one of the few first bytes of the table's words ([`WordTable::leads`]). The marks
// are gathered into one bit per byte, eight bytes per multiplication. A marked start must still pass the table's
// first-two-bytes filter before it is looked up, so an ordinary word costs a few vector operations and nothing else.
// A block holding a non-ASCII byte, or following one, is classified per character instead, so that letters such as
// `é` count as word characters and `—` or `€` do not; there every word start is worth a look.
// ---------------------------------------------------------------------------------------------------------------

/// Bytes per block: one bit of a `u64` each.
pub(super) const BLOCK: usize = 64;

/// A block's bytes with the byte before it and the 8 after it; bytes outside the text are 0 (not word bytes).
pub(super) type Window = [u8; 1 + BLOCK + 8];

/// What one block holds: bit `i` describes byte `block + i`.
#[derive(Debug, Clone, Copy)]
pub(super) struct BlockMarks {
    /// Word starts worth a look.
    pub(super) starts: u64,
    /// Digits glued to the word character before them (`abc123`, `v1`).
    pub(super) glued_digits: u64,
}

/// The window of the block at `block`: borrowed from the text, or for the first and last blocks copied into `spare`.
#[inline]
pub(super) fn window<'a>(bytes: &'a [u8], block: usize, spare: &'a mut Window) -> &'a Window {
    if let Some(from) = block.checked_sub(1)
        && let Some(window) = bytes.get(from..).and_then(<[u8]>::first_chunk)
    {
        return window;
    }
    *spare = [0; 1 + BLOCK + 8];
    let (from, to) = if block == 0 { (0, 1) } else { (block - 1, 0) };
    let rest = bytes.get(from..).unwrap_or_default();
    let n = rest.len().min(spare.len() - to);
    spare[to..to + n].copy_from_slice(&rest[..n]);
    spare
}

/// Marks the block at `block` (a multiple of 64) from its window. `leads` are the first bytes (`| 0x20`) worth a
/// look besides digits; with `N == 0` every word start is. With `unicode_starts`, a block holding non-ASCII bytes is
/// read per character and all its word starts are marked (the table has words beginning with non-ASCII letters).
#[inline]
pub(super) fn classify<const N: usize>(
    text: &str,
    block: usize,
    window: &Window,
    leads: &[u8; N],
    unicode_starts: bool,
) -> BlockMarks {
    let (prevs, _) = window.split_first_chunk::<BLOCK>().unwrap_or((&[0; BLOCK], &[]));
    let bytes = window[1..].first_chunk::<BLOCK>().unwrap_or(&[0; BLOCK]);
    // Bit 0: a word start worth a look; bit 1: a glued digit; bit 2: the same after a non-ASCII byte, which counts
    // as a word byte here and is settled below. No branches, so the loop is vectorised.
    let mut marks = [0u8; BLOCK];
    let (mut any, mut digits) = (0u8, 0u8);
    for ((mark, &b), &prev) in marks.iter_mut().zip(bytes).zip(prevs) {
        let digit = is_digit(b);
        let after_non_ascii = prev >= 0x80;
        let after_word = is_word_byte(prev) | after_non_ascii;
        let lead = N == 0 || leads.iter().fold(digit, |hit, &l| hit | (b | 0x20 == l));
        let word = is_word_byte(b);
        *mark = u8::from(word & !after_word & lead)
            | u8::from(digit & after_word) << 1
            | u8::from(word & lead & after_non_ascii) << 2;
        any |= b | prev;
        digits |= u8::from(digit);
    }
    if any >= 0x80 && unicode_starts {
        return classify_unicode(text, block);
    }
    let gather = |shift: u32| {
        let (lanes, _) = marks.as_chunks::<8>();
        lanes
            .iter()
            .enumerate()
            .fold(0u64, |m, (k, lane)| m | gather_low_bits(u64::from_le_bytes(*lane) >> shift & LOW_BITS) << (8 * k))
    };
    let mut out = BlockMarks { starts: gather(0), glued_digits: 0 };
    // Most blocks of prose hold no digit, and most no non-ASCII byte.
    if digits != 0 {
        out.glued_digits = gather(1);
    }
    if any >= 0x80 {
        // An ASCII letter or digit right after a non-ASCII character: a word start unless that character is a
        // letter or digit (`—USDC`, `€5`, but not `éUSDC`, `す0`).
        let mut todo = gather(2);
        while todo != 0 {
            let bit = todo.trailing_zeros();
            todo &= todo - 1;
            if word_start(text, block + bit as usize) {
                out.starts |= 1 << bit;
                out.glued_digits &= !(1 << bit);
            }
        }
    }
    out
}

#[inline]
pub(super) fn is_digit(b: u8) -> bool {
    b.wrapping_sub(b'0') < 10
}

/// An ASCII letter, digit or `_` (written without branches).
#[inline]
pub(super) fn is_word_byte(b: u8) -> bool {
    is_digit(b) | ((b | 0x20).wrapping_sub(b'a') < 26) | (b == b'_')
}

/// The bits from `n` up (none when `n >= 64`).
#[inline]
pub(super) fn bits_from(n: usize) -> u64 {
    u64::MAX.checked_shl(u32::try_from(n).unwrap_or(u32::MAX)).unwrap_or(0)
}

/// The low bit of every byte.
pub(super) const LOW_BITS: u64 = 0x0101_0101_0101_0101;

/// Gathers bit 0 of each byte of `v` (all other bits clear) into the low byte: byte `i` → bit `i`. The multiplier
/// moves byte `i`'s bit to bit `56 + i`; no two partial products meet, so nothing carries.
#[inline]
pub(super) fn gather_low_bits(v: u64) -> u64 {
    v.wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// [`classify`] for a block holding or following non-ASCII bytes when the table has words beginning with non-ASCII
/// letters: one character at a time, every word start marked. The block may begin or end inside a character.
#[cold]
pub(super) fn classify_unicode(text: &str, block: usize) -> BlockMarks {
    let end = (block + BLOCK).min(text.len());
    let mut from = block;
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let mut after_word = !word_start(text, from);
    let mut marks = BlockMarks { starts: 0, glued_digits: 0 };
    for (i, c) in text.get(from..).unwrap_or_default().char_indices() {
        let at = from + i;
        if at >= end {
            break;
        }
        let word = is_word_char(c);
        if at >= block {
            if word && !after_word {
                marks.starts |= 1 << (at - block);
            } else if c.is_ascii_digit() {
                marks.glued_digits |= 1 << (at - block);
            }
        }
        after_word = word;
    }
    marks
}
