// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity 0.8.37;

/// @dev The two ERC-20 calls the venue makes.
interface IERC20Minimal {
    function balanceOf(address account) external view returns (uint256);
    function transfer(address to, uint256 value) external returns (bool);
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

/// @title SwapVenue — the devnet's stand-in for 0x's AllowanceHolder
/// @notice Sells one asset for another against the venue's own balances, which are its reserves. Prices follow the
/// constant-product rule (x · y = k) with a 0.3% fee on the amount sold, except that native ether and WETH trade
/// 1:1 without a fee. A pair trades only while the venue holds some of both assets. Native ether is denoted by
/// NATIVE (0xEeee…EEeE).
/// @dev Placed at the AllowanceHolder address with `anvil_setCode`, so no constructor runs and every piece of state
/// starts out zero. A seller of an ERC-20 approves this address, as with the real AllowanceHolder. The venue is
/// funded by sending it ether (`receive`) or tokens (plain transfers); it has no owner.
contract SwapVenue {
    /// @notice Placeholder address for native ether.
    address public constant NATIVE = 0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE;

    /// @notice WETH on Base; the only token that trades 1:1 with native ether.
    address public constant WETH = 0x4200000000000000000000000000000000000006;

    /// @dev Reentrancy lock (slot 0): zero when unlocked, so a venue placed without storage starts unlocked.
    uint256 private _locked;

    /// @notice A sell was executed: `taker` paid `sellAmount` of `sellToken` and `recipient` got `buyAmount` of
    /// `buyToken`.
    event Swap(
        address indexed taker,
        address indexed recipient,
        address sellToken,
        address buyToken,
        uint256 sellAmount,
        uint256 buyAmount
    );

    /// @notice The sell and buy assets are the same.
    error SameToken(address token);
    /// @notice The amount sold is zero.
    error ZeroSellAmount();
    /// @notice The venue holds none of `token`.
    error NoLiquidity(address token);
    /// @notice The amount sold is too small to buy anything.
    error SellAmountTooSmall(uint256 sellAmount);
    /// @notice The venue holds only `reserve` of `token`, less than the `buyAmount` a 1:1 trade needs.
    error InsufficientLiquidity(address token, uint256 reserve, uint256 buyAmount);
    /// @notice The trade would pay `buyAmount`, less than the taker's `minBuyAmount`.
    error InsufficientBuyAmount(uint256 buyAmount, uint256 minBuyAmount);
    /// @notice msg.value must equal the native amount sold, and be zero when an ERC-20 is sold.
    error WrongMsgValue(uint256 expected, uint256 actual);
    /// @notice The recipient is the zero address.
    error ZeroRecipient();
    /// @notice An ERC-20 transfer or transferFrom of `token` returned false or reverted without a reason.
    error TokenTransferFailed(address token);
    /// @notice Sending ether to `recipient` failed.
    error NativeTransferFailed(address recipient, uint256 amount);
    /// @notice `sell` was entered again while running.
    error Reentrancy();

    /// @notice Accepts ether, which becomes part of the native reserve.
    receive() external payable {}

    /// @notice How much of `buyToken` selling `sellAmount` of `sellToken` would pay now.
    /// @dev Reverts with SameToken, ZeroSellAmount, NoLiquidity, SellAmountTooSmall or InsufficientLiquidity.
    function quote(address sellToken, address buyToken, uint256 sellAmount) external view returns (uint256 buyAmount) {
        return _quote(sellToken, buyToken, sellAmount, 0);
    }

    /// @notice Sells `sellAmount` of `sellToken` from the caller and pays the `buyToken` bought to `recipient`.
    /// @dev Selling NATIVE requires msg.value == sellAmount; selling an ERC-20 requires msg.value == 0 and an
    /// allowance for this address of at least `sellAmount`. The price is `quote` as it stood before the call.
    /// @return buyAmount The amount of `buyToken` paid to `recipient`, at least `minBuyAmount`.
    function sell(address sellToken, address buyToken, uint256 sellAmount, uint256 minBuyAmount, address recipient)
        external
        payable
        returns (uint256 buyAmount)
    {
        if (_locked != 0) revert Reentrancy();
        _locked = 1;

        if (recipient == address(0)) revert ZeroRecipient();
        uint256 expectedValue = sellToken == NATIVE ? sellAmount : 0;
        if (msg.value != expectedValue) revert WrongMsgValue(expectedValue, msg.value);

        // The ether sent with this call is already in address(this).balance; price against the reserve before it.
        buyAmount = _quote(sellToken, buyToken, sellAmount, msg.value);
        if (buyAmount < minBuyAmount) revert InsufficientBuyAmount(buyAmount, minBuyAmount);

        if (sellToken != NATIVE) {
            _callToken(sellToken, abi.encodeCall(IERC20Minimal.transferFrom, (msg.sender, address(this), sellAmount)));
        }
        if (buyToken == NATIVE) {
            (bool ok,) = recipient.call{value: buyAmount}("");
            if (!ok) revert NativeTransferFailed(recipient, buyAmount);
        } else {
            _callToken(buyToken, abi.encodeCall(IERC20Minimal.transfer, (recipient, buyAmount)));
        }

        emit Swap(msg.sender, recipient, sellToken, buyToken, sellAmount, buyAmount);
        _locked = 0;
    }

    /// @dev The price rule shared by `quote` and `sell`. `incoming` is ether already received for this sell, which
    /// is not part of the reserve it is priced against.
    function _quote(address sellToken, address buyToken, uint256 sellAmount, uint256 incoming)
        private
        view
        returns (uint256 buyAmount)
    {
        if (sellToken == buyToken) revert SameToken(sellToken);
        if (sellAmount == 0) revert ZeroSellAmount();
        uint256 sellReserve = _reserve(sellToken) - incoming;
        if (sellReserve == 0) revert NoLiquidity(sellToken);
        uint256 buyReserve = _reserve(buyToken);
        if (buyReserve == 0) revert NoLiquidity(buyToken);

        if (_isEtherPair(sellToken, buyToken)) {
            buyAmount = sellAmount;
            if (buyAmount > buyReserve) revert InsufficientLiquidity(buyToken, buyReserve, buyAmount);
        } else {
            // Uniswap V2's getAmountOut: the fee stays in the pool.
            uint256 sellAfterFee = sellAmount * 997;
            buyAmount = (sellAfterFee * buyReserve) / (sellReserve * 1000 + sellAfterFee);
            if (buyAmount == 0) revert SellAmountTooSmall(sellAmount);
        }
    }

    /// @dev Whether the pair is native ether and WETH, in either order.
    function _isEtherPair(address a, address b) private pure returns (bool) {
        return (a == NATIVE && b == WETH) || (a == WETH && b == NATIVE);
    }

    /// @dev The venue's holding of `token` (native ether for NATIVE).
    function _reserve(address token) private view returns (uint256) {
        return token == NATIVE ? address(this).balance : IERC20Minimal(token).balanceOf(address(this));
    }

    /// @dev Calls `token` with `data` and requires it to succeed and to return true or nothing. A token's own
    /// revert reason (e.g. "ERC20: transfer amount exceeds allowance") is passed on unchanged.
    function _callToken(address token, bytes memory data) private {
        (bool ok, bytes memory ret) = token.call(data);
        if (!ok && ret.length != 0) {
            assembly ("memory-safe") {
                revert(add(ret, 0x20), mload(ret))
            }
        }
        if (!ok || (ret.length != 0 && !abi.decode(ret, (bool)))) revert TokenTransferFailed(token);
    }
}
