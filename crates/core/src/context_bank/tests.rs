//! The context bank's unit tests.

use super::*;

fn bank() -> ContextBank {
    let scanner = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
    ContextBank::new(Arc::new(scanner), EventBus::new("t"))
}

fn values(items: &[ContextItem]) -> Vec<(ItemType, &str, Option<&str>)> {
    items.iter().map(|i| (i.item_type, i.value.as_str(), i.label.as_deref())).collect()
}

#[test]
fn the_seed_example() {
    let b = bank();
    let added = b.scan_input("swap 0.001 ETH for USDC");
    assert_eq!(
        values(&added),
        vec![
            (ItemType::Amount, "0.001", Some("ETH")),
            (ItemType::TokenSymbol, "ETH", Some("Ethereum")),
            (ItemType::TokenSymbol, "USDC", Some("USD Coin")),
        ]
    );
    assert_eq!(b.format_for_agent().unwrap(), "Tokens: ETH (Ethereum), USDC (USD Coin)\nAmounts: 0.001 ETH");
}

#[test]
fn empty_bank_formats_to_nothing() {
    let b = bank();
    assert_eq!(b.format_for_agent(), None);
    b.scan_input("hello there, how are you?");
    assert_eq!(b.format_for_agent(), None);
}

#[test]
fn addresses_are_checksummed_or_flagged() {
    let b = bank();
    let good = "0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0";
    // The seed document's example address: mixed case, wrong checksum.
    let bad = "0x742d35Cc6634C0532925a3b844Bc9e7595f8FdF0";
    b.scan_input(&format!("send to {} and ({good}), not {bad}.", good.to_lowercase()));
    let items = b.items();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].value, good);
    assert!(items[0].flags.is_empty());
    assert_eq!(items[1].value, bad);
    assert_eq!(items[1].flags, vec![ItemFlag::ChecksumMismatch]);
    assert!(b.format_for_agent().unwrap().contains("checksum mismatch"));
}

#[test]
fn hashes_and_glued_hex_are_not_addresses() {
    let b = bank();
    let hash = format!("0x{}", "ab".repeat(32));
    b.scan_input(&format!("tx {hash} and x0x742d35Cc6634C0532925a3b844Bc9e7595f8FdF0"));
    assert!(b.items().iter().all(|i| i.item_type != ItemType::EthAddress), "{:?}", b.items());
}

#[test]
fn symbols_match_whole_words_with_the_case_rule() {
    let b = bank();
    b.scan_input("one gas for the USDCoin; ETHEREUM; weth and usdc and Dai and cbeth and CBETH");
    let items = b.items();
    let got: Vec<&str> = items.iter().map(|i| i.value.as_str()).collect();
    // "weth"/"usdc"/"cbeth" (≥3 chars, not words) match loosely; "Dai" too; "USDCoin"/"ETHEREUM" are not words.
    assert_eq!(got, vec!["WETH", "USDC", "DAI", "cbETH"]);
}

#[test]
fn amounts_below_one_separators_and_pairing() {
    let b = bank();
    b.scan_input("sell .5 WETH, then 1,000.25 usdc and 0.001ETH; buy 7 dogs on base");
    assert_eq!(
        values(&b.items()),
        vec![
            (ItemType::Amount, "0.5", Some("WETH")),
            (ItemType::TokenSymbol, "WETH", Some("Wrapped Ether")),
            (ItemType::Amount, "1000.25", Some("USDC")),
            (ItemType::TokenSymbol, "USDC", Some("USD Coin")),
            (ItemType::Amount, "0.001", Some("ETH")),
            (ItemType::TokenSymbol, "ETH", Some("Ethereum")),
            (ItemType::Amount, "7", None),
            (ItemType::Network, "base", Some("Base")),
        ]
    );
    assert!(b.has_amount("0.50", "weth"));
    assert!(b.has_amount("1000.25", "USDC"));
    // "7" has no token next to it: it authorizes no amount of any token.
    assert!(!b.has_amount("7", "USDC"));
    assert!(!b.has_amount("0.5", "USDC"));
    assert_eq!(b.format_for_agent().unwrap().lines().last(), Some("Numbers without a token (authorize nothing): 7"));
}

#[test]
fn dates_times_versions_and_words_with_digits_are_not_amounts() {
    let b = bank();
    b.scan_input("on 2024-05-01 at 10:30, v1.2 and 1.2.3, abc123, 20m, 3x");
    assert!(b.items().is_empty(), "{:?}", b.items());
}

#[test]
fn dedup_keeps_first_appearance() {
    let b = bank();
    b.scan_input("USDC USDC usdc. 5 USDC");
    b.scan_input("5 USDC and USDC");
    assert_eq!(
        values(&b.items()),
        vec![(ItemType::TokenSymbol, "USDC", Some("USD Coin")), (ItemType::Amount, "5", Some("USDC"))]
    );
}

#[test]
fn unicode_neighbours_do_not_panic_or_match() {
    let b = bank();
    b.scan_input("éUSDC ÜETH— 5€ 0x💥 ETH—USDC «0.5 ETH»");
    assert_eq!(
        values(&b.items()),
        vec![
            (ItemType::Amount, "5", None),
            (ItemType::TokenSymbol, "ETH", Some("Ethereum")),
            (ItemType::TokenSymbol, "USDC", Some("USD Coin")),
            (ItemType::Amount, "0.5", Some("ETH")),
        ]
    );
}

fn scanner(tokens: &[(&str, bool)], networks: &[(&str, &[&str])]) -> ContextScanner {
    let mut ron = String::from("{\"base\": {");
    for (i, (symbol, word_like)) in tokens.iter().enumerate() {
        let addr = format!("0x{:040x}", i + 1);
        ron.push_str(&format!(
            "\"{symbol}\": (address: \"{addr}\", decimals: 18, name: \"{symbol} token\", word_like: {word_like}),"
        ));
    }
    ron.push_str("}}");
    let mut table = NetworkTable::builtin();
    for (i, (name, aliases)) in networks.iter().enumerate() {
        let spec = crate::config::NetworkSpec {
            chain_id: Some(1000 + i as u64),
            aliases: Some(aliases.iter().map(|a| (*a).to_owned()).collect()),
            ..Default::default()
        };
        table.merge(name, spec).unwrap();
    }
    ContextScanner::new(&TokenTable::parse("test", &ron).unwrap(), &table).unwrap()
}

fn scanned(scanner: &ContextScanner, text: &str) -> Vec<String> {
    scanner
        .scan(text)
        .into_iter()
        .map(|i| match i.label {
            Some(l) if i.item_type == ItemType::Amount => format!("{} {l}", i.value),
            _ => i.value,
        })
        .collect()
}

#[test]
fn multi_word_network_names() {
    let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
    assert_eq!(scanned(&s, "bridge to Base Mainnet, BASE-MAINNET or base"), ["base", "base", "base"]);
    assert_eq!(scanned(&s, "5 ETH on base mainnet."), ["5 ETH", "ETH", "base"]);
    // Two spaces is not the alias; "base" alone still is a network.
    assert_eq!(scanned(&s, "base  mainnet"), ["base"]);
    // The longest name wins over its first word even when it runs into a letter: neither is an item.
    assert_eq!(scanned(&s, "base mainnetwork, base-mainnet_x, xbase mainnet"), Vec::<String>::new());
    // A multi-word alias right after an amount is a network, not a token pairing.
    let s = scanner(&[("OP", false)], &[("optimism", &["op mainnet"])]);
    assert_eq!(scanned(&s, "1 OP mainnet, 2 OP"), ["1", "optimism", "2 OP", "OP"]);
}

#[test]
fn unusual_network_names() {
    let s = scanner(
        &[("USDC", false)],
        &[("averyveryverylongnetworkname", &["ベース", "ベース メイン", "(paren)", "usdc", "net_1"])],
    );
    assert_eq!(
        scanned(&s, "averyveryverylongnetworkname ベース メイン ベース USDC net_1 NET_1"),
        [
            "averyveryverylongnetworkname",
            "averyveryverylongnetworkname",
            "averyveryverylongnetworkname",
            "USDC",
            "averyveryverylongnetworkname",
            "averyveryverylongnetworkname"
        ]
    );
    // Not whole words, or spelled like a symbol (the symbol wins): no network.
    assert_eq!(scanned(&s, "xベース averyveryverylongnetworknames usdc"), ["USDC"]);
    // A name that begins with punctuation stands on its own when no word character touches it.
    assert_eq!(
        scanned(&s, "(paren) x(paren) (PAREN)s (Paren)."),
        ["averyveryverylongnetworkname", "averyveryverylongnetworkname"]
    );
}

#[test]
fn symbols_of_every_length() {
    let symbols = ["X", "AB", "ABC", "ABCDEFG", "ABCDEFGH", "ABCDEFGHI", "ABCDEFGHIJKLMNO", "ABCDEFGHIJKLMNOP"];
    let s = scanner(&symbols.map(|t| (t, false)), &[]);
    for symbol in symbols {
        let lower = symbol.to_ascii_lowercase();
        let expected: Vec<&str> = if symbol.len() >= 3 { vec![symbol; 3] } else { vec![symbol; 2] };
        assert_eq!(scanned(&s, &format!("{symbol} ({lower}), {symbol}.")), expected, "{symbol}");
        for glued in [format!("{symbol}Q"), format!("Q{symbol}"), format!("{symbol}_"), format!("{symbol}é")] {
            assert_eq!(scanned(&s, &glued), Vec::<String>::new(), "{glued}");
        }
        // At the very end of the text, and glued to an amount.
        assert_eq!(scanned(&s, &format!("buy 2{symbol}")), [format!("2 {symbol}"), symbol.to_owned()]);
    }
    assert_eq!(scanned(&s, "ABCDEFGHIJKLMNOPQ abcdefghijklmnopq"), Vec::<String>::new());
}

#[test]
fn many_first_letters_use_the_pair_filter() {
    // More than eight distinct first letters: every word start is looked at.
    let letters = ["ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO", "FOXTROT", "GOLF", "HOTEL", "INDIA", "JULIET"];
    let s = scanner(&letters.map(|t| (t, false)), &[]);
    assert_eq!(s.words.lead_width, 0);
    assert_eq!(
        scanned(&s, "alpha, a bravo—Juliet and 3 golf; hotels x_india"),
        ["ALPHA", "BRAVO", "JULIET", "3 GOLF", "GOLF"]
    );
}

#[test]
fn items_are_found_wherever_the_64_byte_blocks_fall() {
    let text = "swap 0.001ETH for USDC on base mainnet, 1,000.25 usdc to 0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0 \
                (not abc123 or v1.2.3 or 2024-05-01) éUSDC ETH—USDC «.5 WETH» base";
    let expected = [
        "0.001 ETH",
        "ETH",
        "USDC",
        "base",
        "1000.25 USDC",
        "USDC",
        "0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0",
        "ETH",
        "USDC",
        "0.5 WETH",
        "WETH",
        "base",
    ];
    let letters = ["ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO", "FOXTROT", "GOLF", "HOTEL", "INDIA", "JULIET"];
    let mut tokens: Vec<(&str, bool)> = ["ETH", "USDC", "WETH"].map(|t| (t, false)).to_vec();
    let many = scanner(
        &{
            tokens.extend(letters.map(|t| (t, false)));
            tokens
        },
        &[],
    );
    let builtin = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
    for s in [&builtin, &many] {
        for filler in ["", " ", "x ", "é ", "日本 "] {
            for n in 0..=130 {
                let prefix = filler.repeat(n);
                assert_eq!(scanned(s, &format!("{prefix}{text}")), expected, "prefix {prefix:?}");
                // The first word ("swap") made long enough to cross blocks.
                assert_eq!(scanned(s, &format!("{}{text}", "a".repeat(n))), expected, "{n} letters");
            }
        }
    }
}

#[test]
fn ascii_words_among_non_ascii_letters() {
    let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
    assert_eq!(scanned(&s, "обменяй 0.5 ETH на USDC в сети base—спасибо"), ["0.5 ETH", "ETH", "USDC", "base"]);
    // Glued to letters of any script: not words, not amounts.
    assert_eq!(scanned(&s, "お願いします0.5 ETHを USDCに baseで"), Vec::<String>::new());
    assert_eq!(scanned(&s, "「0.5 ETH」を「USDC」に—€5, №7"), ["0.5 ETH", "ETH", "USDC", "5", "7"]);
}

#[test]
fn glued_numbers_take_their_separators_and_dots_with_them() {
    let b = bank();
    b.scan_input("abc1,000 v1.2.3 x.5 e1.5 3x1.5 0x12.5 1INCH, then 7");
    assert_eq!(values(&b.items()), vec![(ItemType::Amount, "7", None)]);
    let b = bank();
    b.scan_input("1,00 10,000,0 1234,567 ,5");
    // Not one of them is a thousands grouping: each is kept as written, flagged ambiguous, and binds nothing.
    assert_eq!(b.items().iter().map(|i| i.value.as_str()).collect::<Vec<_>>(), ["1,00", "10,000,0", "1234,567", ",5"]);
    assert!(b.items().iter().all(|i| i.flags == [ItemFlag::Ambiguous] && i.label.is_none()));
}

#[test]
fn a_number_joined_by_a_point_to_an_address_is_no_amount() {
    // Found by the reference-scanner property test: after an address ending in a digit, `.5` was read as 5.
    let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
    let good = "0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0";
    let ends_in_letter = "0x90f79bf6eb2c4f870365e785982e1f101e93b90f";
    assert_eq!(scanned(&s, &format!("{good}.5 USDC")), [good, "USDC"]);
    assert_eq!(scanned(&s, &format!("{}.5 USDC", good.to_lowercase())), [good, "USDC"]);
    let checked = check_address(ends_in_letter).unwrap().checksummed();
    assert_eq!(scanned(&s, &format!("{ends_in_letter}.5")), [checked]);
    // A symbol ending in a digit, likewise; a point after a point or a space still begins `.5`.
    let s = scanner(&[("ARB1", false)], &[]);
    assert_eq!(scanned(&s, "ARB1.5, ARB1 .5, 1..5"), ["ARB1", "ARB1", "0.5 ARB1"]);
}

#[test]
fn every_amount_kept_parses_as_a_decimal() {
    // Found by fuzzing (`context_bank`): `.` and 99 digits was kept as a 101-character amount that
    // `Decimal::parse`, and so `has_amount`, refuses.
    let b = bank();
    let text = format!("90000000000 ETH 0\u{fffd}.{}1 USDC", "0".repeat(98));
    b.scan_input(&text);
    let ambiguous = |i: &&ContextItem| i.flags.contains(&ItemFlag::Ambiguous);
    for item in b.items().iter().filter(|i| i.item_type == ItemType::Amount && !ambiguous(i)) {
        assert_eq!(Decimal::parse("amount", &item.value).unwrap().canonical(), item.value);
    }
    // The replacement character between the digits looks like a separator: the whole run is one ambiguous number,
    // shown as written up to an amount's length.
    let shown = format!("0\u{fffd}.{}…", "0".repeat(MAX_AMOUNT_CHARS - 3));
    assert_eq!(
        values(&b.items()),
        [
            (ItemType::Amount, "90000000000", Some("ETH")),
            (ItemType::TokenSymbol, "ETH", Some("Ethereum")),
            (ItemType::Amount, shown.as_str(), None),
            (ItemType::TokenSymbol, "USDC", Some("USD Coin")),
        ]
    );
    let kept = format!(".{}1 USDC", "0".repeat(97));
    b.scan_input(&kept);
    assert!(b.has_amount(&format!("0.{}1", "0".repeat(97)), "USDC"));
}

#[test]
fn repeated_addresses_keep_their_own_form() {
    let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
    let good = "0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0";
    let bad = "0x742d35Cc6634C0532925a3b844Bc9e7595f8FdF0";
    let text = format!("{} {bad} {bad} {} {good} {bad}", good.to_lowercase(), good.to_uppercase().replace("0X", "0x"));
    let items = s.scan(&text);
    let got: Vec<(&str, bool)> = items.iter().map(|i| (i.value.as_str(), i.flags.is_empty())).collect();
    assert_eq!(got, [(good, true), (bad, false), (bad, false), (good, true), (good, true), (bad, false)]);
}

#[test]
fn canonical_amounts_are_decimal_canonical() {
    let mut numbers: Vec<String> = [
        "0",
        "00",
        "0.0",
        "0.000",
        ".5",
        ".50",
        ".05",
        "5.",
        "1,000",
        "1,000.250",
        "001,000",
        "12,345,678.9",
        ".5.0",
        ".5,000",
        ".5,000.25",
        "1.2.3",
        "0.001",
        "100",
        "1000000",
    ]
    .map(String::from)
    .to_vec();
    numbers.push("9".repeat(100));
    numbers.push("9".repeat(101));
    numbers.push(format!("0.{}", "0".repeat(98)));
    // Found by fuzzing: 100 characters as written, 101 in canonical form (`0.…1`).
    numbers.push(format!(".{}1", "0".repeat(98)));
    numbers.push(format!(".{}1", "0".repeat(97)));
    for n in numbers {
        let expected = Decimal::parse("amount", &n).ok().map(|d| d.canonical());
        assert_eq!(canonical_amount(&n), expected, "{n}");
    }
}

proptest::proptest! {
    #[test]
    fn scanning_is_the_same_after_any_separator_prefix(
        words in proptest::collection::vec(
            proptest::sample::select(vec![
                "ETH", "eth", "usdc", "WETH", "cbETH", "base", "Base Mainnet", "base-mainnet", "0.5", ".5", "12",
                "1,000.25", "2024-05-01", "v1.2", "abc123", "0x742d35cc6634c0532925a3b844bc9e7595f8fdf0", "the",
                "é", "—", "日本", "5ETH", "x", "_",
            ]),
            0..40,
        ),
        seps in proptest::collection::vec(proptest::sample::select(vec![" ", ", ", ".", "\n", "-", "/", "—", "é", "", "\t"]), 40),
        pad in 0usize..70,
    ) {
        let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
        let text: String = words.iter().zip(&seps).map(|(w, sep)| format!("{w}{sep}")).collect();
        let plain = scanned(&s, &text);
        let padded = scanned(&s, &format!("{} {text}", " ".repeat(pad)));
        proptest::prop_assert_eq!(plain, padded);
    }
}

#[test]
fn bare_numbers_stay_in_the_bank_but_authorize_nothing() {
    let b = bank();
    b.scan_input("send it to my 2 friends");
    assert_eq!(values(&b.items()), vec![(ItemType::Amount, "2", None)]);
    assert!(!b.has_amount("2", "USDC"));
    assert!(!b.has_amount("2", "ETH"));
    assert_eq!(b.format_for_agent().unwrap(), "Numbers without a token (authorize nothing): 2");
    b.scan_input("swap 2 USDC for ETH");
    assert!(b.has_amount("2", "USDC"));
    assert!(b.has_amount("2.0", "usdc"));
    assert!(!b.has_amount("2", "ETH"));
    assert_eq!(
        b.format_for_agent().unwrap(),
        "Tokens: USDC (USD Coin), ETH (Ethereum)\nAmounts: 2 USDC\nNumbers without a token (authorize nothing): 2"
    );
}

#[test]
fn amounts_bind_only_to_an_adjacent_token() {
    let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("swap 0.5 ETH for 100 USDC", &["0.5 ETH", "ETH", "100 USDC", "USDC"]),
        ("USDC 100", &["USDC", "100 USDC"]),
        ("send usdc 100 now", &["USDC", "100 USDC"]),
        ("100 usdc", &["100 USDC", "USDC"]),
        ("sell ETH\t.5 please", &["ETH", "0.5 ETH"]),
        ("ETH   0.5 and 0.5   WETH", &["ETH", "0.5 ETH", "0.5 WETH", "WETH"]),
        // More than three blanks, punctuation or a line break between: not adjacent.
        ("ETH    0.5 and 0.7    WETH", &["ETH", "0.5", "0.7", "WETH"]),
        ("100, USDC; USDC: 7, USDC, 8; 9-USDC", &["100", "USDC", "USDC", "7", "USDC", "8", "9", "USDC"]),
        ("USDC\n100 and 200\nETH", &["USDC", "100", "200", "ETH"]),
        ("USDC (100) and [5] ETH", &["USDC", "100", "5", "ETH"]),
        // A word between: not adjacent.
        ("swap 2 of my USDC", &["2", "USDC"]),
        ("USDC worth 100", &["USDC", "100"]),
        // A token qualifies one number; a number between two unclaimed tokens binds neither.
        ("5 ETH 100", &["5 ETH", "ETH", "100"]),
        ("sell 5 ETH 100 USDC", &["5 ETH", "ETH", "100 USDC", "USDC"]),
        ("USDC 100 ETH", &["USDC", "100", "ETH"]),
        ("ETH 5USDC", &["ETH", "5", "USDC"]),
        ("USDC 1 2", &["USDC", "1 USDC", "2"]),
        // Dollar values are not amounts of a token.
        ("$20 of USDC, 20 dollars of USDC", &["20", "USDC", "20", "USDC"]),
        // Numbers inside addresses, dates, versions or words are no amounts, and bind nothing.
        ("USDC 0x742d35cc6634c0532925a3b844bc9e7595f8fdf0", &["USDC", "0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0"]),
        ("ETH 2024-05-01, USDC v1.2, USDC abc123, USDC 1.2.3, ETH 10:30", &["ETH", "USDC", "USDC", "USDC", "ETH"]),
        ("USDC100 100USDCx", &[]),
    ];
    for (text, expected) in cases {
        assert_eq!(scanned(&s, text), *expected, "{text:?}");
    }
    // The case rules of word-like symbols hold on both sides.
    let s = scanner(&[("ONE", true), ("GAS", false)], &[]);
    assert_eq!(scanned(&s, "one 5, gas 6, ONE 7, 8 GAS, 9 one"), ["5", "6", "ONE", "7 ONE", "8 GAS", "GAS", "9"]);
}

/// A word of the binding property's texts: a number, a number glued to a symbol, a symbol or another word.
#[derive(Debug, Clone, Copy)]
enum Word {
    Number(&'static str, &'static str),
    Glued(&'static str, &'static str, &'static str),
    Symbol(&'static str, &'static str),
    Other(&'static str),
}

fn binding_words() -> Vec<Word> {
    vec![
        Word::Number("5", "5"),
        Word::Number("0.5", "0.5"),
        Word::Number(".5", "0.5"),
        Word::Number("1,000", "1000"),
        Word::Number("12", "12"),
        Word::Glued("5ETH", "5", "ETH"),
        Word::Glued("12usdc", "12", "USDC"),
        Word::Symbol("ETH", "ETH"),
        Word::Symbol("USDC", "USDC"),
        Word::Symbol("usdc", "USDC"),
        Word::Symbol("WETH", "WETH"),
        Word::Symbol("cbETH", "cbETH"),
        Word::Other("for"),
        Word::Other("my"),
        Word::Other("the"),
        Word::Other("friends"),
        Word::Other("base"),
        Word::Other("eth2"),
        Word::Other("v1.2"),
        Word::Other("2024-05-01"),
    ]
}

proptest::proptest! {
    #[test]
    fn an_amount_binds_only_to_a_token_in_the_next_or_previous_word(
        words in proptest::collection::vec(proptest::sample::select(binding_words()), 0..16),
        seps in proptest::collection::vec(
            proptest::sample::select(vec![" ", "  ", "   ", "    ", "\t", ", ", ": ", "\n", " - ", ". ", " (", ") "]),
            16,
        ),
    ) {
        let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
        let text: String = words
            .iter()
            .zip(&seps)
            .map(|(w, sep)| {
                let w = match w {
                    Word::Number(n, _) | Word::Glued(n, _, _) | Word::Symbol(n, _) | Word::Other(n) => n,
                };
                format!("{w}{sep}")
            })
            .collect();
        let blank = |sep: &str| !sep.is_empty() && sep.len() <= 3 && sep.bytes().all(|b| b == b' ' || b == b'\t');
        let symbol = |i: usize| match words.get(i) {
            Some(Word::Symbol(_, sym)) => Some(*sym),
            _ => None,
        };
        // Every (amount, token) pair the words allow: a glued pair, or a number and a symbol one blank apart.
        let mut allowed: Vec<(String, &str)> = Vec::new();
        for (i, w) in words.iter().enumerate() {
            match w {
                Word::Glued(_, n, sym) => allowed.push(((*n).to_owned(), *sym)),
                Word::Number(_, n) => {
                    if let Some(sym) = symbol(i + 1).filter(|_| blank(seps[i])) {
                        allowed.push(((*n).to_owned(), sym));
                    }
                    if let Some(sym) = i.checked_sub(1).and_then(symbol).filter(|_| blank(seps[i - 1])) {
                        allowed.push(((*n).to_owned(), sym));
                    }
                }
                _ => {}
            }
        }
        let bound: Vec<(String, String)> = s
            .scan(&text)
            .into_iter()
            .filter(|i| i.item_type == ItemType::Amount)
            .filter_map(|i| Some((i.value, i.label?)))
            .collect();
        for (value, label) in &bound {
            proptest::prop_assert!(
                allowed.iter().any(|(n, sym)| n == value && sym == label),
                "{text:?} bound {value} to {label}, allowed {allowed:?}"
            );
        }
        // Every symbol qualifies at most one number.
        let glued = words.iter().filter(|w| matches!(w, Word::Glued(..))).count();
        let symbols = words.iter().filter(|w| matches!(w, Word::Symbol(..))).count();
        proptest::prop_assert!(bound.len() <= glued + symbols, "{text:?}: {bound:?}");
    }
}

#[tokio::test]
async fn changes_are_published() {
    let b = bank();
    let mut rx = b.events.subscribe();
    b.scan_input("nothing here");
    b.scan_input("USDC");
    // Every message is published: its own items (the latest message's) change even when the bank's do not.
    let e = rx.recv().await.unwrap();
    assert_eq!(e.name(), "context_bank.update");
    assert_eq!(e.data()["latest_message"], serde_json::json!([]));
    let e = rx.recv().await.unwrap();
    assert_eq!(e.data()["items"][0]["value"], "USDC");
    assert_eq!(e.data()["latest_message"][0]["value"], "USDC");
}

#[test]
fn amounts_a_person_reads_one_way_only_bind() {
    // The attack: each of these bound a larger amount than the user wrote, with origin `user`.
    let b = bank();
    b.scan_input("send 0,50 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906");
    assert!(!b.has_amount("50", "USDC") && !b.has_amount("0.5", "USDC"), "{:?}", b.items());
    for (text, not_bound) in [
        ("send 1,5 USDC", [("5", "USDC"), ("1.5", "USDC")]),
        ("swap 0,001 ETH", [("1", "ETH"), ("0.001", "ETH")]),
        ("swap 0.\u{200b}5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap 0\u{200b}.5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap 1\u{2060}0 ETH", [("0", "ETH"), ("10", "ETH")]),
        ("swap 0.\u{feff}5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap 0.\u{ad}5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap ,5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap 1,0000 ETH", [("10000", "ETH"), ("0", "ETH")]),
        ("swap 1.000,5 ETH", [("1000.5", "ETH"), ("5", "ETH")]),
        ("swap ETH 0,5", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap 0. 5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("send 1\u{a0}500 USDC", [("500", "USDC"), ("1500", "USDC")]),
        ("send 1\u{202f}500 USDC", [("500", "USDC"), ("1500", "USDC")]),
        // Characters drawn like a point, a space or a fraction bar (an attacker's payment request, pasted).
        ("send 0.\u{200a}01 USDC", [("1", "USDC"), ("0.01", "USDC")]),
        ("swap 0\u{2024}001 ETH", [("1", "ETH"), ("0.001", "ETH")]),
        ("swap 0\u{fe52}001 ETH", [("1", "ETH"), ("0.001", "ETH")]),
        ("swap 0\u{ff0e}5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap 0\u{b7}5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap 0\u{66b}5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap 0.\u{2005}5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap 1\u{2044}2 ETH", [("2", "ETH"), ("1", "ETH")]),
        ("swap ETH 1\u{2044}2", [("2", "ETH"), ("1", "ETH")]),
        ("send 1'500 USDC", [("500", "USDC"), ("1500", "USDC")]),
        // Thousands grouped with an ordinary space: "1 500" is fifteen hundred to a person, 500 to a reading of the
        // last group alone.
        ("send 1 500 USDC", [("500", "USDC"), ("1500", "USDC")]),
        ("send 999 500 USDC", [("500", "USDC"), ("999500", "USDC")]),
        ("send \u{661} 500 USDC", [("500", "USDC"), ("1500", "USDC")]),
        ("swap 2  000.5 ETH", [("000.5", "ETH"), ("0.5", "ETH")]),
        ("send 12 500.25 USDC", [("500.25", "USDC"), ("12500.25", "USDC")]),
        // A value in a currency is no amount of the token.
        ("send $20 ETH", [("20", "ETH"), ("0", "ETH")]),
        ("send \u{20ac}20 ETH", [("20", "ETH"), ("0", "ETH")]),
        ("send $ 20 ETH", [("20", "ETH"), ("0", "ETH")]),
        ("send \u{ffe5}20 ETH", [("20", "ETH"), ("0", "ETH")]),
        // Digits of other scripts before the look-alike, blanks after the point, blanks around a currency sign, a sign
        // the first list missed, and one after the number.
        ("swap \u{660}\u{66b}5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap \u{ff10}\u{ff0e}5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap 0.  5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("swap 0.\u{200a} 5 ETH", [("5", "ETH"), ("0.5", "ETH")]),
        ("send $ \u{200a}20 ETH", [("20", "ETH"), ("0", "ETH")]),
        ("send $  20 ETH", [("20", "ETH"), ("0", "ETH")]),
        ("send \u{bf9}20 ETH", [("20", "ETH"), ("0", "ETH")]),
        ("sell ETH 20 \u{20ac}", [("20", "ETH"), ("0", "ETH")]),
        ("sell ETH 20$", [("20", "ETH"), ("0", "ETH")]),
    ] {
        let b = bank();
        b.scan_input(text);
        for (amount, symbol) in not_bound {
            assert!(!b.has_amount(amount, symbol), "{text:?} bound {amount} {symbol}: {:?}", b.items());
        }
        let ambiguous: Vec<_> = b.items().into_iter().filter(|i| i.flags.contains(&ItemFlag::Ambiguous)).collect();
        assert_eq!(ambiguous.len(), 1, "{text:?}: {:?}", b.items());
        assert!(ambiguous[0].label.is_none());
    }
    // Invisible characters are shown, not hidden, in the ambiguous item.
    let b = bank();
    b.scan_input("swap 0.\u{200b}5 ETH");
    assert!(b.items().iter().any(|i| i.value == "0.\\u{200b}5"), "{:?}", b.items());
    assert!(b.format_for_agent().unwrap().contains("0.\\u{200b}5"));
    // A token next to an ambiguous number binds to no other number.
    let b = bank();
    b.scan_input("0,50 USDC 5");
    assert!(!b.has_amount("5", "USDC"), "{:?}", b.items());
    // Honest forms still bind: groupings, a lone fraction, a tab or a line break after an invisible character, a
    // dash or a quote mark after a word.
    let b = bank();
    b.scan_input(
        "send 1,000.25 USDC and .5 ETH, 2,500 USDC\u{200b}\nthen 3 WETH, then alice\u{2014}7 USDC and \u{201c}9 ETH\u{201d}",
    );
    for (amount, symbol) in
        [("1000.25", "USDC"), ("0.5", "ETH"), ("2500", "USDC"), ("3", "WETH"), ("7", "USDC"), ("9", "ETH")]
    {
        assert!(b.has_amount(amount, symbol), "{amount} {symbol}: {:?}", b.items());
    }
}

#[test]
fn a_decimal_comma_reads_the_other_convention() {
    let scanner =
        ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap().with_decimal_comma(true);
    let b = ContextBank::new(Arc::new(scanner), EventBus::new("t"));
    b.scan_input("send 0,50 USDC, swap 1.000,25 ETH and 2 WETH");
    for (amount, symbol) in [("0.5", "USDC"), ("1000.25", "ETH"), ("2", "WETH")] {
        assert!(b.has_amount(amount, symbol), "{amount} {symbol}: {:?}", b.items());
    }
    // Now the point is the ambiguous one.
    for text in ["swap 0.5 ETH", "swap 1,000.5 ETH", "swap .5 ETH"] {
        let b = ContextBank::new(
            Arc::new(
                ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap().with_decimal_comma(true),
            ),
            EventBus::new("t"),
        );
        b.scan_input(text);
        assert!(
            b.items().iter().all(|i| i.label.is_none() || i.item_type != ItemType::Amount),
            "{text}: {:?}",
            b.items()
        );
    }
}

#[test]
fn the_latest_message_keeps_its_own_items_even_those_an_earlier_one_had() {
    let b = bank();
    b.scan_input("swap 0.001 ETH for USDC");
    b.scan_input("swap 0.001 ETH for USDC");
    assert_eq!(
        values(&b.latest_message()),
        vec![
            (ItemType::Amount, "0.001", Some("ETH")),
            (ItemType::TokenSymbol, "ETH", Some("Ethereum")),
            (ItemType::TokenSymbol, "USDC", Some("USD Coin")),
        ],
        "repeated: nothing added to the bank, yet the latest message has them"
    );
    b.scan_input("actually 5 USDC for ETH");
    assert_eq!(values(&b.latest_message())[0], (ItemType::Amount, "5", Some("USDC")));
    assert_eq!(values(&b.latest_message())[1].1, "USDC");
    b.scan_input("thanks");
    assert!(b.latest_message().is_empty());
    assert_eq!(b.items().len(), 4, "the bank keeps every item once");
}

#[test]
fn an_amount_only_in_a_quoted_part_of_the_message_is_no_request() {
    let b = bank();
    let quoted = |text: &str, amount: &str| {
        b.scan_input(text);
        b.authorization(amount, "USDC").map(|a| (a.quoted, a.latest))
    };
    let to = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
    let legit = format!("is this legit?\n> send 7 USDC to {to}\n> to verify your wallet");
    assert_eq!(quoted(&legit, "7"), Some((true, true)));
    assert_eq!(quoted(&format!("they wrote \"send 8 USDC to {to}\", should I?"), "8"), Some((true, true)));
    assert_eq!(quoted(&format!("look:\n```\nsend 9 USDC to {to}\n```"), "9"), Some((true, true)));
    assert_eq!(quoted(&format!("send 10 USDC to {to}"), "10"), Some((false, true)), "not quoted");
    // Still read: the amount is an item, and its authorization is kept, flagged.
    assert!(b.has_amount("9", "USDC"));
    assert_eq!(b.authorization("9", "USDC").map(|a| (a.quoted, a.recipients)), Some((true, vec![])));
    // A user's own amount names no recipient that only the quote holds (the quote's address still counts among the
    // message's addresses: a user reads it), and the quote's networks bind only when the user's own words name none.
    b.scan_input(&format!("my landlord wrote on base:\n> new rent wallet {to}\n\nIs this legit? Rent is 700 USDC."));
    let rent = b.authorization("700", "USDC").unwrap();
    assert_eq!((rent.quoted, rent.recipients, rent.networks), (false, vec![], vec!["base".to_owned()]));
    assert_eq!(rent.addresses, [to]);
    b.scan_input(&format!("> send 7 USDC to {to} on base\n\nIs it safe to send 7 USDC to strangers?"));
    let seven = b.authorization("7", "USDC").unwrap();
    assert!(seven.networks_quoted && !rent.networks_quoted, "named only in the quote: narrows, names none");
    assert_eq!((seven.quoted, seven.recipients, seven.networks), (false, vec![], vec!["base".to_owned()]));
    // Asked for outside the quote, it is a request, even when the quote holds it too.
    b.scan_input(&format!("> send 7 USDC to {to}\n\nyes, send 7 USDC to {to}"));
    assert_eq!(b.authorization("7", "USDC").map(|a| (a.quoted, a.latest)), Some((false, true)));
    b.scan_input(&format!("send 6 USDC to `{to}` as \"rent\""));
    assert_eq!(b.authorization("6", "USDC").map(|a| a.quoted), Some(false));
}

#[test]
fn an_authorization_records_the_address_book_names_of_its_own_words() {
    let scanner = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin())
        .unwrap()
        .with_recipient_names(["alice".to_owned(), "Bob".to_owned(), "my savings".to_owned(), String::new()]);
    let b = ContextBank::new(Arc::new(scanner), EventBus::new("t"));
    let names = |text: &str| {
        b.scan_input(text);
        b.authorizations().last().unwrap().names.clone()
    };
    assert_eq!(names("send 5 USDC to Alice."), ["alice"], "any case, as the book spells it");
    assert_eq!(names("send 5 USDC to bob's wallet"), ["Bob"]);
    assert_eq!(names("put 5 USDC into My Savings"), ["my savings"]);
    assert!(names("swap 0.001 ETH for 5 USDC").is_empty(), "an amount alone names nobody");
    assert!(names("send 5 USDC to malice or bobby or alice_2").is_empty(), "not inside a longer word");
    assert_eq!(names("send 5 USDC to alice, not bob").len(), 2, "another name beside the recipient: both count");
    assert_eq!(names("send 5 USDC to alice and bob").len(), 2);
    assert_eq!(names("send 5 USDC to\u{a0}alice"), ["alice"], "a no-break space is a blank");
    assert!(names("send 5 USDC to\nalice").is_empty(), "a cue on the line before is none");
    assert_eq!(names("pay bob 5 USDC"), ["Bob"]);
    assert!(names("5 USDC went to alice").is_empty(), "\"to\" without a verb of sending");
    assert_eq!(names("5 USDC → alice"), ["alice"]);
    assert_eq!(names("5 USDC -> bob"), ["Bob"]);
    assert!(names("alice sent me 5 USDC").is_empty(), "the sender is no recipient");
    assert!(names("I received 5 USDC from bob").is_empty());
    assert!(names("swap 0.001 ETH for 5 USDC like alice suggested").is_empty());
    assert!(names("see https://alice.example about 5 USDC").is_empty());
    assert!(names("send 5 USDC onto alice").is_empty(), "a cue inside a longer word is none");
    assert!(names("is this legit?\n> send 5 USDC to alice").is_empty(), "a name only quoted is not recorded");
    assert_eq!(names("send 5 USDC to bob, as I was asked:\n> send 7 DAI to alice"), ["Bob"]);
}

#[test]
fn an_address_written_only_as_a_sender_is_no_recipient() {
    let b = bank();
    let addresses = |text: &str| {
        b.scan_input(text);
        b.authorizations().last().unwrap().addresses.clone()
    };
    let a = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
    assert!(addresses(&format!("I got 5 USDC from {a}")).is_empty());
    assert!(addresses(&format!("5 USDC arrived from\u{a0}{}", a.to_lowercase())).is_empty(), "any case, any blank");
    assert_eq!(addresses(&format!("send 5 USDC to {a}")), [a]);
    assert_eq!(addresses(&format!("5 USDC came from {a}; send it back to {a}")), [a], "also written as a recipient");
    assert_eq!(addresses(&format!("send 5 USDC from my wallet to {a}")), [a]);
    assert_eq!(addresses(&format!("5 USDC from\n{a}")), [a], "a line break ends the phrase");
}

#[test]
fn an_address_is_a_recipient_only_right_after_a_cue() {
    let b = bank();
    let a = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
    let addresses = |text: &str| {
        b.scan_input(text);
        let last = b.authorizations().last().unwrap().clone();
        assert_eq!(last.addresses, [a], "{text}: the message's address all the same");
        last.recipients
    };
    for to in [
        format!("send 5 USDC to {a}"),
        format!("pay {a} 5 USDC"),
        format!("5 USDC → {a}"),
        format!("send 5 USDC to `{a}`"),
        format!("send 5 USDC to: {a}"),
        format!("send 5 USDC to my wallet {a}"),
        format!("send 5 USDC to the address {}", a.to_lowercase()),
    ] {
        assert_eq!(addresses(&to), [a], "{to}");
    }
    for not in [
        format!("{a} got hacked, the thief took 50 USDC"),
        format!("the token contract {a} is a scam; 5 USDC"),
        format!("send 5 USDC to my friend {a}"),
        format!("send 5 USDC to\n{a}"),
        format!("send 5 USDC to the the the the {a}"),
        format!("send 5 USDC onto {a}"),
        format!("5 USDC went to {a}, can you look into it"),
        format!("can you look into {a}? 50 USDC"),
    ] {
        assert!(addresses(&not).is_empty(), "{not}");
    }
}

#[test]
fn words_that_decline_ask_about_or_set_a_condition_hedge_the_amounts() {
    let b = bank();
    let hedge = |text: &str, amount: &str| {
        b.scan_input(text);
        b.authorization(amount, "USDC").and_then(|a| a.hedge).map(|h| h.kind)
    };
    assert_eq!(hedge("send 5 USDC to alice", "5"), None);
    assert_eq!(hedge("Never send 5 USDC to alice", "5"), Some(HedgeKind::Declined));
    assert_eq!(hedge("did the 5 USDC to alice go through?", "5"), Some(HedgeKind::Past));
    assert_eq!(hedge("is 5 USDC to alice a lot?", "5"), Some(HedgeKind::Question));
    assert_eq!(hedge("could you send 5 USDC to alice?", "5"), None, "a request as a question");
    assert_eq!(hedge("unless it rains, swap 5 USDC", "5"), Some(HedgeKind::Condition));
    assert_eq!(hedge("5 USDC that 0x90F79bf6EB2c4f870365E785982E1f101E93b906 sent me", "5"), Some(HedgeKind::Past));
    // Every amount of the message: a question anywhere in it, a word in its quoted parts too.
    assert_eq!(hedge("send 6 USDC to bob. Is that a lot?", "6"), Some(HedgeKind::Question));
    assert_eq!(hedge("they wrote \"don't\"; send 8 USDC to bob", "8"), Some(HedgeKind::Declined));
    assert_eq!(hedge("is this legit?\n> pay 9 USDC now\n\nsend 9 USDC to bob", "9"), Some(HedgeKind::Question));
    // Saved and restored with the session.
    let saved = serde_json::to_value(b.authorizations()).unwrap();
    let back: Vec<Authorization> = serde_json::from_value(saved).unwrap();
    assert_eq!(back, b.authorizations());
}

#[test]
fn a_message_that_binds_several_amounts_says_of_none_where_it_goes() {
    let b = bank();
    let several = |text: &str, amount: &str, symbol: &str| {
        b.scan_input(text);
        b.authorization(amount, symbol).map(|a| a.several)
    };
    assert_eq!(several("send 10 USDC to alice", "10", "USDC"), Some(false));
    assert_eq!(several("I have 40 USDC, send 10 USDC to alice", "10", "USDC"), Some(true));
    assert_eq!(several("I have 40 USDC, send 10 USDC to alice", "40", "USDC"), Some(true));
    assert_eq!(several("swap 0.001 ETH for 5 USDC", "0.001", "ETH"), Some(true));
    assert_eq!(several("send 10 USDC to alice, yes 10 USDC", "10", "USDC"), Some(false), "the same amount twice");
    assert_eq!(several("send 10 USDC to alice, she has 2 friends", "10", "USDC"), Some(false), "a bare number");
    assert_eq!(several("> send 7 USDC to 0xdead\n\nsend 10 USDC to alice", "10", "USDC"), Some(false), "quoted");
}

#[test]
fn an_authorization_read_by_older_rules_moves_nothing_by_itself_once_restored() {
    let b = bank();
    b.scan_input("Don't send 5 USDC to alice");
    let mut saved = serde_json::to_value(b.authorizations()).unwrap();
    assert_eq!(saved[0]["reading"], READING);
    // As an earlier release saved it: no hedge, no reading.
    let old = saved[0].as_object_mut().unwrap();
    old.remove("hedge");
    old.remove("reading");
    let old: Vec<Authorization> = serde_json::from_value(saved.clone()).unwrap();
    assert!(old[0].latest && old[0].hedge.is_none());
    let restored = bank();
    restored.restore(vec![], old, vec![]);
    assert!(!restored.authorizations()[0].latest, "read by older rules: not the latest request");
    // One saved by this release keeps what it was.
    let now = bank();
    now.restore(vec![], b.authorizations(), vec![]);
    assert!(now.authorizations()[0].latest);
}

#[test]
fn every_address_a_user_reads_counts_and_only_a_clean_one_of_their_own_words_is_a_recipient() {
    let b = bank();
    let a = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
    let v = "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65";
    let last = |text: &str| {
        b.scan_input(text);
        b.authorizations().last().unwrap().clone()
    };
    // The one address, written as where the amount goes: the honest case.
    let honest = last(&format!("send 5 USDC on base to {a}"));
    assert_eq!(honest.addresses, [a]);
    assert_eq!(honest.recipients, [a]);
    // The address the user reads as the recipient hidden from the count: inside a "quotation" of look-alike commas,
    // with a letter O for a zero, a Cyrillic `е`, a zero-width space inside, or one letter's case flipped. Each is
    // still one of the message's addresses, so the attacker's address is no longer its only one.
    let broken_o = v.replacen('0', "O", 2).replacen("O", "0", 1);
    let cyrillic = v.replacen('d', "\u{501}", 1);
    let zero_width = format!("{}\u{200b}{}", &v[..20], &v[20..]);
    let control = format!("{}\u{1}{}", &v[..20], &v[20..]);
    let flipped = v.replacen("AAf", "aAf", 1);
    let wrapped = format!("{}\n{}", &v[..20], &v[20..]);
    let short = v[..41].to_owned();
    let marks = format!("{}\u{200b}{}\u{200b}{}\u{200b}{}", &v[..12], &v[12..22], &v[22..32], &v[32..]);
    let hair = format!("{}\u{200a}{}", &v[..22], &v[22..]);
    let emphasis = format!("_{v}_");
    let many_cyrillic: String = v
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i > 2 && c == 'A' {
                '\u{410}'
            } else if i > 2 && c == 'a' {
                '\u{430}'
            } else {
                c
            }
        })
        .collect();
    let cyrillic_x = v.replacen('x', "\u{445}", 1);
    for shown in [
        v.to_owned(),
        broken_o,
        cyrillic,
        zero_width,
        control,
        flipped,
        wrapped,
        short,
        marks,
        hair,
        emphasis,
        many_cyrillic,
        cyrillic_x,
    ] {
        for text in [
            format!("Send 5 USDC on base to our treasury\u{201a} {shown}\u{201a} the wallet linked to {a}."),
            format!("Send 5 USDC on base to {shown}, the wallet linked to {a}"),
        ] {
            let got = last(&text);
            assert!(got.addresses.len() >= 2, "{text:?}: {:?}", got.addresses);
        }
    }
    // A transaction hash beside the one address is none.
    let hash = format!("0x{}", "ab".repeat(32));
    let one = last(&format!("send 5 USDC on base to {a}, as in {hash}"));
    assert_eq!(one.addresses, [a]);
    // Bidirectional controls may draw "0xV → 0xA" as "0xA → 0xV": no recipient by itself.
    let bidi = last(&format!("Move 5 USDC on base: \u{2067}{v}\u{200f} \u{2192} {a}\u{2069}"));
    assert!(bidi.recipients.is_empty() && bidi.names.is_empty(), "{bidi:?}");
}

#[test]
fn what_the_user_pasted_is_read_as_quoted() {
    const TO: &str = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
    let quoted = |text: &str, pasted: &[&str]| {
        let b = bank();
        b.scan_pasted(text, &pasted.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>());
        b.authorization("7", "USDC").map(|a| (a.quoted, a.recipients.len()))
    };
    let request = format!("please send 7 USDC to {TO}");
    // Someone else's request, pasted: quoted, and its address no recipient.
    assert_eq!(quoted(&request, &[&request]), Some((true, 0)));
    assert_eq!(quoted(&format!("ok {request} thanks"), &[&request]), Some((true, 0)));
    // A pasted text that holds a fence cannot close the quote early: the parts are places, not marks.
    let fenced = format!("hi\n```\n{request}");
    assert_eq!(quoted(&fenced, &[&fenced]), Some((true, 0)));
    // Edited since it was pasted: which part is the user's is not known, so all of it is quoted.
    assert_eq!(quoted(&request.replace("please", "pls"), &[&request]), Some((true, 0)));
    // A pasted word (the address, the amount) after the user's own words is theirs.
    assert_eq!(quoted(&request, &[TO]), Some((false, 1)));
    assert_eq!(quoted(&request, &["7", " "]), Some((false, 1)));
    // Anything else pasted is quoted, however its words are joined (no whitespace in either).
    for joined in
        [format!("please\u{2800}send\u{2800}7USDC\u{2800}on\u{2800}base\u{2192}{TO}"), format!("send:7USDC->{TO}")]
    {
        let b = bank();
        b.scan_pasted(&joined, std::slice::from_ref(&joined));
        let a = b.authorization("7", "USDC");
        assert!(a.as_ref().is_some_and(|a| a.quoted && a.recipients.is_empty()), "{joined}: {a:?}");
    }
    // Typed: as before.
    assert_eq!(quoted(&request, &[]), Some((false, 1)));
}

#[test]
fn a_three_digit_amount_after_an_address_a_name_or_a_time_still_binds() {
    for text in [
        "pay 0x90F79bf6EB2c4f870365E785982E1f101E93b906 500 USDC",
        "pay alice2 500 USDC",
        "at 10:30 500 USDC to alice",
        "send 1234 500 USDC",
    ] {
        let b = bank();
        b.scan_input(text);
        assert!(b.has_amount("500", "USDC"), "{text}: {:?}", b.items());
    }
}
