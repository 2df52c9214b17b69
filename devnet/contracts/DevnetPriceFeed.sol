// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity 0.8.37;

/// @dev The one ERC-20 read the feed makes.
interface IERC20Balance {
    function balanceOf(address account) external view returns (uint256);
}

/// @title DevnetPriceFeed — a Chainlink AggregatorV3-style price feed for the local devnet
/// @notice Answers the read surface of Chainlink's AggregatorV3Interface (`decimals`, `description`, `version`,
/// `latestRoundData`, `getRoundData`) with 8-decimal USD prices, so a price independent of the quoter can be read
/// with eth_call at Base's real feed addresses. What it answers depends on `mode` (slot 0):
///   - 1 (ETH / USD): the swap venue's mid price, computed at read time from its reserves — native ether
///     (`VENUE.balance`, 18 decimals) and USDC (`USDC.balanceOf(VENUE)`, 6 decimals):
///     `answer = usdcReserve · 1e8 · 1e18 / (ethReserve · 1e6)`, rounded down. 100 ETH / 300000 USDC → 3000e8.
///   - 2 (USDC / USD): a fixed 1e8.
///   - 0 (not configured) or anything else: `description`, `latestRoundData` and `getRoundData` revert.
/// A non-zero `answerOverride` (slot 1) is returned as the answer instead in either mode (tests use it to make
/// the feed disagree with the venue; it may be negative). A non-zero `updatedAtOverride` (slot 2) is returned as
/// `startedAt` and `updatedAt` instead of `block.timestamp` (tests use it for a stale feed).
/// @dev Placed with `anvil_setCode`, so no constructor runs: the configuration lives in the three storage slots
/// above, written with `anvil_setStorageAt`, and everything else is a constant. Rounds are not stored: the round id
/// is `block.number`, and `getRoundData(id)` answers any `id` with the current data under that id (there is no
/// history to revert on). `answeredInRound` always equals the round id.
contract DevnetPriceFeed {
    /// @notice `mode` value: ETH / USD from the swap venue's reserves.
    uint256 public constant MODE_VENUE_ETH_USD = 1;

    /// @notice `mode` value: USDC / USD fixed at 1e8.
    uint256 public constant MODE_FIXED_USDC_USD = 2;

    /// @notice The devnet swap venue (at Base's 0x AllowanceHolder address); its balances are its reserves.
    address public constant VENUE = 0x0000000000001fF3684f28c67538d4D072C22734;

    /// @notice USDC on Base (6 decimals).
    address public constant USDC = 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913;

    /// @notice Decimals of every answer.
    uint8 public constant decimals = 8;

    /// @notice Version of the aggregator interface answered (a devnet constant).
    uint256 public constant version = 4;

    /// @dev One US dollar in answer units.
    int256 private constant ONE_USD = 1e8;

    /// @dev ETH/USD scale: 1e8 (answer decimals) · 1e18 (wei per ether) / 1e6 (USDC units per USDC).
    uint256 private constant ETH_USD_SCALE = 1e20;

    /// @notice What the feed answers (slot 0): 0 = not configured, 1 = ETH / USD from the venue, 2 = USDC / USD.
    uint256 public mode;

    /// @notice When non-zero, returned as the answer instead of the mode's price (slot 1).
    int256 public answerOverride;

    /// @notice When non-zero, returned as `startedAt` and `updatedAt` instead of `block.timestamp` (slot 2).
    uint256 public updatedAtOverride;

    /// @notice `mode` is 0: the feed was placed without being configured.
    error NotConfigured();
    /// @notice `mode` holds a value this contract does not know.
    error UnknownMode(uint256 mode);
    /// @notice The venue holds no ether or no USDC, so it has no mid price.
    error NoMidPrice(uint256 ethReserve, uint256 usdcReserve);
    /// @notice The venue's mid price does not fit an int256.
    error AnswerOverflow(uint256 answer);

    /// @notice The feed's pair, as Chainlink writes it: "ETH / USD" or "USDC / USD".
    function description() external view returns (string memory) {
        uint256 m = mode;
        if (m == MODE_VENUE_ETH_USD) return "ETH / USD";
        if (m == MODE_FIXED_USDC_USD) return "USDC / USD";
        if (m == 0) revert NotConfigured();
        revert UnknownMode(m);
    }

    /// @notice The current answer, as round `block.number`.
    function latestRoundData()
        external
        view
        returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
    {
        return _round(uint80(block.number));
    }

    /// @notice The current answer under round id `_roundId` (rounds are not stored; every id gets the latest data).
    function getRoundData(uint80 _roundId)
        external
        view
        returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
    {
        return _round(_roundId);
    }

    /// @dev One round's data under `roundId`.
    function _round(uint80 roundId)
        private
        view
        returns (uint80, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
    {
        answer = _answer();
        updatedAt = updatedAtOverride;
        if (updatedAt == 0) updatedAt = block.timestamp;
        return (roundId, answer, updatedAt, updatedAt, roundId);
    }

    /// @dev The override if set, else the mode's price.
    function _answer() private view returns (int256) {
        uint256 m = mode;
        if (m == 0) revert NotConfigured();
        if (m != MODE_VENUE_ETH_USD && m != MODE_FIXED_USDC_USD) revert UnknownMode(m);
        int256 overridden = answerOverride;
        if (overridden != 0) return overridden;
        if (m == MODE_FIXED_USDC_USD) return ONE_USD;

        uint256 ethReserve = VENUE.balance;
        uint256 usdcReserve = IERC20Balance(USDC).balanceOf(VENUE);
        if (ethReserve == 0 || usdcReserve == 0) revert NoMidPrice(ethReserve, usdcReserve);
        uint256 price = (usdcReserve * ETH_USD_SCALE) / ethReserve;
        if (price > uint256(type(int256).max)) revert AnswerOverflow(price);
        return int256(price);
    }
}
