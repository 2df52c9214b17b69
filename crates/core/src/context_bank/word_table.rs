//! The word table: every word the scanner knows, ASCII case folded, found in O(1).

use super::*;

// ---------------------------------------------------------------------------------------------------------------
// The word table.
// ---------------------------------------------------------------------------------------------------------------

/// Every word the scanner knows, ASCII case folded. A word of fewer than 16 ASCII bytes is read from one 16-byte load
/// and packed into a `u128` ([`ascii_word`]), then found by hashing: a bit filter small enough for the L1 cache
/// turns away almost every ordinary word, and an open-addressing table confirms the rest. Longer words and words with
/// non-ASCII letters go through a `HashMap`.
#[derive(Debug)]
pub(super) struct WordTable {
    /// The distinct first bytes (`| 0x20`) of the table's ASCII words other than digits, repeated to fill the first
    /// `lead_width` slots (1, 2, 4 or 8); a `lead_width` of 0 (more than 8 of them) marks every word start.
    pub(super) leads: [u8; 8],
    pub(super) lead_width: usize,
    /// Some word of the table begins with a non-ASCII character.
    pub(super) unicode_starts: bool,
    /// One bit per pair of first bytes (each `| 0x20`) that a word of the table, a number or a non-ASCII word may
    /// begin with; a clear bit lets the scanner pass over an ordinary word after two loads.
    pub(super) first_two: Box<[u64; 1024]>,
    pub(super) entries: Vec<WordEntry>,
    /// One bit per value of the top `filter_bits` bits of [`hash`]; set for every packed word of the table.
    pub(super) filter: Vec<u64>,
    pub(super) filter_bits: u32,
    /// `(packed word, entry index + 1)` by the next `slot_bits` bits of the hash, linear probing; 0 means empty.
    pub(super) slots: Vec<(u128, u32)>,
    pub(super) slot_bits: u32,
    /// Words that do not pack, ASCII lower case.
    pub(super) long: HashMap<Box<[u8]>, usize>,
}

/// Packed words are at most this many bytes.
pub(super) const PACKED: usize = 16;

/// Every byte has `0x20` set after folding: ASCII letters become lower case; digits and `_` stay distinct.
pub(super) const FOLD: u128 = 0x2020_2020_2020_2020_2020_2020_2020_2020;

impl WordTable {
    pub(super) fn build(words: IndexMap<Vec<u8>, WordEntry>) -> Self {
        let mut first_two = Box::new([0u64; 1024]);
        let mut allow = |first: u8, second: Option<u8>| {
            for b in second.map_or(0..=255, |b| b..=b) {
                let pair = first_pair(first, b);
                first_two[pair / 64] |= 1 << (pair % 64);
            }
        };
        // Numbers and `0x` addresses begin with a digit; words with non-ASCII letters are looked up by their own
        // path (a non-ASCII first byte can be a letter or not: `é`, `—`).
        for first in (b'0'..=b'9').chain(0x80..=0xff) {
            allow(first, None);
        }
        let mut entries = Vec::with_capacity(words.len());
        let mut packed = Vec::new();
        let mut long = HashMap::new();
        let mut firsts = Vec::new();
        for (i, (word, entry)) in words.into_iter().enumerate() {
            if let Some(&first) = word.first() {
                // A one-letter word is followed by any byte that is not a word byte.
                allow(first, word.get(1).copied());
                firsts.push(first);
            }
            if word.len() <= PACKED && word.is_ascii() {
                packed.push((pack(&word), i));
            } else {
                long.insert(word.into_boxed_slice(), i);
            }
            entries.push(entry);
        }
        // ~3% false positives in the filter; the slot table is at most half full.
        let filter_bits = (packed.len() * 32).next_power_of_two().trailing_zeros().clamp(12, 24);
        let slot_bits = (packed.len() * 2).next_power_of_two().trailing_zeros().clamp(4, 32);
        let mut filter = vec![0u64; 1 << (filter_bits - 6)];
        let mut slots = vec![(0u128, 0u32); 1 << slot_bits];
        let slot_mask = slots.len() - 1;
        for (key, i) in packed {
            let h = hash(key);
            let bit = (h >> (64 - filter_bits)) as usize;
            filter[bit / 64] |= 1 << (bit % 64);
            let mut s = ((h << filter_bits) >> (64 - slot_bits)) as usize;
            while slots[s].1 != 0 {
                s = (s + 1) & slot_mask;
            }
            slots[s] = (key, u32::try_from(i + 1).unwrap_or(u32::MAX));
        }
        let unicode_starts = firsts.iter().any(|b| !b.is_ascii());
        let (leads, lead_width) = lead_bytes(firsts);
        Self { leads, lead_width, unicode_starts, first_two, entries, filter, filter_bits, slots, slot_bits, long }
    }

    /// [`classify`] with this table's lead bytes.
    #[inline]
    pub(super) fn classify(&self, text: &str, block: usize, window: &Window) -> BlockMarks {
        let (l, u) = (&self.leads, self.unicode_starts);
        match self.lead_width {
            1 => classify(text, block, window, &[l[0]], u),
            2 => classify(text, block, window, &[l[0], l[1]], u),
            4 => classify(text, block, window, &[l[0], l[1], l[2], l[3]], u),
            8 => classify(text, block, window, l, u),
            _ => classify(text, block, window, &[], u),
        }
    }

    /// The marked word starts of a block (bit `i`: `block + i`, byte `1 + i` of `window`) that may be a word of the
    /// table, a number or a word with non-ASCII letters: almost no ordinary word passes. Without branches per word:
    /// when the classifier marked every word start, the first two bytes are checked first; then the whole word's
    /// hash is checked against the filter.
    #[inline]
    pub(super) fn candidates(&self, text: &str, block: usize, window: &Window, starts: u64) -> u64 {
        let mut todo = if self.lead_width == 0 { self.first_two_filter(window, starts) } else { starts };
        let bytes = text.as_bytes();
        let mut out = 0u64;
        while todo != 0 {
            let bit = todo.trailing_zeros();
            todo &= todo - 1;
            let word = ascii_word(load_16(bytes, block + bit as usize));
            // Numbers and addresses pass; so do words that only the slow path can read: 16 ASCII bytes or more, or
            // running into non-ASCII letters when the table has such words.
            let number = (word.key as u8).is_ascii_digit();
            let unsure = !word.complete && (word.len == PACKED || !self.long.is_empty());
            out |= u64::from(number || unsure || self.filter_has(hash(word.key))) << bit;
        }
        out
    }

    /// The starts among `starts` whose first two bytes pass `first_two`.
    #[inline]
    pub(super) fn first_two_filter(&self, window: &Window, starts: u64) -> u64 {
        let mut out = 0u64;
        let mut todo = starts;
        while todo != 0 {
            let bit = todo.trailing_zeros();
            todo &= todo - 1;
            let i = 1 + bit as usize % BLOCK;
            let pair = first_pair(window[i], window[i + 1]);
            out |= (self.first_two[pair / 64] >> (pair % 64) & 1) << bit;
        }
        out
    }

    /// Whether the word starting at `at` passes the first-two-bytes filter.
    pub(super) fn may_begin(&self, bytes: &[u8], at: usize) -> bool {
        let first = bytes.get(at).copied().unwrap_or(0);
        let pair = first_pair(first, bytes.get(at + 1).copied().unwrap_or(0));
        self.first_two[pair / 64] >> (pair % 64) & 1 == 1
    }

    /// Whether the filter has the bit of this hash (else no packed word of the table has this hash).
    #[inline]
    pub(super) fn filter_has(&self, h: u64) -> bool {
        let bit = (h >> (64 - self.filter_bits)) as usize;
        self.filter.get(bit / 64).is_some_and(|w| w >> (bit % 64) & 1 == 1)
    }

    /// The word starting at `start` (a character boundary): where it ends, and its entry if the table has one
    /// (compared ignoring ASCII case).
    #[inline]
    pub(super) fn word(&self, text: &str, start: usize) -> (usize, Option<&WordEntry>) {
        let bytes = text.as_bytes();
        let word = ascii_word(load_16(bytes, start));
        if word.complete {
            return (start + word.len, self.get_packed(word.key));
        }
        let end = word_end_from(text, start);
        let word = bytes.get(start..end).unwrap_or_default();
        if word.len() <= PACKED && word.is_ascii() {
            return (end, self.get_packed(pack(word)));
        }
        if self.long.is_empty() {
            return (end, None);
        }
        (end, self.long.get(word.to_ascii_lowercase().as_slice()).and_then(|&i| self.entries.get(i)))
    }

    /// The entry of a packed word.
    #[inline]
    pub(super) fn get_packed(&self, key: u128) -> Option<&WordEntry> {
        let h = hash(key);
        if !self.filter_has(h) {
            return None;
        }
        let slot_mask = self.slots.len() - 1;
        let mut s = ((h << self.filter_bits) >> (64 - self.slot_bits)) as usize;
        loop {
            let (k, i) = *self.slots.get(s)?;
            if i == 0 {
                return None;
            }
            if k == key {
                return self.entries.get(i as usize - 1);
            }
            s = (s + 1) & slot_mask;
        }
    }
}

/// The lead bytes of [`WordTable::leads`] for words with these first bytes, and how many slots to compare.
pub(super) fn lead_bytes(firsts: Vec<u8>) -> ([u8; 8], usize) {
    let mut distinct: Vec<u8> =
        firsts.into_iter().filter(|b| b.is_ascii() && !b.is_ascii_digit()).map(|b| b | 0x20).collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() > 8 {
        return ([0; 8], 0);
    }
    let width = distinct.len().next_power_of_two();
    let mut leads = [b'0'; 8]; // a digit: digits are lead bytes anyway
    for (slot, lead) in leads.iter_mut().zip(distinct.iter().cycle()).take(width) {
        *slot = *lead;
    }
    (leads, width)
}

pub(super) const fn splat(b: u8) -> u64 {
    0x0101_0101_0101_0101 * b as u64
}

/// The high bit of every byte.
pub(super) const HIGH: u64 = splat(0x80);

/// The high bit of each byte of `x` that is an ASCII letter, digit or `_` (SWAR: `v + (0x80 - lo)` has its high
/// bit set exactly when the byte `v < 0x80` is at least `lo`, and no carry crosses bytes).
#[inline]
pub(super) fn word_lane(x: u64) -> u64 {
    let low = x & !HIGH;
    let at_least = |v: u64, lo: u8| v.wrapping_add(splat(0x80 - lo));
    let digit = at_least(low, b'0') & !at_least(low, b'9' + 1);
    let folded = low | splat(0x20);
    let letter = at_least(folded, b'a') & !at_least(folded, b'z' + 1);
    let underscore = !at_least(low ^ splat(b'_'), 1);
    (digit | letter | underscore) & !x & HIGH
}

/// The index of the bit of `WordTable::first_two` for a word beginning with these two bytes.
#[inline]
pub(super) fn first_pair(first: u8, second: u8) -> usize {
    usize::from(u16::from_le_bytes([first, second]) | 0x2020)
}

/// A word of at most 16 ASCII word characters, little-endian, each byte `| 0x20`, zero-padded.
pub(super) fn pack(word: &[u8]) -> u128 {
    let mut buf = [0u8; PACKED];
    let n = word.len().min(PACKED);
    buf[..n].copy_from_slice(&word[..n]);
    let mask = if n == PACKED { u128::MAX } else { (1u128 << (8 * n)) - 1 };
    (u128::from_le_bytes(buf) | FOLD) & mask
}

/// The ASCII start of a word, read from the 16 bytes at its first byte.
#[derive(Debug, Clone, Copy)]
pub(super) struct AsciiWord {
    /// The leading ASCII word bytes, packed: little-endian, each byte `| 0x20`, zero-padded.
    pub(super) key: u128,
    /// How many there are (0 to 16).
    pub(super) len: usize,
    /// The word ends right after them: at an ASCII byte that is no word byte, or at the end of the text.
    pub(super) complete: bool,
}

/// Reads [`AsciiWord`] from `raw`, without branches.
#[inline]
pub(super) fn ascii_word(raw: u128) -> AsciiWord {
    let (lo, hi) = (raw as u64, (raw >> 64) as u64);
    let ends = u128::from(!word_lane(lo) & HIGH) | u128::from(!word_lane(hi) & HIGH) << 64;
    let len = (ends.trailing_zeros() / 8) as usize; // 16 when no byte ends it
    let next = raw.checked_shr(8 * len as u32).unwrap_or(0) as u8;
    let mask = 1u128.checked_shl(8 * len as u32).unwrap_or(0).wrapping_sub(1);
    AsciiWord { key: (raw | FOLD) & mask, len, complete: len < PACKED && next < 0x80 }
}

/// The 16 bytes from `at`, zero-padded past the end.
#[inline]
pub(super) fn load_16(bytes: &[u8], at: usize) -> u128 {
    let rest = bytes.get(at..).unwrap_or_default();
    if let Some(chunk) = rest.first_chunk::<PACKED>() {
        return u128::from_le_bytes(*chunk);
    }
    let mut buf = [0u8; PACKED];
    buf[..rest.len()].copy_from_slice(rest);
    u128::from_le_bytes(buf)
}

#[inline]
pub(super) fn hash(key: u128) -> u64 {
    let (lo, hi) = (key as u64, (key >> 64) as u64);
    (lo ^ hi.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xd6e8_feb8_6659_fd93)
}
